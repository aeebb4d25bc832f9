"""The gate (issue 47 item 2): two systems scored by one judge on the items they share, a paired difference with a
bootstrap interval, and an exit code a CI job can use. The judge is scripted behind the real LLM path
(tests/scripted.fake_llm); the CLI is the real entry point."""

import json
import re
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from judge_engine import gate
from judge_engine.export import load_judge
from judge_engine.metrics import paired_mean_difference
from scripted import fake_llm

JUDGE = {"method": "direct", "params": {"temperature": 0.0, "max_tokens": 32},
         "aspect": {"name": "quality", "low": 1, "high": 5}, "task": {"task": "summarise"}, "state": {},
         "schema_version": 1}


def quality_reply(messages, params):
    """A scripted judge that reads the quality planted in the output ("... quality 4 ...") and says it; an output
    planted with "no score" gets a reply without one."""
    text = messages[-1]["content"]
    if "no score" in text:
        return "I cannot say."
    found = re.findall(r"quality (\d)", text)
    return json.dumps({"score": int(found[-1])}) if found else json.dumps({"score": 3})


def _rows(n, quality, *, prefix="", groups=4):
    return [{"id": f"{prefix}i{k}", "input": f"source {k // groups}", "output": f"summary {k} quality {quality(k)}",
             "doc": f"d{k // groups}"} for k in range(n)]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def judge_file(tmp_path):
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(JUDGE))
    return path


@pytest.fixture
def scripted(monkeypatch):
    """The CLI's backend replaced by the scripted judge, through the real call path (cache, ledger, concurrency)."""
    from judge_engine import llm as llm_module

    backends = []

    def make(config, **kw):
        llm, backend = fake_llm(quality_reply, store=kw.get("store"))
        backends.append(backend)
        return llm

    monkeypatch.setattr(llm_module, "make_llm", make)
    return backends


