"""The command line names what is wrong in one line (exit 2) and lists the methods with their parameters."""

import json

import pytest

from judge_engine.__main__ import main
from judge_engine.methods import METHODS, describe_parameters


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unknown_parameter_is_named_with_a_close_match_and_the_methods_parameters(tmp_path, capsys):
    code, _, err = _run(capsys, "run", "--method", "geval", "--dataset", "tiny", "--aspect", "x",
                        "--params", '{"n_sample": 3}', "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.count("\n") == 1
    assert "geval has no parameter 'n_sample' (did you mean 'n_samples'?)" in err
    assert "its parameters are scoring, n_samples, temperature" in err
    assert not (tmp_path / "w.db").exists() or "Traceback" not in err


def test_params_that_are_not_json_name_the_option(tmp_path, capsys):
    code, _, err = _run(capsys, "run", "--method", "geval", "--dataset", "tiny", "--aspect", "x",
                        "--params", "{bad", "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.startswith("error: --params is not valid JSON") and "column 2" in err
    code, _, err = _run(capsys, "run", "--method", "geval", "--dataset", "tiny", "--aspect", "x",
                        "--params", "[1]", "--db", str(tmp_path / "w.db"))
    assert code == 2 and "--params must be a JSON object" in err


def test_methods_lists_every_method_with_its_parameters_defaults_and_help(capsys):
    code, out, _ = _run(capsys, "methods")
    assert code == 0
    for name, cls in METHODS.items():
        assert f"{name}  {cls.title}:" in out
        for p in describe_parameters(cls):
            assert f"    {p.name} = {json.dumps(p.default)}" in out and f"({p.label})" in out
    code, out, _ = _run(capsys, "methods", "geval")
    assert "n_samples = 20 [int in [1, 100]]" in out and "paper: n = 20" in out and "hypoeval" not in out


def test_every_parameter_of_every_method_is_documented():
    undocumented = [f"{name}.{p.name}" for name, cls in METHODS.items() for p in describe_parameters(cls)
                    if not p.text]
    assert undocumented == []


def test_a_judge_file_with_parameters_that_no_longer_exist_is_refused_by_name(tmp_path, capsys):
    judge = {"method": "direct", "params": {"temperature": 0.0, "max_tokens": 32, "old_knob": 1},
             "aspect": {"name": "q", "low": 1, "high": 5}, "task": {"task": "t"}, "state": {}, "schema_version": 1}
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(judge))
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"input": "a", "output": "b"}) + "\n")
    code, _, err = _run(capsys, "score", str(path), str(items), "--db", str(tmp_path / "w.db"))
    assert code == 2 and "direct has no parameter 'old_knob'" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["run", "--help"]])
