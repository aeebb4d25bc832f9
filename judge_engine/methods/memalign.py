"""MLflow's own judge alignment, MemAlign (its default optimizer), as a peer baseline on the workbench's split.

A team on MLflow aligns a judge with ``make_judge(...).align(traces)``; this method runs exactly that on the
run's training items and scores its test items with MLflow's aligned judge, so Compare shows how each method
stands against what the team's platform offers, on the same items, backend and ledger. The work is MLflow's
(:mod:`judge_engine.integrations.memalign_peer`); its chat requests reach the run's LLM through a local
OpenAI-compatible bridge (:mod:`judge_engine.integrations.openai_bridge`), so they are cached and counted like
every method's. It needs MLflow's alignment API and DSPy (``pip install 'judge-workbench[integrations]' dspy``);
without them a run fails with one message naming what is missing.
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

from ..llm import LLM
from ..records import Aspect, Sample, Verdict
from .base import FitContext, Interval, Judge, Method, Options, Progress, Text, judge_warning, register


@register
class MemAlign(Method):
    """MLflow's MemAlign alignment (``judge.align(traces)`` with MLflow's default optimizer), as a baseline.

    Parameters
    ----------
    retrieval_k : int, default=5
        Feedback records shown to the judge with each item, the most similar ones by their embeddings
        (MemAlign's episodic memory; MLflow's default 5).
    embeddings : str, default='auto'
        Where the embeddings that find those records come from. ``forward``: the backend server's own
        ``/embeddings`` (what MLflow does; counted in the run's ledger, not cached). ``local``: hashed word and
        word-pair counts computed here, no call (lexical similarity, not MLflow's). ``auto``: ``forward`` until
        the server refuses, then ``local`` (the run's summary says so); ``local`` on a backend that is no server.
    embedding_model : str, default='text-embedding-3-small'
        The embedding model named in forwarded requests (MLflow's default).
    embedding_dim : int, default=512
        Dimensions of the embeddings (MLflow's default 512).
    """

    name = "memalign"
    title = "MLflow MemAlign (peer)"
    _parameter_constraints = {"retrieval_k": Interval(int, 1, 50), "embeddings": Options(("auto", "forward", "local")),
                              "embedding_dim": Interval(int, 8, 4096), "embedding_model": Text()}
    _parameter_labels = {"retrieval_k": "Feedback records shown per item", "embeddings": "Embeddings from",
                         "embedding_model": "Embedding model", "embedding_dim": "Embedding dimensions"}
    quick_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, *, retrieval_k: int = 5, embeddings: str = "auto",
                 embedding_model: str = "text-embedding-3-small", embedding_dim: int = 512):
        self.retrieval_k = retrieval_k
        self.embeddings = embeddings
        self.embedding_model = embedding_model
        self.embedding_dim = embedding_dim

    def _settings(self, params: dict[str, Any] | None = None) -> Any:
        from ..integrations.memalign_peer import PeerSettings

        p = params or self.get_params()
        return PeerSettings(retrieval_k=p["retrieval_k"], embeddings=p["embeddings"],
                            embedding_model=p["embedding_model"], embedding_dim=p["embedding_dim"])

    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        from ..integrations import memalign_peer

        self._validate_params()
        train = [s for s in train if aspect.name in s.human]
        if context.progress:
            context.progress(0, 1, "MLflow MemAlign: distilling guidelines")
        state, counts = memalign_peer.align(train, aspect, context.task, context.llm, self._settings())
        if context.log:
            context.log("peer_fit", {"peer": "mlflow MemAlign", **counts})
        if counts["fallback"]:
            state["warnings"] = [judge_warning("local_embeddings", f"MemAlign's examples were found by local "
                                               f"word-count embeddings, not an embedding model: {counts['fallback']}")]
        if context.progress:
            context.progress(1, 1, "MLflow MemAlign: distilling guidelines")
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(),
                     task=context.task.to_dict(), state=state)

    def estimate_calls(self, n_train: int, n_test: int, *, backend: str | None = None) -> dict[str, int]:
        from ..integrations.memalign_peer import estimate_calls

        return estimate_calls(n_train, n_test)

    def estimate_waves(self, n_train: int, n_test: int) -> dict[str, int]:
        return {"fit": 2 if n_train else 0, "score": 1}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        from ..integrations import memalign_peer

        settings = cls(**judge.params)._settings()
        verdicts, _ = memalign_peer.score(judge.state, judge.aspect_record, judge.task_info, samples, llm, settings,
                                          progress)
        return verdicts
