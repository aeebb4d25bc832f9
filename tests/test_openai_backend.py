"""The ``openai`` backend end to end against a REAL ``python -m llama_cpp.server`` on 127.0.0.1.

The server (SmolLM2-135M, alias ``smollm2``) starts once per module; see
``tests/llama_server.py``. A few behaviours the real server never shows (401,
404 for an unknown model, a 400 refusing logprobs) are checked against a tiny
scripted HTTP stub at the end of the module.
"""

from __future__ import annotations

import json
import re
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from judge_engine.llm import (BackendUnavailable, GenerationParams, LLMConfig, LLMError, check_connection,
                              make_llm)
from judge_engine.llm.openai_backend import OpenAIBackend
from judge_engine.store import Store
from llama_server import MODEL_ALIAS, free_port, llama_server_fixture

pytest.importorskip("openai")

llama_server = llama_server_fixture(scope="module")

SECRET = "sk-test-Zq81-do-not-print"
QUESTION = [{"role": "user", "content": "What is 2+2? Answer with a number."}]


@pytest.fixture
def server(llama_server):
    """The module's server, running (a test that stopped it and failed does not break the next)."""
    return llama_server.start()


def openai_llm(url, tmp_path, *, db="cache.db", api_key=None, **config):
    cfg = LLMConfig(backend="openai", base_url=url, model=config.pop("model", MODEL_ALIAS), **config)
    return make_llm(cfg, store=Store(tmp_path / db), api_key=api_key)


# --------------------------------------------------------------------------- the real server


def test_chat_completion_returns_text_and_usage(server, tmp_path):
    llm = openai_llm(server.base_url, tmp_path)
    out = llm.complete(QUESTION, GenerationParams(max_tokens=8))
    assert isinstance(out.text, str) and out.text.strip()
    assert out.prompt_tokens > 0 and 0 < out.completion_tokens <= 8
    assert out.latency_s > 0 and not out.cached
    assert out.model == MODEL_ALIAS
    assert llm.backend.model_id == f"{server.base_url}|{MODEL_ALIAS}"
    snap = llm.ledger.snapshot()
    assert snap.calls == 1 and snap.prompt_tokens == out.prompt_tokens and snap.seconds > 0
    # greedy is deterministic on this server too
    assert openai_llm(server.base_url, tmp_path, db="other.db").complete(QUESTION, max_tokens=8).texts == out.texts


def test_chat_logprobs_come_back(server, tmp_path):
    llm = openai_llm(server.base_url, tmp_path)
    out = llm.complete(QUESTION, GenerationParams(max_tokens=4, top_logprobs=3))
    assert llm.supports_logprobs  # llama_cpp.server (logits_all) returns chat logprobs
    assert len(out.logprobs) == 1
    positions = out.logprobs[0]
    assert 1 <= len(positions) <= 4
    for pos in positions:
        assert isinstance(pos["token"], str) and pos["logprob"] <= 0.0
        assert 1 <= len(pos["top"]) <= 3
        assert pos["top"][pos["token"]] == pytest.approx(pos["logprob"], abs=1e-4)
        assert max(pos["top"].values()) == pytest.approx(pos["logprob"], abs=1e-4)  # greedy picks the top one
    assert out.text.startswith(positions[0]["token"].lstrip()[:1])
    # they survive the cache
    again = llm.complete(QUESTION, GenerationParams(max_tokens=4, top_logprobs=3))
    assert again.cached and again.logprobs == out.logprobs


def test_n_above_one_returns_n_texts(server, tmp_path):
    # llama_cpp.server answers one choice whatever n is; the backend asks again until it has n.
    llm = openai_llm(server.base_url, tmp_path)
    out = llm.complete([{"role": "user", "content": "Name a colour."}],
                       GenerationParams(temperature=1.0, n=3, max_tokens=6))
    assert len(out.texts) == 3 and all(isinstance(t, str) for t in out.texts)
    assert out.completion_tokens > 0
    assert llm.ledger.snapshot().calls == 1  # one request to the client, however many HTTP calls


