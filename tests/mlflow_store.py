"""A local MLflow tracking store (sqlite) with 40 traces labelled by two annotators, for the integration tests.

Every trace answers a question; ``alice`` and ``bob`` give ``helpfulness`` on 1-5 (bob one point apart from
alice on every third trace), both say whether it is ``on_topic`` (boolean) and give its ``tone`` (a
category). The last four traces have no human label; two carry an LLM judge's ``helpfulness`` instead.
``mixed`` holds a number on some traces and a word on others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

N_TRACES = 40
UNLABELLED = 4


def alice_score(i: int) -> int:
    return 1 + (i * 7) % 5


def bob_score(i: int) -> int:
    return min(5, alice_score(i) + 1) if i % 3 == 0 else alice_score(i)


@dataclass(frozen=True)
class TrackingStore:
    uri: str
    path: Path
    experiment: str
    trace_ids: tuple[str, ...]
    """In the order logged: the last UNLABELLED have no human label."""


def make_tracking_store(folder: Path, experiment: str = "support-bot") -> TrackingStore:
    import mlflow
    from mlflow.entities import AssessmentSource

    path = folder / "mlflow.db"
    uri = f"sqlite:///{path}"
    mlflow.set_tracking_uri(uri)
    # the traces' artifacts go beside the store, not into ./mlruns of whatever folder the tests run from
    mlflow.create_experiment(experiment, artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment)
    ids = []
    for i in range(N_TRACES):
        with mlflow.start_span(name="answer") as span:
            span.set_inputs({"question": f"How do I reset password number {i}?"})
            span.set_outputs({"answer": f"Open settings and press reset {'twice ' * (i % 5)}(answer {i})."})
        ids.append(span.trace_id)
    mlflow.flush_trace_async_logging()
    for i, trace_id in enumerate(ids):
        if i >= N_TRACES - UNLABELLED:
            if i % 2:
                mlflow.log_feedback(trace_id=trace_id, name="helpfulness", value=3,
                                    source=AssessmentSource(source_type="LLM_JUDGE", source_id="gpt-judge"))
            continue
        for who, score in (("alice", alice_score(i)), ("bob", bob_score(i))):
            human = AssessmentSource(source_type="HUMAN", source_id=who)
            mlflow.log_feedback(trace_id=trace_id, name="helpfulness", value=score, source=human,
                                rationale=f"{who} read it")
            mlflow.log_feedback(trace_id=trace_id, name="on_topic", value=i % 4 != 0, source=human)
            mlflow.log_feedback(trace_id=trace_id, name="tone", value=("curt", "neutral", "warm")[i % 3],
                                source=human)
        mlflow.log_feedback(trace_id=trace_id, name="mixed", value=4 if i % 2 else "good",
                            source=AssessmentSource(source_type="HUMAN", source_id="alice"))
    return TrackingStore(uri, path, experiment, tuple(ids))
