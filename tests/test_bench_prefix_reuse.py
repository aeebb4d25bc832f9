"""``python -m judge_engine.bench prefix-reuse``: the shared-prefix minimum, requests read back from a store,
and (model tier) a small store's calls replayed in the three arms with the same replies."""

from __future__ import annotations

import json
import os

import pytest

from judge_engine.bench.prefix_reuse import (ARMS, markdown, params_from_fields, run,
                                             shared_prefix_minimum, stored_requests)
from judge_engine.llm import GenerationParams
from judge_engine.llm.llamacpp import common_prefix_length as common_prefix

os.environ.setdefault("JUDGE_BENCH_QUIET", "1")


def test_common_prefix():
    assert common_prefix((1, 2, 3), (1, 2, 4, 5)) == 2
    assert common_prefix((), (1,)) == 0 and common_prefix((7, 8), (7, 8)) == 2


@pytest.mark.parametrize("prompts, minimum", [
    ([], 0),
    ([(1, 2, 3, 4, 5)], 5),  # nothing earlier: every token
    ([(1, 2, 3, 4, 5), (1, 2, 3, 4, 6)], 5 + 2),  # shares 4 tokens, but the last 2 are always evaluated
    ([(1, 2, 3, 4, 5), (1, 2, 3, 4, 5)], 5 + 2),  # a repeat evaluates its last 2
    ([(1, 2, 3, 4, 5, 6, 7), (1, 2, 9, 9, 9, 9, 9)], 7 + 5),  # shares 2: 5 new tokens
    # the longest common prefix is with a prompt two back, not the previous one (the one slot would miss it)
    ([(1, 2, 3, 4, 5, 6), (8, 8, 8), (1, 2, 3, 4, 5, 7)], 6 + 3 + 2),
    # a sorted neighbour that is not the best one: (1, 2, 3, 9) sorts between the two, shares 3 with the first
    ([(1, 2, 3, 4, 4, 4), (1, 2, 5), (1, 2, 3, 9)], 6 + 2 + 2),
    ([(5,), (5,), (5, 6)], 1 + 1 + 2),  # shorter than the 2-token suffix: its own length
    ([(1, 2, 3), (1, 2, 3, 4, 5, 6)], 3 + 3),  # extends an earlier prompt: the 3 new tokens
])
def test_shared_prefix_minimum_on_hand_made_prompts(prompts, minimum):
    assert shared_prefix_minimum(prompts, min_suffix=2) == minimum


def test_shared_prefix_minimum_matches_a_brute_force_search():
    import random

    rng = random.Random(0)
    prompts = [tuple(rng.choice((1, 2)) for _ in range(rng.randint(1, 8))) for _ in range(60)]
    expected = sum(len(p) - min(max([common_prefix(p, q) for q in prompts[:i]], default=0), max(len(p) - 2, 0))
                   for i, p in enumerate(prompts))
    assert shared_prefix_minimum(prompts, min_suffix=2) == expected


@pytest.mark.parametrize("params", [
    GenerationParams(),
    GenerationParams(max_tokens=12, stop=("\n", "###"), top_logprobs=5, seed=3),
    GenerationParams(temperature=0.7, n=3, sample_index=2, presence_penalty=0.5, json_schema='{"type":"object"}'),
])
def test_params_are_rebuilt_from_their_cache_fields(params):
    stored = json.loads(json.dumps(params.cache_fields()))  # as the llm_cache table keeps them
    assert params_from_fields(stored) == params


def _row(key: str, content: str, *, structured: str = "") -> tuple[str, dict, dict]:
    request = {"messages": [{"role": "user", "content": content}],
               "params": GenerationParams(max_tokens=4, stop=("\n",)).cache_fields()}
    if structured:
        request["structured"] = structured
    return key, request, {"texts": [f"reply to {content}"], "logprobs": []}


