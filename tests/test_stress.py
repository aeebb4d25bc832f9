"""Stress tests (issue 47 item 1): perturbed twins scored by scripted judges whose reactions are known."""

from __future__ import annotations

import json
import math
import re

import pytest

from judge_engine import stress
from judge_engine.llm import LedgerTotals
from judge_engine.methods import Judge, get_method
from judge_engine.records import Aspect, Dataset, Sample, Split, Verdict
from judge_engine.runs import RunSpec, create_run, human_dataset, summarize
from tests.scripted import fake_llm

N_ITEMS = 16


def _ordered(n: int = N_ITEMS) -> Dataset:
    """Items of four numbered sentences each ("Step 2 of item 7."), in order; two items per group."""
    samples = tuple(Sample(id=f"i{k:02d}", input=f"Source {k // 2} about item {k}.",
                           output=" ".join(f"Step {j} of item {k}." for j in range(1, 5)), group_id=f"g{k // 2}",
                           human={"coherence": float(1 + k % 5)}) for k in range(n))
    return Dataset(name="ordered", task="toy", aspects=(Aspect("coherence", 1, 5),), samples=samples)


def _judge(dataset: Dataset) -> Judge:
    return Judge(method="direct", params=get_method("direct").get_params(), aspect=dataset.aspects[0].to_dict(),
                 task={"task": dataset.task, "input_label": "Source", "output_label": "Output"}, state={})


def _output(messages) -> str:
    """The judged output inside the direct prompt's fence."""
    return re.search(r"<<<OUTPUT>>>\n(.*)\n<<<END OUTPUT>>>", messages[-1]["content"], re.S).group(1)


def _item(text: str) -> int:
    found = re.findall(r"item (\d+)", text)
    return int(found[0]) if found else 0


def follows_order(messages, params) -> str:
    """Scores how well the steps are in order: 5 minus the number of steps out of place, floored at 1; a
    small per-item wobble so the scores are not all alike."""
    text = _output(messages)
    steps = [int(x) for x in re.findall(r"Step (\d+)", text)]
    out_of_place = sum(1 for a, b in zip(steps, steps[1:]) if b < a)
    return f"[[{max(1, 5 - 2 * out_of_place - _item(text) % 2)}]]"


def ignores_order(messages, params) -> str:
    """Scores by which item it is (the words present), never by their order."""
    text = _output(messages)
    return f"[[{1 + _item(text) % 5}]]"


def minds_spaces(messages, params) -> str:
    """Scores down whenever the output has a doubled space: reacts to a change that should not matter."""
    text = _output(messages)
    return f"[[{(2 if '  ' in text else 4) + _item(text) % 2}]]"


@pytest.fixture
def dataset() -> Dataset:
    return _ordered()


def _result(report: stress.StressReport, name: str) -> stress.TransformationResult:
    return next(r for r in report.results if r.name == name)


def test_a_judge_that_reads_the_order_is_sensitive_to_shuffling_and_one_that_does_not_is_not_shown(dataset,
                                                                                                   store):
    llm, _ = fake_llm(follows_order, store=store)
    found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm, transformations=["sentence_shuffle"])
    r = _result(found, "sentence_shuffle")
    assert r.expected == stress.LOWER and r.verdict == stress.SENSITIVE
    assert r.n == N_ITEMS and r.missing == 0 and r.share_lower == pytest.approx(1.0)
    assert r.mean_change < 0 and r.mean_change_ci[1] < 0 and r.share_lower_ci[0] > 0.7

    blind, _ = fake_llm(ignores_order, store=store, model_id="blind")  # its own cache entries
    found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=blind,
                          transformations=["sentence_shuffle"])
    r = _result(found, "sentence_shuffle")
    assert r.verdict == stress.NOT_SHOWN and r.share_lower == pytest.approx(0.0, abs=1e-12)
    assert r.mean_change == pytest.approx(0.0, abs=1e-12)