def test_the_cache_answers_while_the_server_is_down(server, tmp_path):
    # a downed server refuses the connection at once: the timeout only bounds a real answer on a busy machine
    llm = openai_llm(server.base_url, tmp_path, max_retries=0, timeout=300)
    first = llm.complete(QUESTION, GenerationParams(max_tokens=6))
    server.stop()
    try:
        assert server.models() is None  # really down
        again = llm.complete(QUESTION, GenerationParams(max_tokens=6))
        assert again.cached and again.texts == first.texts
        snap = llm.ledger.snapshot()
        assert snap.calls == 1 and snap.cache_hits == 1
        # a fresh client on the same cache file too
        assert openai_llm(server.base_url, tmp_path).complete(QUESTION, GenerationParams(max_tokens=6)).cached
        # while anything new cannot be answered
        with pytest.raises(BackendUnavailable, match="cannot reach"):
            llm.complete(QUESTION, GenerationParams(max_tokens=7))
        assert llm.ledger.snapshot().failures == 1
    finally:
        server.start()
    # and once it is back the same LLM object works again
    assert not llm.complete(QUESTION, GenerationParams(max_tokens=7)).cached


def test_a_wrong_model_name_is_served_anyway_by_llama_cpp_server(server, tmp_path):
    # llama_cpp.server with one model ignores the requested name and answers with that model
    # (echoing the requested name back). Servers that check names answer 404: see the stub tests below.
    llm = openai_llm(server.base_url, tmp_path, model="no-such-model")
    out = llm.complete(QUESTION, GenerationParams(max_tokens=6))
    assert out.text.strip()
    assert llm.backend.list_models() == [MODEL_ALIAS]
    # the name is part of the cache key, so the two never share entries
    right = openai_llm(server.base_url, tmp_path, model=MODEL_ALIAS)
    assert llm.key(QUESTION, GenerationParams(max_tokens=6)) != right.key(QUESTION, GenerationParams(max_tokens=6))
    assert not right.complete(QUESTION, GenerationParams(max_tokens=6)).cached


def test_check_connection_reports_success(server):
    msg = check_connection(LLMConfig(backend="openai", base_url=server.base_url, model=MODEL_ALIAS))
    assert msg.startswith(f"openai: {MODEL_ALIAS} @ {server.base_url} answered ")
    # then how structured replies are honoured: llama_cpp.server takes json_object with a schema
    assert re.search(r" in \d+\.\d\ds; structured replies: json_object \(accepted", msg), msg


def test_concurrent_requests_against_the_server(server, tmp_path):
    from judge_engine.llm import Request
    llm = openai_llm(server.base_url, tmp_path, concurrency=3)
    prompts = ["Say hello.", "Name a fruit.", "Count to three."]
    requests = [Request(({"role": "user", "content": p},), GenerationParams(max_tokens=5)) for p in prompts]
    seen = []
    out = llm.complete_many(requests, progress=lambda d, t: seen.append((d, t)))
    sequential = openai_llm(server.base_url, tmp_path, db="seq.db")
    assert [c.text for c in out] == [sequential.complete(r.messages, r.params).text for r in requests]
    assert seen[-1] == (3, 3) and llm.ledger.snapshot().calls == 3


# --------------------------------------------------------------------------- no server


