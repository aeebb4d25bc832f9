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
            assert f"    {p.name} = {json.dumps(p.default)}" in out
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
