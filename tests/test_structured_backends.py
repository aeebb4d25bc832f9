"""Structured replies on every backend: what each one sends, what comes back, and how it is cached.

- the embedded llama.cpp backend with the REAL SmolLM2 (a few short calls): grammar-constrained JSON, and the
  score digit's position still carries its alternatives for probability-weighted scores;
- the openai backend against the REAL ``python -m llama_cpp.server`` (auto and json_object);
- the request bodies for OpenAI / vLLM servers against a recording HTTP stub on 127.0.0.1, checked against the
  documented formats (the ``openai`` package's request types, llama_cpp.server's response-format type);
- the vLLM offline backend against a stand-in ``vllm`` module that records its calls.
"""

from __future__ import annotations

import json
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from judge_engine import structured
from judge_engine.llm import LLM, GenerationParams, LLMConfig, LLMError, Request, cache_key, make_backend, make_llm
from judge_engine.llm.base import FREE_TEXT, Completion, request_schema
from judge_engine.llm.openai_backend import strict_compatible, structured_request
from judge_engine.parsing import read_weighted

sys.path.insert(0, str(Path(__file__).resolve().parent))

SCORE = structured.score_schema(1, 5)
SCORE_PARAM = structured.as_param(SCORE)
LIST = structured.string_list_schema(structured.HYPOTHESES, "hypotheses", min_items=2, max_items=4)
JUDGE = [{"role": "user", "content": (
    "Rate how fluent this sentence is on a scale of 1 to 5.\n"
    "Sentence: The cat sat quietly on the warm mat.\n"
    'Reply with JSON like {"score": N}.')}]


# --------------------------------------------------------------------------- schemas as sent


def test_properties_are_sent_in_the_order_the_method_asked_for():
    # the canonical text sorts keys (explanation < score); the required list keeps the asked order
    for order in ("before", "after"):
        schema = structured.score_schema(1, 5, explanation=order)
        sent = request_schema(structured.as_param(schema))
        assert list(sent["properties"]) == list(schema["properties"]) == schema["required"]
    assert request_schema("") is None


def test_strict_only_for_schemas_in_openais_strict_subset():
    assert strict_compatible(SCORE)  # a closed object with an enum
    assert not strict_compatible(LIST)  # minLength / maxLength are outside the subset
    assert not strict_compatible({"type": "object", "properties": {"a": {"type": "string"}}, "required": []})
    named = structured.named_items_schema(structured.CRITERIA, "criteria", min_items=1, max_items=3)
    assert not strict_compatible(named)  # nested strings with lengths


def test_each_mode_carries_the_schema_in_its_documented_place():
    body = structured_request("json_schema", SCORE)["response_format"]
    assert body == {"type": "json_schema", "json_schema": {"name": "score", "schema": SCORE, "strict": True}}
    assert structured_request("json_object", SCORE) == {"response_format": {"type": "json_object", "schema": SCORE}}
    assert structured_request("guided_json", SCORE) == {"extra_body": {"guided_json": SCORE}}
    assert structured_request("off", SCORE) == {} and structured_request(FREE_TEXT, SCORE) == {}
    assert structured_request("json_schema", None) == {}


def test_the_mode_enters_the_cache_key_of_schema_requests_only():
    plain = GenerationParams(max_tokens=8)
    constrained = plain.with_(json_schema=SCORE_PARAM)
    assert cache_key("b", "m", JUDGE, plain, "grammar") == cache_key("b", "m", JUDGE, plain)
    assert cache_key("b", "m", JUDGE, constrained, "json_schema") != cache_key("b", "m", JUDGE, constrained,
                                                                              "json_object")
    assert cache_key("b", "m", JUDGE, constrained, "off") != cache_key("b", "m", JUDGE, constrained, FREE_TEXT)


