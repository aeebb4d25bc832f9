"""MLflow's own alignment (MemAlign) as a peer baseline on a run's split and backend (issue 66 item 7), against the
OpenAI-compatible stub answering as a judge that follows the humans: MLflow's distillation, its embeddings and its
judge all reach the stub, the chat requests through the workbench's LLM path (counted in the run's ledger, cached),
and the run stands in Compare's frame beside direct scoring on the same items."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("dspy", reason="MLflow's MemAlign runs on DSPy (requirements-dev)")
pytest.importorskip("mlflow.genai.judges.optimizers", reason="MLflow with the alignment API (requirements-dev)")

from judge_engine import compare, data  # noqa: E402
from judge_engine.bench.stub_server import MODEL, StubServer  # noqa: E402
from judge_engine.llm import LLMConfig  # noqa: E402
from judge_engine.runs import RunSpec, create_run, execute_run  # noqa: E402

pytestmark = pytest.mark.server

TRAIN, TEST = 12, 12


def test_memalign_fits_on_the_split_and_stands_in_compare_with_its_calls_counted(store, shared_data, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(shared_data))  # the stub's process reads the same benchmarks
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with StubServer(follow_humans="summeval", noise=0.5) as stub:
        llm = LLMConfig(backend="openai", model=MODEL, base_url=stub.base_url, concurrency=4,
                        price_prompt_per_1k=0.001, price_completion_per_1k=0.002)
        peer = create_run(store, RunSpec(method="memalign", dataset="summeval", aspect="coherence",
                                         train_size=TRAIN, test_size=TEST, seed=0, llm=llm))
        execute_run(store, peer)
        stats = stub.stats()
        run = store.run(peer)
        assert run.status == "finished", run.message
        direct = create_run(store, RunSpec(method="direct", dataset="summeval", aspect="coherence", train_size=TRAIN,
                                           test_size=TEST, seed=0, llm=llm), split=run.split)
        execute_run(store, direct)

    # every request MLflow sent reached the stub, the chat ones through the run's LLM: the ledger counted each one
    n_test = len(run.split.test_ids)
    assert run.ledger.calls == stats["chat_requests"] + stats["embedding_requests"]
    assert stats["chat_requests"] >= n_test + 1, "a distillation request, then one judge request per test item"
    fitted = store.run_events(peer, kind="peer_fit")[-1].payload
    assert fitted["embeddings"] == "forward" and fitted["embedding_requests"] >= 1 and fitted["chat_requests"] >= 1
    assert stats["embedding_requests"] > fitted["embedding_requests"], "the test items' queries are embedded"
    examples = run.judge["state"]["examples"]
    assert len(examples) == TRAIN and {e["outputs"] for e in examples} == \
        {s.output for s in store.load_dataset("summeval").subset(list(run.split.train_ids))}

    verdicts = store.load_verdicts(peer)
    assert {v.sample_id for v in verdicts} == set(run.split.test_ids)
    scored = [v for v in verdicts if not v.missing]
    assert len(scored) >= n_test - 1 and all(1 <= v.score <= 5 for v in scored)
    assert all(v.metadata.get("missing_reason") for v in verdicts if v.missing), "a missing score says why"

    dataset = store.load_dataset("summeval")
    aligned = compare.align(store, [store.run(peer), store.run(direct)])
    frame = compare.comparison_frame(store, dataset, aligned, level="sample", n_bootstrap=100).set_index("method")
    row = frame.loc["memalign"]
    assert row["fit calls"] == fitted["chat_requests"] + fitted["embedding_requests"]
    assert row["fit calls"] + row["score calls"] == run.ledger.calls
    assert row["tokens"] > 0 and row["dollars"] > 0
    assert math.isfinite(row["spearman"]) and frame.loc["direct", "n"] == row["n"] == n_test


def test_a_second_run_on_the_same_split_answers_from_the_cache(store, shared_data, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(shared_data))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    with StubServer(follow_humans="summeval", noise=0.5) as stub:
        llm = LLMConfig(backend="openai", model=MODEL, base_url=stub.base_url, concurrency=4)
        spec = RunSpec(method="memalign", dataset="summeval", aspect="coherence", train_size=6, test_size=4, seed=1,
                       llm=llm)
        first = create_run(store, spec)
        execute_run(store, first)
        sent = stub.stats()
        assert sent["embedding_requests"] >= 2, "the records at fit and scoring, and the queries, were embedded"
        again = create_run(store, spec)
        execute_run(store, again)
        assert stub.stats() == sent, "neither a chat nor an embeddings request was sent again"
    after = store.run(again).ledger
    # every chat request a hit; the embeddings requests group the queries of items scored at once differently from
    # run to run (the texts are cached one by one), so their number of hits is not the first run's number of calls
    assert after.calls == 0 and after.cache_hits >= 1 + len(store.run(again).split.test_ids)
    assert [v.score for v in store.load_verdicts(again)] == pytest.approx(
        [v.score for v in store.load_verdicts(first)], nan_ok=True)