def test_server_down_is_backend_unavailable_fast(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = openai_llm(url, tmp_path, max_retries=0, timeout=5)
    start = time.monotonic()
    with pytest.raises(BackendUnavailable, match="cannot reach") as info:
        llm.complete(QUESTION, GenerationParams(max_tokens=4))
    assert time.monotonic() - start < 5
    assert url in str(info.value)
    assert llm.ledger.snapshot().failures == 1 and llm.ledger.snapshot().calls == 0
    with pytest.raises(BackendUnavailable, match="cannot reach"):
        check_connection(LLMConfig(backend="openai", base_url=url, model=MODEL_ALIAS, max_retries=0, timeout=5))


def test_the_api_key_never_shows(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://127.0.0.1:{free_port()}/v1"
    llm = openai_llm(url, tmp_path, api_key=SECRET, max_retries=0, timeout=5)
    for obj in (llm, llm.backend, llm.config, llm.backend.client, llm.ledger):
        assert SECRET not in repr(obj) and SECRET not in str(obj)
    assert SECRET not in json.dumps(llm.config.to_dict())
    with pytest.raises(LLMError) as info:
        llm.complete(QUESTION, GenerationParams(max_tokens=4))
    shown = "".join(traceback.format_exception(info.value))
    assert SECRET not in str(info.value) and SECRET not in repr(info.value) and SECRET not in shown
    with pytest.raises(LLMError) as info:
        check_connection(llm.config, api_key=SECRET)
    assert SECRET not in "".join(traceback.format_exception(info.value))


def test_no_model_or_no_key_is_a_clear_error(monkeypatch):
    with pytest.raises(LLMError, match="model name"):
        OpenAIBackend("", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("MY_KEY_VAR", raising=False)
    with pytest.raises(LLMError, match="MY_KEY_VAR"):
        OpenAIBackend("gpt-4o-mini", "", api_key_env="MY_KEY_VAR")  # api.openai.com needs a key
    monkeypatch.setenv("MY_KEY_VAR", SECRET)
    assert OpenAIBackend("gpt-4o-mini", "", api_key_env="MY_KEY_VAR").where == "api.openai.com"


# --------------------------------------------------------------------------- scripted stub server
# Behaviours of stricter OpenAI-compatible servers (OpenAI, vLLM) that llama_cpp.server never shows.


class _Stub(BaseHTTPRequestHandler):
    model = "stub-model"
    key = "good-key"
    requests: list[dict] = []

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "x"}]})
        else:
            self._send(404, {"error": {"message": "no route"}})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).requests.append(body)
        if self.headers.get("Authorization") != f"Bearer {self.key}":
            return self._send(401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error",
                                              "code": "invalid_api_key"}})
        if body.get("model") != self.model:
            return self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist.",
                                              "type": "invalid_request_error", "code": "model_not_found"}})
        if body.get("logprobs"):
            return self._send(400, {"error": {"message": "logprobs are not supported by this server",
                                              "type": "invalid_request_error"}})
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": self.model,
                         "choices": [{"index": i, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": f"stub answer {i}"}}
                                     for i in range(body.get("n", 1))],
                         "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})


@pytest.fixture(scope="module")
def stub_url():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_unknown_model_error_names_it_and_what_is_served(stub_url, tmp_path):
    llm = openai_llm(stub_url, tmp_path, model="gpt-nonexistent", api_key="good-key", max_retries=0)
    with pytest.raises(LLMError) as info:
        llm.complete(QUESTION)
    msg = str(info.value)
    assert not isinstance(info.value, BackendUnavailable)
    assert "'gpt-nonexistent'" in msg and "not found" in msg and stub_url in msg and "stub-model" in msg


def test_a_rejected_key_is_named_without_showing_it(stub_url, tmp_path):
    llm = openai_llm(stub_url, tmp_path, model="stub-model", api_key=SECRET, max_retries=0)
    with pytest.raises(LLMError, match="rejected the API key") as info:
        llm.complete(QUESTION)
    assert SECRET not in "".join(traceback.format_exception(info.value))


def test_logprobs_degrade_cleanly_when_the_server_refuses_them(stub_url, tmp_path):
    llm = openai_llm(stub_url, tmp_path, model="stub-model", api_key="good-key", max_retries=0)
    assert llm.supports_logprobs
    out = llm.complete(QUESTION, GenerationParams(top_logprobs=5, n=2))
    assert out.texts == ("stub answer 0", "stub answer 1") and out.logprobs == ()
    assert llm.supports_logprobs is False
    # later requests no longer ask for them
    _Stub.requests.clear()
    llm.complete(QUESTION, GenerationParams(top_logprobs=5, max_tokens=3))
    assert len(_Stub.requests) == 1 and "logprobs" not in _Stub.requests[0]


def test_a_request_field_the_backend_does_not_send_is_refused_not_dropped():
    from judge_engine.llm.openai_backend import _post_chat

    with pytest.raises(ValueError, match="top_p"):
        _post_chat(object(), {"model": "m", "messages": [], "top_p": 0.5}, object)
