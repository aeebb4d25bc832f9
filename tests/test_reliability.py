"""Runs survive a dying, flaky or missing LLM server: they pause with a clear status and resume paying nothing twice.

Against a REAL ``python -m llama_cpp.server`` on 127.0.0.1 that the tests kill
and restart, plus a scripted HTTP stub for faults the real server never shows
(500, 429, empty or over-long replies).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge_engine.llm import BackendUnavailable, LLMConfig
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.store import CallCache
from llama_server import MODEL_ALIAS, free_port, llama_server_fixture

llama_server = llama_server_fixture(scope="module")


def openai_spec(url: str, *, test_size: int = 9, **config) -> RunSpec:
    # tiny has 4 groups of 3 and test takes whole groups: test sizes here are multiples of 3
    llm = LLMConfig(backend="openai", base_url=url, model=config.pop("model", MODEL_ALIAS), concurrency=1,
                    max_retries=config.pop("max_retries", 1), timeout=config.pop("timeout", 60), **config)
    return RunSpec(method="direct", dataset="tiny", aspect="quality", train_size=3, test_size=test_size, llm=llm)


def test_server_dies_mid_run_then_the_run_resumes_without_repeating_a_call(llama_server, store, tiny_dataset,
                                                                          monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-checked")
    server = llama_server.start()
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(server.base_url, max_retries=0))
    killed = []

    def kill_after_three(done, total, stage):
        if stage == "scoring" and done >= 3 and not killed:
            server.stop()
            killed.append(done)

    with pytest.raises(BackendUnavailable, match="cannot reach"):
        execute_run(store, run_id, progress=kill_after_three, chunk_size=2)
    run = store.get_run(run_id)
    assert run["status"] == "interrupted" and "backend unavailable" in run["message"]
    saved = len(store.scored_ids(run_id))
    assert 2 <= saved < 9, "finished chunks are kept"

    server.start()
    summary = execute_run(store, run_id)
    assert store.get_run(run_id)["status"] == "finished" and summary.n == 9
    # every call of both attempts is one cache row: nothing was sent twice
    assert summary.ledger.calls == len(CallCache(store)) == 9


def test_server_down_at_start_pauses_the_run_with_a_clear_status(store, tiny_dataset, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-checked")
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(f"http://127.0.0.1:{free_port()}/v1", max_retries=0))
    with pytest.raises(BackendUnavailable):
        execute_run(store, run_id)
    run = store.get_run(run_id)
    assert run["status"] == "interrupted" and "is it running?" in run["message"]
    assert store.scored_ids(run_id) == set()


# --------------------------------------------------------------------------- scripted faults


class _Flaky(BaseHTTPRequestHandler):
    """Fails each new prompt ``failures`` times (500 or 429), then answers ``reply``."""

    script: dict = {}
    seen: dict[str, int] = {}

    def log_message(self, *args):
        pass

    def _send(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        prompt = body["messages"][-1]["content"]
        n = self.seen[prompt] = self.seen.get(prompt, 0) + 1
        s = self.script
        if s.get("delay"):
            time.sleep(s["delay"])
        if n <= s.get("failures", 0):
            status = s.get("status", 500)
            return self._send(status, {"error": {"message": "try again later"}}, headers=[("retry-after-ms", "10")])
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": s.get("reply", "[[3]]")}}],
                         "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})


@pytest.fixture
def flaky():
    _Flaky.seen = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("status", [500, 429])
def test_transient_errors_are_retried_with_backoff(flaky, store, tiny_dataset, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    _Flaky.script = {"failures": 2, "status": status}
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(flaky, test_size=3, model="stub", max_retries=3))
    summary = execute_run(store, run_id)
    assert summary.n == 3 and summary.parse_failures == 0
    assert sorted(_Flaky.seen.values()) == [3, 3, 3], "each prompt: two failures, then one answer"
    assert summary.ledger.calls == 3


@pytest.mark.parametrize("status", [500, 429])
def test_errors_that_outlast_the_retries_pause_the_run(flaky, store, tiny_dataset, monkeypatch, status):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    _Flaky.script = {"failures": 99, "status": status}
    store.save_dataset(tiny_dataset)
    # a 429 is tried again with fewer requests in flight for rate_limit_patience seconds, then pauses the run
    run_id = create_run(store, openai_spec(flaky, test_size=3, model="stub", max_retries=1, rate_limit_patience=2.5))
    with pytest.raises(BackendUnavailable):
        execute_run(store, run_id)
    assert store.get_run(run_id)["status"] == "interrupted"
    _Flaky.script = {}
    assert execute_run(store, run_id).n == 3, "resumes once the server recovers"


def test_a_server_that_rate_limits_for_a_while_slows_the_run_down_instead_of_stopping_it(flaky, store, tiny_dataset,
                                                                                         monkeypatch):
    from judge_engine.llm import rate

    monkeypatch.setattr(rate, "FIRST_PAUSE_S", 0.05)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    # each prompt: 429 through the client's own retry (max_retries=1), then once more, then an answer
    _Flaky.script = {"failures": 3, "status": 429}
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(flaky, test_size=3, model="stub", max_retries=1))
    summary = execute_run(store, run_id)
    assert summary.n == 3 and summary.parse_failures == 0 and store.get_run(run_id)["status"] == "finished"
    assert sorted(_Flaky.seen.values()) == [4, 4, 4]


@pytest.mark.parametrize("reply", ["", "I will not rate this.", "blah " * 5000])
def test_empty_unparseable_or_over_long_replies_are_missing_not_numbers(flaky, store, tiny_dataset, monkeypatch,
                                                                       reply):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    _Flaky.script = {"reply": reply}
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(flaky, test_size=3, model="stub"))
    summary = execute_run(store, run_id)
    assert summary.parse_failures == 3 and summary.parse_failure_rate == pytest.approx(1.0)
    assert summary.missing == 3 and all(v.missing for v in store.load_verdicts(run_id))
    [warning] = [w for w in summary.warnings if w.code == "scores_missing"]
    assert warning.count == 3 and "3 of 3 items have no score" in warning.message


def test_a_slow_server_times_out_and_pauses_the_run(flaky, store, tiny_dataset, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    _Flaky.script = {"delay": 3}
    store.save_dataset(tiny_dataset)
    run_id = create_run(store, openai_spec(flaky, test_size=2, model="stub", timeout=0.5, max_retries=0))
    with pytest.raises(BackendUnavailable, match="did not answer in time"):
        execute_run(store, run_id)
    assert store.get_run(run_id)["status"] == "interrupted"
