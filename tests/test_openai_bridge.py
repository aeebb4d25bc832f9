"""The OpenAI-compatible bridge a peer's own client is pointed at (issue 66 item 7): chat through the workbench's LLM
path (schema, cache, ledger), a refused request a 400 with the server's reason, embeddings forwarded or local."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.integrations.openai_bridge import OpenAIBridge, local_embeddings
from judge_engine.llm import LLMConfig, RequestRejected, make_llm
from judge_engine.structured import schema_of
from tests.scripted import fake_llm

SCHEMA = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_chat_goes_through_the_llm_path_with_its_schema_cache_and_ledger(store):
    seen = []

    def respond(messages, params):
        seen.append((messages, schema_of(params.json_schema)))
        return json.dumps({"result": 4})

    llm, backend = fake_llm(respond, store=store)
    body = {"model": "anything", "messages": [{"role": "system", "content": "Rate it."},
                                              {"role": "user", "content": [{"type": "text", "text": "the item"}]}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": SCHEMA}}}
    with OpenAIBridge(llm) as bridge:
        status, reply = post(bridge.base_url + "/chat/completions", body)
        again, _ = post(bridge.base_url + "/chat/completions", body)
        counts = bridge.counts()
    assert status == again == 200 and json.loads(reply["choices"][0]["message"]["content"]) == {"result": 4}
    assert seen == [([{"role": "system", "content": "Rate it."}, {"role": "user", "content": "the item"}], SCHEMA)]
    assert len(backend.calls) == 1 and llm.ledger.snapshot().cache_hits == 1, "the second one came from the cache"
    assert counts["chat_requests"] == 2 and counts["embeddings"] == "local", "a scripted backend has no embeddings"


def test_a_refused_request_is_a_400_with_the_servers_reason_and_tool_calls_are_refused(store):
    def refuse(messages, params):
        raise RequestRejected("refused", status=400, reason="over the model's context")

    llm, _ = fake_llm(refuse, store=store)
    with OpenAIBridge(llm) as bridge:
        status, reply = post(bridge.base_url + "/chat/completions", {"messages": [{"role": "user", "content": "x"}]})
        tools, said = post(bridge.base_url + "/chat/completions",
                           {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})
        assert bridge.counts()["failures"] == 1
    assert status == 400 and reply["error"]["message"] == "over the model's context"
    assert tools == 400 and "not tool calls" in said["error"]["message"]


def test_local_embeddings_put_texts_that_share_words_near():
    a, b, c = local_embeddings(["the cat sat on the mat", "the cat sat on a mat", "stock prices fell sharply"], 64)
    near, far = sum(x * y for x, y in zip(a, b)), sum(x * y for x, y in zip(a, c))
    assert sum(x * x for x in a) == pytest.approx(1.0) and near > 0.5 > far


@pytest.mark.server
def test_embeddings_are_forwarded_counted_and_cached_or_go_local_where_the_server_refuses(store, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    body = {"model": "text-embedding-3-small", "input": ["one text", "another text"], "dimensions": 32}
    with StubServer() as stub:
        llm = make_llm(LLMConfig(backend="openai", model=MODEL, base_url=stub.base_url), store=store)
        with OpenAIBridge(llm, embeddings="forward") as bridge:
            first = post(bridge.base_url + "/embeddings", body)
            second = post(bridge.base_url + "/embeddings", body)
            counts = bridge.counts()
        assert first[0] == second[0] == 200 and first[1]["data"] == second[1]["data"] and len(first[1]["data"]) == 2
        with OpenAIBridge(llm, embeddings="forward") as bridge:  # one text known, one new: only the new one is sent
            mixed = post(bridge.base_url + "/embeddings", {**body, "input": ["a third text", "one text"]})
        assert mixed[1]["data"][1]["embedding"] == first[1]["data"][0]["embedding"]
        assert stub.stats()["embedding_requests"] == 2
        assert mixed[1]["usage"]["prompt_tokens"] == 3, "the server's usage: the new text's three words"
        assert counts["embedding_requests"] == 1
        assert llm.ledger.snapshot().calls == 2 and llm.ledger.snapshot().cache_hits == 1
        assert llm.ledger.snapshot().prompt_tokens == 4 + 3, "the server's usage: four words, then three"
    # a server with no embeddings to give (here: nothing listens): auto answers the request here, and every later one
    llm = make_llm(LLMConfig(backend="openai", model=MODEL, base_url="http://127.0.0.1:9/v1", max_retries=0),
                   store=store)
    with OpenAIBridge(llm, embeddings="auto") as bridge:
        status, reply = post(bridge.base_url + "/embeddings", body)
        counts = bridge.counts()
    assert status == 200 and reply["model"] == "local-hashing" and len(reply["data"][0]["embedding"]) == 32
    assert counts["embeddings"] == "local" and "did not answer" in counts["fallback"]
    assert llm.ledger.snapshot().calls == 0, "nothing was answered by a server"