def test_stored_requests_in_the_order_they_were_made(store):
    from judge_engine.store import CallCache

    cache = CallCache(store)
    cache.put_many([_row("k9", "first"), _row("k1", "second", structured="grammar")], backend="llamacpp", model="m.gguf")
    cache.put_many([_row("k5", "other model")], backend="llamacpp", model="other.gguf")
    cache.put_many([_row("k0", "a server's")], backend="openai", model="m.gguf")
    cache.put_many([_row("k3", "third")], backend="llamacpp", model="m.gguf")
    requests, other = stored_requests(store, model_id="m.gguf")
    assert [r.messages[0]["content"] for r in requests] == ["first", "second", "third"]
    assert other == 1
    assert requests[0].params == GenerationParams(max_tokens=4, stop=("\n",))
    assert [r.structured for r in requests] == ["", "grammar", ""]
    assert requests[2].texts == ("reply to third",)
    assert [r.messages[0]["content"] for r in stored_requests(store, model_id="m.gguf", limit=2)[0]] == \
        ["first", "second"]


def test_a_store_without_embedded_calls_is_refused_before_the_model_loads(store, tmp_path):
    with pytest.raises(ValueError, match="no cached llamacpp request"):
        run(db=str(store.path))
    with pytest.raises(ValueError, match="no such database"):
        run(db=str(tmp_path / "missing.db"))


TEXTS = [
    "The harbour town of Westmere rebuilt its old stone pier after the winter storms of last year. Fishermen had "
    "complained for a decade that the pier was too short for the new boats, and the council finally agreed to "
    "extend it by forty metres, paid for by a regional grant and a small tax on summer visitors.",
    "A study of two hundred primary schools found that pupils who read aloud to a partner for ten minutes a day "
    "improved their reading scores more than those who read silently for twice as long. The authors caution that "
    "the schools chose the method themselves, so keen teachers may explain part of the difference.",
    "The museum's new exhibition brings together maps drawn by sailors between 1500 and 1700. Many show coasts "
    "that the mapmakers never saw, copied from rumours and older charts, and the curators have marked in red the "
    "islands that turned out not to exist at all.",
]
QUESTIONS = ["Summary: The text describes a local decision. Is the summary accurate? Answer yes or no.",
             "Summary: The text reports a finding. Rate the fluency of this summary from 1 to 5. Score:"]


@pytest.mark.model
def test_the_calls_of_a_store_evaluate_less_with_prefix_states_and_reply_the_same(tmp_path):
    from judge_engine.bench.__main__ import main
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.store import Store

    pytest.importorskip("llama_cpp")
    path = tmp_path / "runs.db"
    store = Store(path)
    llm = make_llm(LLMConfig(), store=store)
    params = GenerationParams(max_tokens=4, top_logprobs=5)
    # each question asked of every text in turn: the one slot never holds the text the next prompt starts with
    for question in QUESTIONS:
        for text in TEXTS:
            llm.complete([{"role": "user", "content": f"Text: {text}\n\n{question}"}], params)
    store.close()

    assert main(["--out", str(tmp_path), "prefix-reuse", "--db", str(path)]) == 0
    doc = json.loads((tmp_path / "prefix-reuse.json").read_text())
    assert doc["benchmark"] == "prefix-reuse" and doc["config"]["repeats"] == 1
    rows = {r["arm"]: r for r in doc["rows"]}
    assert list(rows) == list(ARMS)
    summary = doc["summary"]
    assert summary["requests"] == summary["model_calls"] == 6
    assert summary["identical"] is True and summary["first_mismatch"] is None
    assert summary["same_prompts_in_every_arm"] is True
    assert summary["stored_replies_matched"] == "6 of 6"
    assert all(r["mismatched_calls"] == 0 for r in rows.values())
    minimum, evaluated = summary["shared_prefix_minimum"], {a: r["evaluated_tokens"] for a, r in rows.items()}
    assert evaluated["cold"] == summary["prompt_tokens"]
    # the second question's prompts restore their text's prefix; the one slot reuses the chat template only
    assert minimum <= evaluated["prefix_states"] < evaluated["one_slot"] <= evaluated["cold"]
    assert rows["prefix_states"]["restored_tokens"] > 0
    assert all(r["model_busy_s"] > 0 for r in rows.values())
    assert "| prefix_states | " in markdown(doc)
