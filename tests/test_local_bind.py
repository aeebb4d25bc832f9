"""`make run` serves the app on 127.0.0.1 only: other addresses of the machine do not reach it."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.llama_server import free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.server


def non_loopback_addresses() -> list[str]:
    """IPv4 addresses of this machine other than 127.0.0.0/8 (``hostname -I``, else the default route's)."""
    found: list[str] = []
    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        found = [a for a in out.split() if "." in a]
    except (OSError, subprocess.SubprocessError):
        pass
    if not found:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
                found = [s.getsockname()[0]]
        except OSError:
            pass
    return [a for a in found if not a.startswith("127.")]


def make_run_command(port: int) -> str:
    """The command `make run` executes to start the app (from `make -n`, so the test follows the Makefile)."""
    out = subprocess.run(["make", "-n", "run", f"PORT={port}"], cwd=ROOT, capture_output=True, text=True,
                         timeout=30, check=True).stdout.replace("\\\n", " ")
    return next(line for line in out.splitlines() if "judge-workbench app" in line)


def reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def test_make_run_is_reachable_on_loopback_only(tmp_path):
    others = non_loopback_addresses()
    if not others:
        pytest.skip("this machine has no non-loopback IPv4 address to try")
    port = free_port()
    command = make_run_command(port)
    assert "--address 127.0.0.1" in command
    env = dict(os.environ, JUDGE_WORKBENCH_DB=str(tmp_path / "w.db"))
    log = (tmp_path / "streamlit.log").open("wb")
    proc = subprocess.Popen(command, shell=True, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, (tmp_path / "streamlit.log").read_text()
                time.sleep(0.5)
        assert reachable("127.0.0.1", port)
        for address in others:
            assert not reachable(address, port), f"the app answers on {address}:{port}"
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


def test_the_streamlit_config_binds_to_loopback_too():
    """`streamlit run app.py` started another way (no --server.address) reads .streamlit/config.toml."""
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