def test_run_help_lists_the_methods(argv, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    out = capsys.readouterr().out
    assert all(name in out for name in METHODS) and "judge_engine methods" in out


def _scripted_backend(monkeypatch, reply):
    """Every run the CLI starts answers through a scripted LLM: ``reply(n)`` scores "output number n"."""
    import re

    from judge_engine import runs
    from judge_engine.llm import make_llm
    from judge_engine.llm.fake import FakeBackend

    def answer(messages, params):
        n = int(re.findall(r"output number (\d+)", messages[0]["content"])[-1])
        return f"[[{reply(n)}]]"

    monkeypatch.setattr(runs.execute, "make_llm", lambda config, **kw: make_llm(config, backend=FakeBackend(answer), **kw))


def test_run_prints_the_trust_report_and_runs_ends_each_finished_line_with_it(tmp_path, tiny_dataset, capsys,
                                                                               monkeypatch):
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    Store(db).save_dataset(tiny_dataset)
    human = {int(s.output.split()[-1]): int(s.human["quality"]) for s in tiny_dataset.samples}
    args = ("run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train", "0", "--test", "12",
            "--db", db, "--quiet")
    _scripted_backend(monkeypatch, lambda n: human[n])
    code, out, _ = _run(capsys, *args)
    good = json.loads(out)
    # 4 groups: no interval at the natural level, so no "ok" however good the figure (issue 49)
    assert code == 0 and good["trust"]["verdict"] == "too few items to say", good["trust"]["reasons"]
    assert good["trust"]["test"]["level"] == "group" and good["trust"]["test"]["ci_note"]
    assert good["trust"]["sample"]["value"] == pytest.approx(1.0)
    _scripted_backend(monkeypatch, lambda n: 6 - human[n])
    code, out, _ = _run(capsys, *args, "--params", '{"max_tokens": 40}')  # other requests: not the cached replies
    bad = json.loads(out)
    # 12 items from 4 sources are fewer than five independent units (judge_engine.evidence, issue 63): even a
    # Pearson of -1.00 is no claim of "worse than chance" from them
    assert code == 0 and bad["trust"]["verdict"] == "too few items to say", bad["trust"]["reasons"]
    assert not any("anti-correlated on the test items" in r for r in bad["trust"]["reasons"])
    code, out, _ = _run(capsys, "runs", "--db", db)
    lines = {int(line.split()[0]): line for line in out.strip().splitlines()}
    assert "trust: too few items to say (group-level pearson +1.00, too few groups" in lines[good["run_id"]]
    assert "trust: too few items to say (group-level pearson -1.00, too few groups" in lines[bad["run_id"]]


def test_runs_says_why_a_failed_run_stopped_instead_of_a_step_count(tmp_path, tiny_dataset, capsys):
    from judge_engine.llm import LLMConfig
    from judge_engine.runs import RunSpec, create_run
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    store = Store(db)
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0, test_size=4,
                                       llm=LLMConfig()))
    store.update_run(run_id, status="failed", done=18, total=147,
                     message="HypoEval found no hypothesis that agrees with the human scores\non the 8 training items")
    code, out, _ = _run(capsys, "runs", "--db", db)
    assert code == 0
    line = next(x for x in out.splitlines() if x.split()[0] == str(run_id))
    assert "stopped at step 18 of 147: HypoEval found no hypothesis that agrees with the human scores on the 8 " \
           "training items" in line and "spearman" not in line
    # a method that found no judge (its fit raised ValueError) is said to have ended without one
    store.update_run(run_id, message="ValueError: HypoEval generated no usable hypothesis")
    code, out, _ = _run(capsys, "runs", "--db", db)
    line = next(x for x in out.splitlines() if x.split()[0] == str(run_id))
    assert line.endswith("ended without a judge: HypoEval generated no usable hypothesis"), line