def test_an_unknown_mode_is_one_clear_error():
    with pytest.raises(LLMError, match="structured-reply mode 'xml'.*auto"):
        make_backend(LLMConfig(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", structured="xml"))


def test_completion_records_its_mode_and_free_text_records_stay_as_they_were():
    free = Completion(texts=("4",))
    assert "structured_mode" not in free.to_dict()
    done = Completion(texts=('{"score": 4}',), structured_mode="json_object")
    assert Completion.from_dict(done.to_dict()).structured_mode == "json_object"


# --------------------------------------------------------------------------- embedded llama.cpp, real model


@pytest.fixture(scope="module")
def embedded():
    pytest.importorskip("llama_cpp")
    return make_llm(LLMConfig())


@pytest.mark.model
def test_embedded_model_replies_in_the_schema_and_the_score_position_keeps_its_alternatives(embedded):
    out = embedded.complete(JUDGE, GenerationParams(max_tokens=24, top_logprobs=10, json_schema=SCORE_PARAM))
    assert out.structured_mode == "grammar"
    reading = structured.read_json(out.text, SCORE)
    assert reading.ok, (out.text, reading.error)
    digit = next(p for p in out.logprobs[0] if p["token"].strip().isdigit())
    assert int(digit["token"].strip()) == reading.value["score"]
    scale = {t.strip() for t in digit["top"]} & {"1", "2", "3", "4", "5"}
    assert len(scale) >= 3, digit["top"]  # several scale digits among the alternatives
    weighted = read_weighted(out.logprobs[0], 1, 5)
    assert weighted.source == "logprobs"
    assert 1.0 <= weighted.score <= 5.0 and sum(weighted.distribution.values()) == pytest.approx(1.0)
    # the weighted value comes from that position: its scale digits, renormalised
    mass = {int(t.strip()): v for t, v in digit["top"].items() if t.strip() in {"1", "2", "3", "4", "5"}}
    assert weighted.mass == pytest.approx(sum(__import__("math").exp(v) for v in mass.values()), rel=1e-6)


@pytest.mark.model
def test_embedded_logprobs_are_taken_before_the_grammar_mask(embedded):
    # the opening brace is forced by the grammar; unconstrained, the model would start with something else
    out = embedded.complete(JUDGE, GenerationParams(max_tokens=24, top_logprobs=5, json_schema=SCORE_PARAM))
    first = out.logprobs[0][0]
    assert first["token"] == "{" and max(first["top"].values()) > first["logprob"]


@pytest.mark.model
def test_embedded_grammar_follows_the_asked_property_order_and_is_built_once():
    pytest.importorskip("llama_cpp")
    from judge_engine.llm.llamacpp import grammar_for

    param = structured.as_param(structured.score_schema(1, 5, explanation="before"))
    grammar = grammar_for(param)
    assert grammar is grammar_for(param)  # cached per schema text
    root = next(line for line in grammar._grammar.splitlines() if line.startswith("root ::="))
    assert root.index("explanation") < root.index("score")


@pytest.mark.model
def test_embedded_off_sends_no_grammar(embedded):
    from judge_engine.llm.llamacpp import LlamaCppBackend

    off = LLM(LLMConfig(structured="off"), LlamaCppBackend(structured="off"))
    out = off.complete(JUDGE, GenerationParams(max_tokens=6, json_schema=SCORE_PARAM))
    assert out.structured_mode == "off" and embedded.backend.effective_structured_mode == "grammar"
    assert off.key(JUDGE, GenerationParams(max_tokens=6, json_schema=SCORE_PARAM)) != embedded.key(
        JUDGE, GenerationParams(max_tokens=6, json_schema=SCORE_PARAM))


# --------------------------------------------------------------------------- real llama_cpp.server

from llama_server import MODEL_ALIAS, llama_server_fixture  # noqa: E402

llama_server = llama_server_fixture(scope="module")


@pytest.mark.parametrize("mode", ["auto", "json_object"])
def test_llama_cpp_server_returns_json_of_the_schema(llama_server, tmp_path, mode):
    llm = make_llm(LLMConfig(backend="openai", base_url=llama_server.base_url, model=MODEL_ALIAS, structured=mode,
                             max_retries=0), store=_store(tmp_path))
    out = llm.complete(JUDGE, GenerationParams(max_tokens=24, json_schema=SCORE_PARAM))
    reading = structured.read_json(out.text, SCORE)
    assert reading.ok, (out.text, reading.error)
    # llama_cpp.server refuses response_format type json_schema (422) and honours json_object with a schema
    assert out.structured_mode == "json_object" and llm.backend.effective_structured_mode == "json_object"
    again = llm.complete(JUDGE, GenerationParams(max_tokens=24, json_schema=SCORE_PARAM))
    assert again.cached and again.text == out.text


def _store(tmp_path):
    from judge_engine.store import Store
    return Store(tmp_path / "wb.db")


# --------------------------------------------------------------------------- recording stub server

REJECT = {
    "json_schema": (400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this "
                         "model."),
    "json_object": (400, "Additional properties are not allowed ('schema' was unexpected) - 'response_format'"),
    "guided_json": (400, "Unrecognized request argument supplied: guided_json"),
}


def _mode_of(body: dict) -> str:
    fmt = body.get("response_format")
    if fmt:
        return fmt["type"]
    return "guided_json" if "guided_json" in body else FREE_TEXT


class _Recorder(BaseHTTPRequestHandler):
    accepts: set[str] = set()
    bodies: list[dict] = []
    fail_all: str = ""
    reject_status: int = 0
    """Answer refused formats with this status instead (llama_cpp.server: 500)."""
    fail_next: int = 0
    """Answer the next N requests with a 503 (a transient failure)."""

    def log_message(self, *args):
        pass

    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).bodies.append(body)
        if self.fail_all:
            return self._send(400, {"error": {"message": self.fail_all, "type": "invalid_request_error"}})
        if self.fail_next:
            type(self).fail_next -= 1
            return self._send(503, {"error": {"message": "overloaded, try again", "type": "server_error"}})
        mode = _mode_of(body)
        if mode != FREE_TEXT and mode not in self.accepts:
            status, message = REJECT[mode]
            return self._send(self.reject_status or status, {"error": {"message": message,
                                                                       "type": "invalid_request_error"}})
        content = '{"score": 4}' if mode != FREE_TEXT else "I would give it a 4."
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": content}}],
                         "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}})


@pytest.fixture
def stub():
    """A recording server; set ``stub.accepts`` to the formats it honours (the others get a 400)."""
    handler = type("Recorder", (_Recorder,), {"accepts": set(), "bodies": [], "fail_all": "", "reject_status": 0,
                                              "fail_next": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    handler.httpd = httpd
    yield handler
    httpd.shutdown()
    httpd.server_close()


def stub_llm(stub, mode="auto", store=None, retries=0):
    return make_llm(LLMConfig(backend="openai", base_url=stub.url, model="stub-model", structured=mode,
                              max_retries=retries), store=store)


def _documented(body: dict) -> None:
    """Validate a request body against the openai package's documented request type."""
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from pydantic import TypeAdapter

    TypeAdapter(CompletionCreateParamsNonStreaming).validate_python(body)


def test_json_schema_body_is_openais_documented_format(stub):
    stub.accepts = {"json_schema"}
    llm = stub_llm(stub, "json_schema")
    out = llm.complete(JUDGE, GenerationParams(max_tokens=16, json_schema=SCORE_PARAM))
    assert out.text == '{"score": 4}' and out.structured_mode == "json_schema"
    (body,) = stub.bodies
    _documented(body)
    spec = body["response_format"]["json_schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert spec["name"] == "score" and spec["schema"] == SCORE and spec["strict"] is True
    assert body["messages"] == JUDGE  # the prompt is sent unchanged
    stub.bodies.clear()
    llm.complete(JUDGE, GenerationParams(max_tokens=16, json_schema=structured.as_param(LIST)))
    spec = stub.bodies[0]["response_format"]["json_schema"]
    assert spec["name"] == structured.HYPOTHESES and spec["strict"] is False and spec["schema"] == LIST


def test_json_object_body_is_llama_cpp_servers_format(stub):
    from llama_cpp.llama_types import ChatCompletionRequestResponseFormat
    from pydantic import TypeAdapter

    stub.accepts = {"json_object"}
    stub_llm(stub, "json_object").complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    (body,) = stub.bodies
    fmt = TypeAdapter(ChatCompletionRequestResponseFormat).validate_python(body["response_format"])
    assert fmt == {"type": "json_object", "schema": SCORE}


def test_guided_json_is_a_top_level_body_field_for_vllm(stub):
    stub.accepts = {"guided_json"}
    stub_llm(stub, "guided_json").complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    (body,) = stub.bodies
    _documented(body)
    assert body["guided_json"] == SCORE and "response_format" not in body


@pytest.mark.parametrize("accepts,expected,sent", [
    ({"json_schema", "json_object", "guided_json"}, "json_schema", ["json_schema"]),
    ({"json_object"}, "json_object", ["json_schema", "json_object"]),
    ({"guided_json"}, "guided_json", ["json_schema", "json_object", "guided_json"]),
    (set(), FREE_TEXT, ["json_schema", "json_object", "guided_json", FREE_TEXT]),
])
def test_auto_tries_each_format_in_turn_and_keeps_the_first_accepted(stub, accepts, expected, sent):
    stub.accepts = accepts
    llm = stub_llm(stub)
    assert llm.backend.effective_structured_mode is None
    out = llm.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert [_mode_of(b) for b in stub.bodies] == sent
    assert out.structured_mode == expected == llm.backend.effective_structured_mode
    stub.bodies.clear()
    llm.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM, seed=1))
    assert [_mode_of(b) for b in stub.bodies] == [expected]  # remembered: one request
    stub.bodies.clear()
    llm.complete(JUDGE, GenerationParams(seed=2))  # free-text requests never carry a format
    assert [_mode_of(b) for b in stub.bodies] == [FREE_TEXT]


def test_a_format_refused_with_a_500_is_not_retried_while_learning(stub):
    # llama_cpp.server answers an unknown response_format type with a 500 naming the field
    stub.accepts, stub.reject_status = {"json_object"}, 500
    out = stub_llm(stub, retries=3).complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert [_mode_of(b) for b in stub.bodies] == ["json_schema", "json_object"]
    assert out.structured_mode == "json_object"


def test_a_transient_failure_while_learning_is_retried_not_taken_for_a_refusal(stub):
    stub.accepts, stub.fail_next = {"json_schema"}, 1
    llm = stub_llm(stub, retries=2)
    out = llm.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert [_mode_of(b) for b in stub.bodies] == ["json_schema", "json_schema"]
    assert out.structured_mode == "json_schema" == llm.backend.effective_structured_mode


def test_a_server_that_supports_no_format_gets_the_prompt_unchanged(stub):
    llm = stub_llm(stub)
    out = llm.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    last = stub.bodies[-1]
    assert "response_format" not in last and "guided_json" not in last and last["messages"] == JUDGE
    assert out.text == "I would give it a 4." and out.structured_mode == FREE_TEXT
    assert not structured.read_json(out.text, SCORE).ok  # the method falls back to its free-text parser


def test_an_error_that_is_not_about_the_format_teaches_auto_nothing(stub):
    stub.fail_all = "This model's maximum context length is 2048 tokens."
    llm = stub_llm(stub)
    with pytest.raises(LLMError, match="maximum context length"):
        llm.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert llm.backend.effective_structured_mode is None  # still unresolved, not stuck in free text


def test_a_configured_format_the_server_refuses_is_a_clear_error(stub):
    stub.accepts = {"json_object"}
    with pytest.raises(LLMError, match="refused structured replies sent as json_schema.*Settings"):
        stub_llm(stub, "json_schema").complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert len(stub.bodies) == 1


def test_off_never_sends_a_schema(stub):
    stub.accepts = {"json_schema", "json_object", "guided_json"}
    out = stub_llm(stub, "off").complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    assert [_mode_of(b) for b in stub.bodies] == [FREE_TEXT] and out.structured_mode == "off"


def test_the_learned_mode_is_in_the_cache_key_and_the_cache_answers_before_it_is_learned(stub, tmp_path):
    stub.accepts = {"json_object"}
    store = _store(tmp_path)
    first = stub_llm(stub, store=store)
    params = GenerationParams(json_schema=SCORE_PARAM)
    first.complete(JUDGE, params)
    assert first.key(JUDGE, params) == cache_key("openai", first.backend.model_id, JUDGE, params, "json_object")
    # a new worker has not learned the mode yet: it still finds the reply (under json_object) without a call
    stub.bodies.clear()
    second = stub_llm(stub, store=store)
    assert second.backend.effective_structured_mode is None and second.is_cached(JUDGE, params)
    out = second.complete(JUDGE, params)
    assert out.cached and out.structured_mode == "json_object" and stub.bodies == []
    hits = second.complete_many([Request(tuple(JUDGE), params)] * 2)
    assert all(h.cached for h in hits) and stub.bodies == []
    # free-text keys are the ones they always were
    plain = GenerationParams(max_tokens=9)
    assert second.key(JUDGE, plain) == cache_key("openai", second.backend.model_id, JUDGE, plain)


def test_connection_check_reports_the_accepted_format(stub):
    from judge_engine.llm import connection_check

    stub.accepts = {"json_object"}
    check = connection_check(LLMConfig(backend="openai", base_url=stub.url, model="stub-model", max_retries=0))
    assert check.structured_mode == "json_object"
    assert "json_object (accepted" in check.message


def test_settings_shows_the_mode_and_what_the_server_accepted(stub, db):
    from streamlit.testing.v1 import AppTest

    stub.accepts = {"guided_json"}
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60).run()
    at.switch_page("pages/settings.py").run()
    box = at.selectbox(key="_w_settings_structured")
    assert box.value == "auto" and "grammar built from its schema" in " ".join(c.value for c in at.caption)
    at.selectbox(key="_w_settings_backend").set_value("openai").run()
    assert "then json_object with a schema" in " ".join(c.value for c in at.caption)
    at.text_input(key="_w_settings_base_url").set_value(stub.url).run()
    at.text_input(key="_w_settings_model_openai").set_value("stub-model").run()
    at.number_input(key="_w_settings_max_retries").set_value(0).run()
    at.button(key="settings_test").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "guided_json (accepted" in at.success[0].value.replace("\\", "")
    at.run()
    assert any("guided_json" in i.value.replace("\\", "") for i in at.info)
    at.selectbox(key="_w_settings_structured").set_value("off").run()
    assert json.loads(at.json[0].value)["structured"] == "off"  # a field of the config stored with a run


# --------------------------------------------------------------------------- vLLM offline, stand-in module


def _fake_vllm(variant: str) -> types.ModuleType:
    """A stand-in ``vllm`` module whose LLM records every ``chat`` call."""
    vllm = types.ModuleType("vllm")
    sp_mod = types.ModuleType("vllm.sampling_params")

    class _Params:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class SamplingParams(_Params):
        pass

    if variant == "structured_outputs":
        sp_mod.StructuredOutputsParams = type("StructuredOutputsParams", (_Params,), {})
    elif variant == "guided_decoding":
        sp_mod.GuidedDecodingParams = type("GuidedDecodingParams", (_Params,), {})

    class _Out:
        def __init__(self, text):
            self.text, self.token_ids, self.logprobs = text, [1, 2], None

    class LLM:
        calls: list = []

        def __init__(self, model):
            self.model = model

        def chat(self, messages, sampling_params, use_tqdm=True):
            type(self).calls.append((messages, sampling_params))
            assert isinstance(messages, list) and isinstance(sampling_params, list)
            assert len(messages) == len(sampling_params)
            return [types.SimpleNamespace(prompt_token_ids=[0] * 5,
                                          outputs=[_Out('{"score": 3}' if getattr(sp, variant, None) else "3")])
                    for conv, sp in zip(messages, sampling_params)]

        def get_tokenizer(self):
            return types.SimpleNamespace(decode=lambda ids: "x")

    vllm.LLM, vllm.SamplingParams, vllm.sampling_params = LLM, SamplingParams, sp_mod
    return vllm


@pytest.fixture(params=["structured_outputs", "guided_decoding"])
def fake_vllm(request, monkeypatch):
    from judge_engine.llm import vllm_backend

    module = _fake_vllm(request.param)
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", module.sampling_params)
    monkeypatch.setattr(vllm_backend, "_ENGINES", {})
    module.variant = request.param
    return module


def test_vllm_sends_a_batch_as_one_chat_call_with_guided_decoding(fake_vllm, tmp_path):
    llm = make_llm(LLMConfig(backend="vllm", model="some/model"), store=_store(tmp_path))
    assert llm.backend.effective_structured_mode == fake_vllm.variant
    requests = [Request(({"role": "user", "content": f"item {i}"},), GenerationParams(json_schema=SCORE_PARAM))
                for i in range(5)]
    requests += [Request(({"role": "user", "content": "free"},), GenerationParams())]
    seen = []
    outs = llm.complete_many(requests, progress=lambda d, t: seen.append((d, t)))
    (call,) = fake_vllm.LLM.calls
    conversations, sampling = call
    assert [c[0]["content"] for c in conversations] == [f"item {i}" for i in range(5)] + ["free"]
    for sp in sampling[:5]:
        assert getattr(sp, fake_vllm.variant).json == SCORE
    assert getattr(sampling[5], fake_vllm.variant, None) is None  # no schema, no guided decoding
    assert [o.structured_mode for o in outs] == [fake_vllm.variant] * 5 + [""]
    assert [o.text for o in outs] == ['{"score": 3}'] * 5 + ["3"]
    assert seen[-1] == (6, 6) and llm.ledger.snapshot().calls == 6
    # everything is cached: a rerun makes no engine call
    again = llm.complete_many(requests)
    assert len(fake_vllm.LLM.calls) == 1 and all(o.cached for o in again)


def test_vllm_batches_at_most_max_batch_and_dedupes(fake_vllm, monkeypatch):
    llm = make_llm(LLMConfig(backend="vllm", model="some/model"))
    monkeypatch.setattr(llm.backend, "max_batch", 2)
    requests = [Request(({"role": "user", "content": f"item {i % 3}"},), GenerationParams()) for i in range(6)]
    outs = llm.complete_many(requests)
    assert [len(c[0]) for c in fake_vllm.LLM.calls] == [2, 1]  # 3 distinct requests, batches of 2
    assert len(outs) == 6 and sum(o.cached for o in outs) == 3


def test_vllm_off_and_a_vllm_without_guided_decoding_send_free_text(monkeypatch):
    from judge_engine.llm import vllm_backend

    module = _fake_vllm("none")
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(vllm_backend, "_ENGINES", {})
    plain = make_llm(LLMConfig(backend="vllm", model="m"))
    assert plain.backend.effective_structured_mode == FREE_TEXT
    assert plain.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM)).structured_mode == FREE_TEXT
    module = _fake_vllm("structured_outputs")
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(vllm_backend, "_ENGINES", {})
    off = make_llm(LLMConfig(backend="vllm", model="m", structured="off"))
    off.complete(JUDGE, GenerationParams(json_schema=SCORE_PARAM))
    (call,) = module.LLM.calls
    assert getattr(call[1][0], "structured_outputs", None) is None