def test_the_default_run_for_coherence_is_the_tables_and_a_repeat_costs_no_call(dataset, store):
    llm, _ = fake_llm(follows_order, store=store)
    found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm)
    assert [r.name for r in found.results] == stress.default_transformations(stress.load_table(), "coherence")
    assert [r.name for r in found.results][:1] == ["sentence_shuffle"]
    neutral = {r.name: r for r in found.results if r.expected == stress.NEUTRAL}
    assert set(neutral) == {"whitespace", "synonym"}
    # nothing in "Step 1 of item 3." has a synonym: every item unchanged, no verdict without items
    assert neutral["synonym"].n_items == 0 and neutral["synonym"].verdict == stress.TOO_FEW
    assert neutral["whitespace"].verdict == stress.STEADY
    before = llm.ledger.snapshot().calls
    again = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm)
    assert llm.ledger.snapshot().calls == before and again == found


def test_a_judge_that_minds_whitespace_reacts_to_a_change_that_should_not_matter(dataset, store):
    llm, _ = fake_llm(minds_spaces, store=store, model_id="spaces")
    found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm, transformations=["whitespace"])
    r = _result(found, "whitespace")
    assert r.expected == stress.NEUTRAL and r.verdict == stress.REACTS and r.mean_change_ci[1] < 0


def test_a_reply_without_a_score_is_counted_missing_never_a_number(dataset, store):
    def sometimes_silent(messages, params):
        text = _output(messages)
        if _item(text) in (1, 2, 3) and not text.startswith("Step 1"):
            return "I cannot say."
        return follows_order(messages, params)

    llm, _ = fake_llm(sometimes_silent, store=store, model_id="silent")
    found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm, transformations=["sentence_shuffle"])
    r = _result(found, "sentence_shuffle")
    assert r.missing >= 1 and r.n == N_ITEMS - r.missing and r.verdict == stress.SENSITIVE
    assert json.loads(json.dumps(found.to_dict(), allow_nan=False))["results"][0]["missing"] == r.missing


def test_paired_change_counts_missing_pairs_and_needs_enough_items():
    found = stress.paired_change([3, 4, math.nan, 5], [2, math.nan, 1, 4], stress.LOWER)
    assert found["n"] == 2 and found["missing"] == 2 and found["verdict"] == stress.TOO_FEW
    assert found["mean_change"] == pytest.approx(-1.0)
    many = stress.paired_change([3.0] * 10, [3.0] * 9 + [2.0], stress.LOWER)
    assert many["verdict"] == stress.NOT_SHOWN and many["share_lower"] == pytest.approx(0.1)
    assert stress.paired_change([3.0] * 10, [2.0] * 10, stress.NONE)["verdict"] == stress.NO_EXPECTATION


def test_a_transformation_added_in_python_runs_where_the_aspect_says(dataset, store):
    def reverse_sentences(text, rng, context):
        return " ".join(reversed(stress.sentences(text)))

    stress.register_transformation("reverse_sentences", reverse_sentences, lowers=("coherence",),
                                   description="the sentences last to first")
    try:
        with pytest.raises(ValueError, match="exists already"):
            stress.register_transformation("reverse_sentences", reverse_sentences)
        assert "reverse_sentences" in stress.default_transformations(stress.load_table(), "coherence")
        assert "reverse_sentences" not in stress.default_transformations(stress.load_table(), "fluency")
        llm, _ = fake_llm(follows_order, store=store)
        found = stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm,
                              transformations=["reverse_sentences"])
        assert _result(found, "reverse_sentences").verdict == stress.SENSITIVE
    finally:
        stress.unregister_transformation("reverse_sentences")
    assert "reverse_sentences" not in stress.TRANSFORMATIONS


def test_a_transformation_that_raises_stops_before_any_call(dataset, store):
    def broken(text, rng, context):
        raise RuntimeError("boom")

    stress.register_transformation("broken", broken, lowers=("coherence",))
    try:
        llm, _ = fake_llm(follows_order, store=store)
        with pytest.raises(ValueError, match=r"transformation 'broken' raised RuntimeError on item 'i00': boom"):
            stress.stress(_judge(dataset), dataset.samples, "coherence", llm=llm, transformations=["broken"])
        assert llm.ledger.snapshot().calls == 0
    finally:
        stress.unregister_transformation("broken")


