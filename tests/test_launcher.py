"""``judge-workbench app``: the app's Streamlit settings on the command line, from the clone and installed, and a
launcher that takes its server down with it when it is stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from judge_engine import launcher
from tests.llama_server import free_port

ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 90
STOP_TIMEOUT_S = 10


def test_the_launcher_passes_every_setting_of_the_apps_config():
    settings = launcher.streamlit_settings(ROOT)
    assert settings["client.toolbarMode"] in ("minimal", "viewer"), "no Deploy button"
    assert settings["client.disableDataExport"] == "true", "docs/data.md: Streamlit's table download is off"
    assert settings["server.maxUploadSize"] == "500"
    assert settings["server.fileWatcherType"] == "none", "an inotify overflow under .venv or build/ stalls the app"
    assert settings["server.address"] == "127.0.0.1" and settings["browser.gatherUsageStats"] == "false"


def test_an_unreadable_config_is_one_message(tmp_path):
    with pytest.raises(ValueError, match="cannot read the app's settings .*config.toml"):
        launcher.streamlit_settings(tmp_path)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text("[server]\nfolderWatchBlacklist = ['a']\n")
    with pytest.raises(ValueError, match="server.folderWatchBlacklist is not a single value"):
        launcher.streamlit_settings(tmp_path)


def _healthy(port: int) -> bool:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok"
    except OSError:
        return False


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # as a new server binds it (Streamlit's does too): the health checks' closed connections wait in TIME_WAIT
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by whoever adopted it) is gone as far as a port is concerned
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class Launcher:
    """``judge-workbench app`` (``command``) on a free port, its Streamlit child found in /proc."""

    def __init__(self, command: list[str], *, cwd: Path, db: Path, log: Path, env: dict[str, str] | None = None):
        self.port = free_port()
        self.log = log
        self.proc = subprocess.Popen([*command, "app", "--port", str(self.port), "--db", str(db)], cwd=cwd,
                                     env=env or dict(os.environ), stdout=log.open("wb"), stderr=subprocess.STDOUT)
        self.child = None
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"the app did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.3)
        (self.child,) = _children(self.proc.pid)

    def stop(self) -> None:
        # the test's own processes only, by their ids
        for pid in (self.proc.pid, self.child):
            if pid is not None and _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_launcher_killed_outright_takes_its_child_with_it(tmp_path):
    # SIGKILL cannot be forwarded: it left Streamlit serving on the port (issue 62 item 9); the kernel ends the child
    script = ("import sys, pathlib\n"
              "from judge_engine.launcher import run_forwarding_signals\n"
              "run_forwarding_signals([sys.executable, '-c', 'import time; time.sleep(120)'], "
              "cwd=pathlib.Path('.'), env={})\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not (children := _children(proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children, "the launcher started no child"
        (child,) = children
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=STOP_TIMEOUT_S) == -signal.SIGKILL
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the child outlived a launcher killed with SIGKILL"
    finally:
        for pid in [proc.pid, *(locals().get("children") or [])]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)


@pytest.mark.server
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["SIGTERM", "SIGINT", "SIGKILL"])
def test_stopping_the_launcher_stops_the_server_and_frees_the_port(tmp_path, signum):
    # `kill <pid of judge-workbench app>` once left Streamlit serving on the port (subprocess.call forwards nothing)
    app = Launcher([sys.executable, "-m", "judge_engine"], cwd=ROOT, db=tmp_path / "w.db", log=tmp_path / "log")
    try:
        os.kill(app.proc.pid, signum)
        started = time.monotonic()
        code = app.proc.wait(timeout=STOP_TIMEOUT_S)
        while _alive(app.child) and time.monotonic() - started < STOP_TIMEOUT_S:
            time.sleep(0.1)
        assert not _alive(app.child), "the Streamlit server outlived its launcher"
        assert _port_free(app.port) and not _healthy(app.port)
        if signum == signal.SIGKILL:  # the launcher cannot say anything; the kernel sent its child SIGTERM
            assert code == -signal.SIGKILL
        else:
            assert code == 0, f"exit code {code}: Streamlit stops cleanly on {signum.name}"
        print(f"{signum.name}: launcher and server gone in {time.monotonic() - started:.1f} s")
    finally:
        app.stop()


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv holding the wheel built from this tree (its dependencies come from the test's own environment)."""
    folder = tmp_path_factory.mktemp("installed")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(folder), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = folder.glob("judge_workbench-*.whl")
    assert "judge_workbench_app/.streamlit/config.toml" in zipfile.ZipFile(wheel).namelist()
    venv = folder / "venv"
    # the base interpreter, with this environment's site-packages on the path for the dependencies only: the
    # package itself is the wheel's copy (checked below), not the clone this test runs from
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, timeout=300, capture_output=True)
    return venv


def _cmdline_settings(pid: int) -> tuple[list[str], dict[str, str]]:
    words = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    return words, {w[2:]: words[i + 1] for i, w in enumerate(words) if w.startswith("--") and "." in w}


@pytest.mark.server
def test_an_installed_app_runs_with_the_clones_settings(installed, tmp_path):
    # an installed app once ran without .streamlit/config.toml: a Deploy button and Streamlit's table download back
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUDGE_WORKBENCH_DB")}
    app = Launcher([str(installed / "bin" / "judge-workbench")], cwd=Path("/tmp"), db=tmp_path / "w.db",
                   log=tmp_path / "log", env=env)
    try:
        words, settings = _cmdline_settings(app.child)
        served = Path(words[words.index("run") + 1])
        assert served.parent.name == "judge_workbench_app" and ROOT not in served.parents, served
        assert settings == {**launcher.streamlit_settings(ROOT), "server.port": str(app.port)}
        # what the running server tells a browser (the NewSession message every page load gets)
        config = served_config(app.port)
        assert config.toolbar_mode in (config.ToolbarMode.MINIMAL, config.ToolbarMode.VIEWER), "no Deploy button"
        assert config.disable_data_export, "Streamlit's table download stays off"
    finally:
        app.stop()


def served_config(port: int):
    """The ``Config`` of the NewSession message a Streamlit server on ``port`` sends a new browser session."""
    import asyncio

    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from websockets.asyncio.client import connect

    async def ask():
        async with connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                           max_size=None) as ws:
            back = BackMsg()
            back.rerun_script.query_string = ""
            await ws.send(back.SerializeToString())
            while True:
                msg = ForwardMsg()
                msg.ParseFromString(await asyncio.wait_for(ws.recv(), timeout=STARTUP_TIMEOUT_S))
                if msg.WhichOneof("type") == "new_session":
                    return msg.new_session.config

    return asyncio.run(ask())