# --------------------------------------------------------------------------- benchmark smoke run


@pytest.mark.model
def test_structured_benchmark_compares_the_two_arms_on_the_same_prompts(tmp_path, shared_data):
    pytest.importorskip("llama_cpp")
    from judge_engine.bench.__main__ import main

    assert main(["--out", str(tmp_path), "structured", "-n", "1", "--repeats", "1", "--max-tokens", "16"]) == 0
    doc = json.loads((tmp_path / "structured.json").read_text())
    rows = {r["arm"]: r for r in doc["rows"]}
    assert set(rows) == {"free", "grammar"}
    assert rows["grammar"]["modes"] == ["grammar"] and rows["free"]["modes"] == ["none"]
    assert rows["grammar"]["json_share"] == pytest.approx(1.0)  # 16 tokens hold {"score": N}
    assert doc["summary"]["grammar_vs_free_seconds_per_call"] > 0


def test_a_long_string_bound_is_left_out_of_the_grammar_and_kept_in_the_schema():
    from judge_engine import structured
    from judge_engine.llm.base import GRAMMAR_MAX_STRING_LENGTH, grammar_schema

    schema = structured.text_schema(structured.TASK_DESCRIPTION, "task_description", max_length=1200)
    short = structured.text_schema(structured.TASK_DESCRIPTION, "task_description", max_length=200)
    assert "maxLength" not in grammar_schema(schema)["properties"]["task_description"]
    assert grammar_schema(short)["properties"]["task_description"]["maxLength"] == 200 < GRAMMAR_MAX_STRING_LENGTH
    assert schema["properties"]["task_description"]["maxLength"] == 1200  # the reply is still checked against it