def test_a_parameter_of_the_wrong_type_is_named_in_plain_words(tmp_path, capsys):
    code, _, err = _run(capsys, "run", "--method", "geval", "--dataset", "sfres", "--aspect", "informativeness",
                        "--params", '{"n_samples": "two"}', "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.strip() == "error: n_samples='two' must be a whole number"
    code, _, err = _run(capsys, "run", "--method", "geval", "--dataset", "sfres", "--aspect", "informativeness",
                        "--params", '{"temperature": "hot"}', "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.strip() == "error: temperature='hot' must be a number"


def test_probes_prints_one_line_per_probe_and_json_and_refuses_an_unfinished_run(tmp_path, tiny_dataset, capsys,
                                                                                  monkeypatch):
    from judge_engine.llm import LLMConfig
    from judge_engine.runs import RunSpec, create_run
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    Store(db).save_dataset(tiny_dataset)
    human = {int(s.output.split()[-1]): int(s.human["quality"]) for s in tiny_dataset.samples}
    _scripted_backend(monkeypatch, lambda n: human[n])
    code, out, _ = _run(capsys, "run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train",
                        "0", "--test", "12", "--db", db, "--quiet")
    run_id = json.loads(out)["run_id"]
    from judge_engine import probes

    code, out, _ = _run(capsys, "probes", str(run_id), "--db", db)
    lines = out.strip().splitlines()
    assert code == 0 and lines[0] == f"probes of run #{run_id} on quality: 12 test items scored by both the judge " \
                                      f"and the humans; correlations at the {probes.LEVEL_NAMES['group']}"
    assert [line.split(":")[0] for line in lines[1:]] == ["length", "collapse", "disagreements", "themes"]
    assert "overall Spearman +1.00" in lines[3] and "no explanations" in lines[4]
    code, out, _ = _run(capsys, "probes", str(run_id), "--db", db, "--json")
    report = json.loads(out)
    assert code == 0 and report["n"] == 12 and report["collapse"]["judge"]["distinct"] >= 3
    unfinished = create_run(Store(db), RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=0,
                                               test_size=4, llm=LLMConfig()))
    code, out, err = _run(capsys, "probes", str(unfinished), "--db", db)
    assert code == 2 and "only a finished run has verdicts to probe" in err and "Traceback" not in err


def test_probes_stability_says_its_calls_first_and_a_second_run_costs_nothing(tmp_path, tiny_dataset, capsys,
                                                                              monkeypatch):
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    Store(db).save_dataset(tiny_dataset)
    human = {int(s.output.split()[-1]): int(s.human["quality"]) for s in tiny_dataset.samples}
    _scripted_backend(monkeypatch, lambda n: human[n])
    from judge_engine import probes, runs

    monkeypatch.setattr(probes, "make_llm", runs.execute.make_llm)  # the stability probe's calls: the same script
    code, out, _ = _run(capsys, "run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train",
                        "0", "--test", "12", "--db", db, "--quiet")
    run_id = json.loads(out)["run_id"]
    before = Store(db).db["llm_cache"].count
    code, out, err = _run(capsys, "probes", str(run_id), "--db", db, "--stability", "--items", "8", "--repeats", "2",
                          "--quiet")
    assert code == 0 and "stability (sampling): re-scoring 8 test items 2 times, at most 16 calls" in err
    line = out.strip().splitlines()[-1]
    assert line.startswith("stability (sampling, temperature 0.7, 2 repeats of 8 items, 8 scored in every repeat)")
    assert "test-retest Spearman +1.00" in line
    after = Store(db).db["llm_cache"].count
    assert after == before + 16
    code, out, _ = _run(capsys, "probes", str(run_id), "--db", db, "--stability", "--items", "8", "--repeats", "2",
                        "--quiet", "--json")
    assert code == 0 and json.loads(out)["stability"]["n"] == 8
    assert Store(db).db["llm_cache"].count == after


def test_a_parameter_below_its_open_ended_range_says_its_least_value(tmp_path, capsys):
    code, _, err = _run(capsys, "run", "--method", "hpss", "--dataset", "sfres", "--aspect", "informativeness",
                        "--params", '{"example_chars": 5}', "--db", str(tmp_path / "w.db"))
    assert code == 2 and err.strip() == "error: example_chars=5 is too small: it must be at least 100"


def test_run_starts_at_32_in_flight_on_a_server_and_keeps_4_on_the_embedded_model(tmp_path, tiny_dataset, capsys,
                                                                                   monkeypatch):
    """Issue 46: ``run`` starts where ``score`` does on an OpenAI-compatible server; ``--concurrency`` still wins."""
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    Store(db).save_dataset(tiny_dataset)
    _scripted_backend(monkeypatch, lambda n: 3)
    common = ("run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train", "0", "--test", "4",
              "--db", db, "--quiet")
    in_flight = []
    for extra in (("--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"),
                  ("--backend", "openai", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--concurrency", "8"),
                  ()):
        code, out, err = _run(capsys, *common, *extra)
        assert code == 0, err
        in_flight.append(Store(db).get_run(json.loads(out)["run_id"])["llm"]["concurrency"])
    assert in_flight == [32, 8, 4]
    code, _, err = _run(capsys, *common, "--concurrency", "0")
    assert code == 2 and "--concurrency must be at least 1" in err


def test_ctrl_c_during_run_names_the_resume_command_instead_of_a_traceback(tmp_path, tiny_dataset, capsys,
                                                                           monkeypatch):
    from judge_engine.store import Store

    db = str(tmp_path / "w.db")
    Store(db).save_dataset(tiny_dataset)
    calls = []

    def reply(n):
        calls.append(n)
        if len(calls) == 5:  # the user presses Ctrl-C while the fifth item is being scored
            raise KeyboardInterrupt
        return 3

    _scripted_backend(monkeypatch, reply)
    args = ("run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train", "0", "--test", "12",
            "--db", db, "--quiet", "--concurrency", "1")
    code, _, err = _run(capsys, *args)
    run_id = Store(db).runs()[-1].id
    assert code == 130 and "Traceback" not in err
    assert f"run {run_id} stopped by Ctrl-C; continue it with: judge-workbench resume {run_id}" in err
    assert Store(db).run(run_id).status == "interrupted"
    code, out, err = _run(capsys, "resume", str(run_id), "--db", db, "--quiet")
    assert code == 0 and json.loads(out)["run_id"] == run_id