def _cli(capsys, *argv):
    from judge_engine.__main__ import main

    code = main(["compare-systems", *map(str, argv), "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_planted_drop_is_worse_and_fails_the_build_with_a_junit_file_that_parses(tmp_path, judge_file, scripted,
                                                                                    capsys):
    base = _jsonl(tmp_path / "base.jsonl", _rows(40, lambda k: 4))
    new = _jsonl(tmp_path / "new.jsonl", _rows(40, lambda k: 2 if k % 4 else 4))  # 30 of 40 items drop by 2
    junit, summary = tmp_path / "gate.xml", tmp_path / "summary.md"
    code, out, err = _cli(capsys, judge_file, new, base, "--id-col", "id", "--fail-if-worse", "--junit", junit,
                          "--summary", summary, "--db", tmp_path / "w.db")
    assert code == 1, err
    assert out.startswith("worse: new - base = -1.500") and "losses 30, ties 10" in out
    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "1" and suite.get("tests") == "1"
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("message").startswith("worse")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "worse" and props["losses"] == "30" and props["n_compared"] == "40"
    assert "FAIL" in summary.read_text()
    # the same files without --fail-if-worse: the verdict is printed, the build is not failed
    code, out, _ = _cli(capsys, judge_file, new, base, "--id-col", "id", "--db", tmp_path / "w.db")
    assert code == 0 and out.startswith("worse:")


def test_two_copies_of_one_system_pass_and_the_junit_case_passes(tmp_path, judge_file, scripted, capsys):
    rows = _rows(30, lambda k: 1 + k % 5)
    base, new = _jsonl(tmp_path / "base.jsonl", rows), _jsonl(tmp_path / "new.jsonl", rows[::-1])  # order differs
    junit = tmp_path / "gate.xml"
    code, out, err = _cli(capsys, judge_file, new, base, "--id-col", "id", "--fail-if-worse", "--junit", junit,
                          "--db", tmp_path / "w.db")
    assert code == 0, err
    assert out.startswith("no resolved difference") and "wins 0, losses 0, ties 30" in out
    suite = ET.parse(junit).getroot()
    assert suite.get("failures") == "0" and suite.find("testcase/failure") is None
    # the base's 30 answers are in the cache: the new file's identical prompts cost no call
    assert len(scripted[-1].calls) == 30


def test_a_planted_gain_is_better_and_a_margin_larger_than_the_drop_passes(tmp_path, judge_file, scripted, capsys):
    base = _jsonl(tmp_path / "base.jsonl", _rows(40, lambda k: 3))
    up = _jsonl(tmp_path / "up.jsonl", _rows(40, lambda k: 4 if k % 2 else 3))
    code, out, _ = _cli(capsys, judge_file, up, base, "--id-col", "id", "--fail-if-worse", "--db", tmp_path / "w.db")
    assert code == 0 and out.startswith("better:") and "wins 20, losses 0" in out
    # new drops by 0.5 on average: significantly worse, but the margin of 1 allows it
    code, out, _ = _cli(capsys, judge_file, base, up, "--id-col", "id", "--fail-if-worse", "--margin", "1",
                        "--db", tmp_path / "w.db")
    assert code == 0 and out.startswith("no resolved difference: new - base = -0.500")


def test_groups_are_resampled_whole_only_with_enough_of_them(tmp_path, judge_file, scripted, capsys):
    base = _jsonl(tmp_path / "base.jsonl", _rows(80, lambda k: 3, groups=4))  # 20 docs
    new = _jsonl(tmp_path / "new.jsonl", _rows(80, lambda k: 2 if k % 3 == 0 else 3, groups=4))
    code, out, _ = _cli(capsys, judge_file, new, base, "--id-col", "id", "--group-col", "doc",
                        "--db", tmp_path / "w.db")
    assert code == 0 and "20 groups resampled" in out
    # 4 docs, and the new system planted 1 point lower everywhere: too few sources for any claim (issue 63: the
    # items of 4 sources resampled failed two equal systems in 17.5% of draws), so "cannot tell", exit 0
    few = _jsonl(tmp_path / "few.jsonl", _rows(80, lambda k: 2, groups=20))
    code, out, _ = _cli(capsys, judge_file, few, _jsonl(tmp_path / "few-base.jsonl", _rows(80, lambda k: 3, groups=20)),
                        "--id-col", "id", "--group-col", "doc", "--fail-if-worse", "--db", tmp_path / "w.db")
    assert code == 0 and out.startswith("cannot tell: new - base = -1.000 (no interval)")
    assert "nothing resampled: 4 source group(s)" in out and "4 source group(s): too few" in out
    # the same files without --group-col: their inputs repeat, so they are grouped by input all the same
    code, out, _ = _cli(capsys, judge_file, few, tmp_path / "few-base.jsonl", "--id-col", "id", "--fail-if-worse",
                        "--db", tmp_path / "w.db")
    assert code == 0 and out.startswith("cannot tell") and "grouped by it (4 sources)" in out
    # told the items are independent, the 80 items are resampled and the drop is found
    code, out, _ = _cli(capsys, judge_file, few, tmp_path / "few-base.jsonl", "--id-col", "id", "--fail-if-worse",
                        "--independent", "--db", tmp_path / "w.db")
    assert code == 1 and out.startswith("worse") and "80 items resampled" in out and "treated as independent" in out


@pytest.mark.parametrize("case", ["one value", "a value per item"])
def test_a_group_column_that_groups_all_or_nothing_is_one_message_and_no_claim(tmp_path, judge_file, scripted, capsys,
                                                                                case):
    rows = _rows(20, lambda k: 3)
    for k, row in enumerate(rows):
        row["doc"] = "d0" if case == "one value" else f"d{k}"
    base, new = _jsonl(tmp_path / "base.jsonl", rows), _jsonl(tmp_path / "new.jsonl", rows)
    code, out, err = _cli(capsys, judge_file, new, base, "--id-col", "id", "--group-col", "doc", "--fail-if-worse",
                          "--db", tmp_path / "w.db")
    expected = "one value for all 20 items" if case == "one value" else "a different value for each of the 20 items"
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and expected in err, err
    assert out == "" and all(not b.calls for b in scripted)


def test_no_interval_is_cannot_tell_in_every_summary():
    def system(name, scores, groups):
        return gate.SystemScores(name, "j", "quality", tuple(gate.ScoredItem(f"i{k}", s, g)
                                                            for k, (s, g) in enumerate(zip(scores, groups))))

    two_sources = [f"d{k // 8}" for k in range(16)]
    result = gate.compare_scores(system("new", [1.0] * 16, two_sources), system("base", [5.0] * 16, two_sources))
    assert result.verdict == "cannot tell" and not result.worse and result.resampled == "nothing"
    assert "cannot tell (no claim)" in gate.summary_markdown(result)
    assert ET.fromstring(gate.junit_xml(result)).get("failures") == "0"
    pairs = gate.compare_scores(system("new", [1.0] * 3, ["a", "b", "c"]), system("base", [5.0] * 3, ["a", "b", "c"]))
    assert pairs.verdict == "cannot tell" and "too few for an interval" in pairs.notes[0]


def test_source_groups_groups_repeated_inputs_and_keeps_a_group_column():
    from judge_engine.records import Sample

    def sample(k, source, group=None):
        return Sample(id=f"i{k}", input=source, output=f"out {k}", group_id=group or f"i{k}")

    by_input = gate.source_groups([sample(k, f"article {k // 3}") for k in range(9)])
    assert len({s.group_id for s in by_input}) == 3 and all(s.group_id.startswith("input ") for s in by_input)
    distinct = [sample(k, f"article {k}") for k in range(9)]
    assert gate.source_groups(distinct) == distinct  # nothing repeats: every item its own source
    column = [sample(k, "same article", group=f"doc{k % 2}") for k in range(6)]
    assert gate.source_groups(column) == column  # a group column the user gave is kept


def test_missing_scores_are_counted_and_explained_never_numbers(tmp_path, judge_file, scripted, capsys):
    base = _rows(20, lambda k: 3)
    new = _rows(20, lambda k: 3)
    for k in (0, 1, 2):
        new[k]["output"] = "no score"
    code, out, _ = _cli(capsys, judge_file, _jsonl(tmp_path / "new.jsonl", new),
                        _jsonl(tmp_path / "base.jsonl", base + _rows(2, lambda k: 3, prefix="extra-")),
                        "--id-col", "id", "--json", "--db", tmp_path / "w.db")
    result = json.loads(out)
    assert code == 0 and result["missing_new"] == 3 and result["missing_base"] == 0
    assert result["n_compared"] == 17 and result["n_shared"] == 20 and result["only_base"] == 2
    assert result["diff"] == pytest.approx(0.0)
    missing = [i for i in result["items"] if i["outcome"] == "missing"]
    assert len(missing) == 3 and all(i["new"] is None and i["diff"] is None for i in missing)
    assert result["missing_reasons"][0][0] == "new" and result["missing_reasons"][0][2] == 3


@pytest.mark.parametrize("case", ["no shared id", "empty file", "header only", "missing file", "bad judge",
                                  "no such column", "negative margin", "junit folder missing"])
def test_bad_input_is_one_line_and_exit_2_before_any_call(tmp_path, judge_file, scripted, capsys, case):
    base = _jsonl(tmp_path / "base.jsonl", _rows(10, lambda k: 3))
    new = _jsonl(tmp_path / "new.jsonl", _rows(10, lambda k: 3))
    args = [judge_file, new, base, "--id-col", "id"]
    if case == "no shared id":
        args[1] = _jsonl(tmp_path / "other.jsonl", _rows(10, lambda k: 3, prefix="x-"))
    elif case == "empty file":
        args[1] = tmp_path / "empty.jsonl"
        args[1].write_text("")
    elif case == "header only":
        args[2] = tmp_path / "header.csv"
        args[2].write_text("id,input,output\n")
    elif case == "missing file":
        args[2] = tmp_path / "nowhere.jsonl"
    elif case == "bad judge":
        args[0] = tmp_path / "judge-bad.json"
        args[0].write_text('{"hello": 1}')
    elif case == "no such column":
        args += ["--group-col", "source_doc"]
    elif case == "negative margin":
        args += ["--margin", "-1"]
    else:
        args += ["--junit", tmp_path / "no" / "such" / "gate.xml"]
    code, out, err = _cli(capsys, *args, "--db", tmp_path / "w.db")
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    assert out == "" and all(not b.calls for b in scripted)


def test_hostile_ids_and_replies_are_escaped_in_the_summary_and_the_junit_file():
    evil = "<script>alert(1)</script>|**x**](http://e.vil)\x00\x1b[31m"
    new = gate.SystemScores("new", "j", "quality", tuple(
        gate.ScoredItem(f"{evil}{k}", None if k == 3 else 1.0 if k < 7 else 3.0, f"{evil}{k}",
                        "" if k != 3 else f"reply said {evil}") for k in range(10)))
    base = gate.SystemScores("base", "j", "quality", tuple(gate.ScoredItem(f"{evil}{k}", 3.0, f"{evil}{k}")
                                                           for k in range(10)))
    result = gate.compare_scores(new, base)
    md = gate.summary_markdown(result)
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "](http" not in md and "\\*\\*x\\*\\*" in md and "\x00" not in md and "\x1b" not in md
    table_rows = [line for line in md.splitlines() if line.startswith("| ")]
    assert all(line.count("|") - line.count("\\|") in (3, 4) for line in table_rows)  # no cell split by an id
    root = ET.fromstring(gate.junit_xml(result))  # control characters would make the file unreadable
    assert result.worse and root.get("failures") == "1"  # 6 of 9 items scored 2 lower, none higher
    out_text = root.find("testcase/system-out").text
    assert "missing (new): 1 x reply said <script>" in out_text and "\x00" not in out_text


def test_a_judge_that_gives_every_item_one_score_is_said_to_tell_nothing_apart():
    def system(name, scores):
        return gate.SystemScores(name, "j", "quality", tuple(gate.ScoredItem(f"i{k}", s, f"i{k}")
                                                            for k, s in enumerate(scores)))

    flat = gate.compare_scores(system("new", [1.0] * 6), system("base", [1.0] * 6))
    assert flat.verdict == "no resolved difference" and any("cannot tell these systems apart" in n for n in flat.notes)
    assert "cannot tell these systems apart" in gate.summary_markdown(flat)
    varied = gate.compare_scores(system("new", [1.0, 2.0] * 3), system("base", [1.0, 2.0] * 3))
    assert not any("cannot tell" in n for n in varied.notes)


def test_different_judges_or_aspects_are_refused_by_name():
    item = (gate.ScoredItem("a", 3.0, "a"),)
    with pytest.raises(ValueError, match="different judges"):
        gate.compare_scores(gate.SystemScores("new", "j1", "q", item), gate.SystemScores("base", "j2", "q", item))
    with pytest.raises(ValueError, match="different aspects"):
        gate.compare_scores(gate.SystemScores("new", "j", "q", item), gate.SystemScores("base", "j", "r", item))
    with pytest.raises(ValueError, match="no items"):
        gate.compare_scores(gate.SystemScores("new", "j", "q", ()), gate.SystemScores("base", "j", "q", item))


def test_the_python_api_and_the_pytest_helper(tmp_path, judge_file, store):
    judge = load_judge(judge_file)
    llm, backend = fake_llm(quality_reply, store=store)
    base = pd.DataFrame(_rows(24, lambda k: 4))
    new = pd.DataFrame(_rows(24, lambda k: 2 if k % 2 else 4))
    result = judge.compare(new, base, id_col="id", group_col="doc", llm=llm)
    assert isinstance(result, gate.GateResult) and result.worse and result.losses == 12
    assert result.diff == pytest.approx(-1.0) and result.high < 0
    with pytest.raises(AssertionError, match=r"^worse: new - base = -1\.000"):
        gate.assert_not_worse(result)
    same = judge.compare(base, base, id_col="id", llm=llm)
    gate.assert_not_worse(same)  # passes: two copies of one system
    assert same.verdict == "no resolved difference" and same.ties == 24


def test_the_paired_interval_covers_the_planted_mean_and_refuses_too_few_pairs():
    import numpy as np

    rng = np.random.default_rng(0)
    base = rng.normal(3, 1, size=200)
    new = base - 0.5 + rng.normal(0, 0.3, size=200)
    found = paired_mean_difference(new, base, seed=1)
    assert found.low < -0.5 < found.high and found.resampled == "items" and found.n == 200
    grouped = paired_mean_difference(new, base, groups=[str(k // 5) for k in range(200)])
    assert grouped.resampled == "groups" and grouped.n_groups == 40 and grouped.diff == pytest.approx(found.diff)
    few = paired_mean_difference([1.0, 2.0, float("nan")], [1.0, 1.0, 1.0])
    assert few.n == 2 and np.isnan(few.low) and "too few" in few.note


def test_the_calibration_bench_runs_its_worlds_through_the_gate():
    from judge_engine.bench import gate as bench

    doc = bench.run(draws=20, sizes=[80], worlds=["same system", "equal on average", "drop 0.5"])
    rows = {(r["world"], r["groups"]): r for r in doc["rows"]}
    # one row per world and grouping ("equal on average" differs by source: grouped only)
    assert set(rows) == {("same system", "none"), ("same system", "20 of 4"), ("equal on average", "20 of 4"),
                         ("drop 0.5", "none"), ("drop 0.5", "20 of 4")}
    assert rows[("same system", "20 of 4")]["resampled"] == "groups"
    assert rows[("same system", "none")]["resampled"] == "items"
    assert rows[("drop 0.5", "none")]["fails_build"] > rows[("same system", "none")]["fails_build"]
    assert all(r["kind"] == ("power" if w.startswith("drop") else "false alarm") for (w, _), r in rows.items())
    assert "| same system | false alarm | 80 |" in bench.markdown(doc)