@pytest.mark.model
def test_embedded_model_answers_a_schema_with_a_long_string_bound(embedded):
    # llama.cpp aborted the process on the grammar of maxLength 1200 (Active-Critic's task description)
    from judge_engine import structured

    schema = structured.text_schema(structured.TASK_DESCRIPTION, "task_description", max_length=1200)
    out = embedded.complete([{"role": "user", "content": "Describe the task of rating summaries, as JSON."}],
                            GenerationParams(max_tokens=24, json_schema=structured.as_param(schema)))
    assert out.text.lstrip().startswith("{")


def test_grammar_servers_get_long_string_bounds_left_out_and_openai_gets_the_schema_whole():
    # llama_cpp.server died building the grammar of a 1,200-character bound (Active-Critic's task description)
    from judge_engine import structured
    from judge_engine.llm.openai_backend import structured_request as structured_kwargs

    schema = structured.text_schema(structured.TASK_DESCRIPTION, "task_description", max_length=1200)
    sent = structured_kwargs("json_object", schema)["response_format"]["schema"]
    assert "maxLength" not in sent["properties"]["task_description"]
    guided = structured_kwargs("guided_json", schema)["extra_body"]["guided_json"]
    assert "maxLength" not in guided["properties"]["task_description"]
    whole = structured_kwargs("json_schema", schema)["response_format"]["json_schema"]["schema"]
    assert whole["properties"]["task_description"]["maxLength"] == 1200


def test_a_presence_penalty_enters_the_cache_key_only_when_set():
    # requests without a penalty keep the keys they had before the field existed (the persistent cache stays valid)
    plain = GenerationParams(max_tokens=8, json_schema=SCORE_PARAM)
    assert "presence_penalty" not in plain.cache_fields()
    penalised = plain.with_(presence_penalty=1.5)
    assert penalised.cache_fields()["presence_penalty"] == pytest.approx(1.5)
    assert cache_key("b", "m", JUDGE, plain, "grammar") != cache_key("b", "m", JUDGE, penalised, "grammar")