def test_a_users_table_decides_the_expectations_and_a_bad_one_is_named(tmp_path):
    path = tmp_path / "table.toml"
    path.write_text('[aspects]\nflow = ["flow", "story flow"]\n\n[transformations.sentence_shuffle]\n'
                    'lowers = ["flow"]\n\n[transformations.char_noise]\nneutral = true\n', encoding="utf-8")
    table = stress.load_table(path)
    assert stress.expectation(table, "sentence_shuffle", "Story_Flow") == stress.LOWER
    assert stress.expectation(table, "char_noise", "flow") == stress.NEUTRAL
    assert stress.expectation(table, "truncate_half", "flow") == stress.NONE
    assert stress.default_transformations(table, "flow")[0] == "sentence_shuffle"
    with pytest.raises(ValueError, match="aspect 'coherence' is not in the stress table"):
        stress.default_transformations(table, "coherence")
    path.write_text('[aspects]\nflow = ["flow"]\n[transformations.sentence_shuffle]\nlowers = ["fluency"]\n')
    with pytest.raises(ValueError, match="names aspects not under \\[aspects\\]: fluency"):
        stress.load_table(path)
    path.write_text("[aspects\n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        stress.load_table(path)


def test_every_built_in_transformation_changes_a_plain_text_and_is_seeded():
    import numpy as np

    context = stress.StressContext(source="Anna Berg met Carl Dorn in Oslo on 12 May.",
                                   others=("A different output about cats.",))
    text = "Yesterday Anna met Carl in Oslo. They signed 3 contracts. It was big news. Everyone was happy."
    for record in stress.BUILT_IN:
        once = record.perturb(text, np.random.default_rng(5), context)
        assert once != text, record.name
        assert once == record.perturb(text, np.random.default_rng(5), context), record.name


# --------------------------------------------------------------------------- the command line on a stored run


def _stored_run(store, dataset: Dataset, *, test_ids=None) -> int:
    if not store.has_dataset(dataset.name):
        store.save_dataset(dataset)
    ids = [s.id for s in dataset.samples]
    split = Split(dataset=dataset.name, seed=0, train_ids=(), test_ids=tuple(ids if test_ids is None else test_ids))
    run_id = create_run(store, RunSpec("direct", dataset.name, "coherence", train_size=0), judge=_judge(dataset),
                        split=split)
    store.save_verdicts(run_id, [Verdict(i, "coherence", 3.0) for i in split.test_ids])
    store.update_run(run_id, status="finished",
                     summary=summarize(human_dataset(store, dataset.name), "coherence", store.load_verdicts(run_id),
                                       ledger=LedgerTotals(), seconds=0.0))
    return run_id


def _cli(capsys, *argv):
    from judge_engine.__main__ import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def scripted_backend(monkeypatch):
    from judge_engine.llm import make_llm
    from judge_engine.llm.fake import FakeBackend

    monkeypatch.setattr(stress, "make_llm",
                        lambda config, **kw: make_llm(config, backend=FakeBackend(follows_order), **kw))


def test_the_stress_command_prints_a_line_per_transformation_and_json(store, dataset, capsys, scripted_backend):
    run_id = _stored_run(store, dataset)
    db = str(store.path)
    code, out, err = _cli(capsys, "stress", str(run_id), "--db", db, "--quiet")
    lines = out.strip().splitlines()
    assert code == 0, err
    assert lines[0].startswith(f"stress test on coherence: {N_ITEMS} test items")
    assert lines[1].startswith("sentence_shuffle: sensitive; scored lower on 100% of 16 items")
    assert [line.split(":")[0] for line in lines[1:]] == stress.default_transformations(stress.load_table(),
                                                                                         "coherence")
    cached = store.db["llm_cache"].count
    code, out, _ = _cli(capsys, "stress", str(run_id), "--db", db, "--quiet", "--json",
                        "--transform", "sentence_shuffle")
    report = json.loads(out)
    assert code == 0 and [r["name"] for r in report["results"]] == ["sentence_shuffle"]
    assert report["results"][0]["verdict"] == stress.SENSITIVE
    assert store.db["llm_cache"].count == cached  # the same twins again: every call from the cache


@pytest.mark.parametrize("argv, message", [
    (["999"], "no run 999"),
    (["{run}", "--transform", "sentence_shufle"], "unknown transformation 'sentence_shufle'"),
    (["{run}", "--table", "/nonexistent/table.toml"], "cannot read the stress table"),
    (["{empty}"], "has no test items to perturb"),
    (["{queued}"], "only a finished run has a judge to stress"),
    (["{run}", "--items", "0"], "--items must be at least 1"),
])
def test_the_stress_command_refuses_bad_input_in_one_line(store, dataset, capsys, scripted_backend, argv, message):
    runs = {"run": _stored_run(store, dataset),
            "empty": _stored_run(store, dataset, test_ids=()),
            "queued": create_run(store, RunSpec("direct", dataset.name, "coherence", train_size=0, test_size=4))}
    cached = store.db["llm_cache"].count
    code, out, err = _cli(capsys, "stress", *[a.format(**runs) for a in argv], "--db", str(store.path), "--quiet")
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err and out == ""
    assert store.db["llm_cache"].count == cached


def test_an_exported_judge_stresses_a_data_frame_through_the_call_cache(dataset, store):
    import pandas as pd

    from judge_engine.export import load_judge

    exported = load_judge(_judge(dataset).to_dict())
    frame = pd.DataFrame({"id": [s.id for s in dataset.samples], "input": [s.input for s in dataset.samples],
                          "output": [s.output for s in dataset.samples],
                          "source": [s.group_id for s in dataset.samples]})
    llm, _ = fake_llm(follows_order, store=store, model_id="exported")
    found = exported.stress(frame, id_col="id", group_col="source", llm=llm,
                            transformations=["sentence_shuffle", "other_group_output"])
    assert found.aspect == "coherence" and found.n_items == N_ITEMS
    assert [r.verdict for r in found.results] == [stress.SENSITIVE, stress.NO_EXPECTATION]
    with pytest.raises(ValueError, match="group_col='nope' is not a column"):
        exported.stress(frame, group_col="nope", llm=llm)


def test_the_calibration_bench_separates_a_judge_that_ignores_the_text_from_one_that_reacts():
    from judge_engine.bench import stress_calibration as bench

    null = bench.measure_verdict("noise", stress.LOWER, 40, 100, seed=0)
    planted = bench.measure_verdict("drop_half", stress.LOWER, 40, 100, seed=0)
    assert null["kind"] == "false alarm" and planted["kind"] == "power"
    assert null["rate"] < 0.15 < 0.8 < planted["rate"]
    rows = bench.measure_end_to_end("follows_order", 10, 2, seed=0)
    assert [(r["transformation"], r["fired"]) for r in rows] == [("sentence_shuffle", 2), ("whitespace", 0)]


def test_a_twin_depends_on_its_item_and_seed_not_on_the_items_around_it(dataset):
    first = stress.twins(dataset.samples, "sentence_shuffle", seed=3)
    reordered = stress.twins(tuple(reversed(dataset.samples[2:])), "sentence_shuffle", seed=3)
    assert {i: t.output for i, t in reordered.items()} == {i: first[i].output for i in reordered}
    assert stress.twins(dataset.samples, "sentence_shuffle", seed=4) != first
    others = stress.twins(dataset.samples, "other_group_output", seed=0)
    group = {s.output: s.group_id for s in dataset.samples}
    assert all(group[t.output] != t.group_id for t in others.values()) and len(others) == N_ITEMS


def test_the_stress_command_stops_in_one_line_when_a_transformation_raises(store, dataset, capsys,
                                                                          scripted_backend):
    def broken(text, rng, context):
        return text[1000000]  # IndexError on every item

    run_id = _stored_run(store, dataset)
    stress.register_transformation("broken", broken, lowers=("coherence",))
    try:
        code, out, err = _cli(capsys, "stress", str(run_id), "--db", str(store.path), "--quiet")
    finally:
        stress.unregister_transformation("broken")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "transformation 'broken' raised IndexError on item 'i00'" in err
    assert store.db["llm_cache"].count == 0  # not even the items as they are were scored


def test_a_change_on_items_from_fewer_than_five_sources_carries_no_verdict():
    """The one rule for evidence (issue 63): 16 items of 2 sources are 2 independent units, so even a change that
    lowered every score says "too few items"; the same change on 16 sources is "sensitive"."""
    from judge_engine.stress._report import SENSITIVE, TOO_FEW, paired_change

    before = [4.0, 3.0, 5.0, 4.0] * 4
    after = [b - 1 - (k % 3) * 0.5 for k, b in enumerate(before)]
    two = paired_change(before, after, "lower", groups=[f"doc{k % 2}" for k in range(16)])
    assert two["verdict"] == TOO_FEW and two["mean_change"] < 0
    many = paired_change(before, after, "lower", groups=[f"doc{k}" for k in range(16)])
    assert many["verdict"] == SENSITIVE
