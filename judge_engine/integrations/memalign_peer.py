"""MLflow's own judge alignment (MemAlign, ``judge.align(traces)``'s default optimizer) as a peer baseline.

MLflow 3.18 aligns a judge made with ``make_judge`` by :class:`~mlflow.genai.judges.optimizers.MemAlignOptimizer`
when ``align`` is given no optimizer: an LLM distils guidelines from the human feedback (semantic memory, by
DSPy through litellm), and every judged item is shown the ``retrieval_k`` most similar feedback records, found by
their embeddings (episodic memory). Here it runs on the workbench's training items as MLflow would run it on a
team's traces, and its judge scores the test items; every chat request MLflow sends goes through
:class:`~.openai_bridge.OpenAIBridge` to the run's LLM (cache, ledger, concurrency), embeddings as the bridge's
mode says.

The fitted judge keeps what MemAlign learned (the guidelines and the feedback records) as JSON; scoring builds
MLflow's :class:`MemoryAugmentedJudge` again from it. That fills two of its private attributes
(``_semantic_memory``, ``_episodic_memory``): its own way back reads the records from a tracking store. An
MLflow whose MemAlign keeps its memory elsewhere is refused with a message naming the version tested (3.18).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..llm import LLM, SendingStopped
from ..prompting import TaskInfo, judge_scale, to_aspect_range
from ..records import Aspect, Sample, Verdict
from .openai_bridge import BRIDGE_MODEL, OpenAIBridge, peer_environment

TESTED_MLFLOW = "3.18"
MODEL_URI = f"openai:/{BRIDGE_MODEL}"
DISTILL_BATCH = 50
"""Feedback records per guideline-distillation request (MemAlign's ``_MAX_RECORDS_PER_BATCH``)."""
EMBED_BATCH = 200
"""Texts per embeddings request (MemAlign's batch size for non-Databricks models)."""

Progress = Callable[[int, int, str], None]


class PeerUnavailable(ImportError):
    """MLflow's alignment, or DSPy which MemAlign runs on, is missing or not the kind tested."""


def peer_missing() -> str:
    """Why the peer cannot run here, in one line ("" when MLflow and DSPy are installed), without importing them:
    the pages ask it to offer the peer or say why not. :func:`require_memalign` checks MLflow's API itself."""
    import importlib.util

    if importlib.util.find_spec("mlflow") is None:
        return f"MLflow is not installed (pip install 'judge-workbench[integrations]'; tested with {TESTED_MLFLOW})"
    if importlib.util.find_spec("dspy") is None:
        return "DSPy, which MLflow's MemAlign runs on, is not installed (pip install dspy; tested with 3.4.1)"
    return ""


def require_memalign() -> Any:
    """MLflow's ``MemAlignOptimizer`` class; without MLflow's alignment API or DSPy, one message naming it."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm would fetch its price list at import
    try:
        import mlflow
        from mlflow.genai.judges.base import AlignmentOptimizer  # noqa: F401
    except ImportError as exc:
        raise PeerUnavailable(f"MLflow's alignment baseline needs MLflow with the alignment API "
                              f"(mlflow.genai.judges.base.AlignmentOptimizer; tested with {TESTED_MLFLOW}): "
                              f"pip install 'judge-workbench[integrations]' ({exc})") from exc
    try:
        import dspy  # noqa: F401
    except ImportError as exc:
        raise PeerUnavailable("MLflow's alignment baseline needs DSPy, which MLflow's MemAlign runs on: "
                              "pip install dspy (tested with dspy 3.4.1)") from exc
    try:
        from mlflow.genai.judges.optimizers import MemAlignOptimizer
        from mlflow.genai.judges.optimizers.memalign.optimizer import MemoryAugmentedJudge
    except ImportError as exc:
        raise PeerUnavailable(f"MLflow {mlflow.__version__} has no MemAlign optimizer (its default alignment "
                              f"since 3.x; tested with {TESTED_MLFLOW})") from exc
    missing = [a for a in ("_add_examples_to_memory", "_build_episodic_memory", "_initialize_dspy_components")
               if not hasattr(MemoryAugmentedJudge, a)]
    if missing:
        raise PeerUnavailable(f"MLflow {mlflow.__version__}'s MemAlign keeps its memory differently from the "
                              f"{TESTED_MLFLOW} the workbench was built against (no {', '.join(missing)})")
    return MemAlignOptimizer


@dataclass(frozen=True)
class PeerSettings:
    """MemAlign's parameters and where its embeddings come from."""

    retrieval_k: int = 5
    embeddings: str = "auto"
    embedding_model: str = "text-embedding-3-small"
    embedding_dim: int = 512


def _escape(text: str) -> str:
    """Text of the user's that goes into MLflow's instructions template: no template variables of its own."""
    return text.replace("{{", "{ {").replace("}}", "} }")


def instructions(aspect: Aspect, task: TaskInfo) -> str:
    """The judge's instructions for ``make_judge``, from the same aspect definition and task the methods use."""
    low, high = judge_scale(aspect)
    head = f"{_escape(task.task)}\n\n" if task.task else ""
    return (f"{head}Rate the {_escape(task.output_label.lower())} for {_escape(aspect.name)}: "
            f"{_escape(aspect.definition or aspect.name)}\nAnswer with a whole number from {low} (worst) to "
            f"{high} (best).\n\n{_escape(task.input_label)}: {{{{ inputs }}}}\n\n"
            f"{_escape(task.output_label)}: {{{{ outputs }}}}")


def on_judge_scale(value: float, aspect: Aspect) -> float:
    """A human score moved onto the judge's integer scale (the inverse of :func:`to_aspect_range`)."""
    low, high = judge_scale(aspect)
    if (low, high) == (aspect.low, aspect.high) or aspect.high == aspect.low:
        return float(value)
    return low + (value - aspect.low) * (high - low) / (aspect.high - aspect.low)


def _label(value: float) -> int | float:
    rounded = round(value, 2)
    return int(rounded) if float(rounded).is_integer() else rounded


def sample_input(sample: Sample) -> str:
    return sample.input if not sample.context else f"{sample.input}\n\n{sample.context}"


def trace_of(sample: Sample, aspect: Aspect) -> Any:
    """An in-memory MLflow trace of ``sample`` with its human score as one ``HUMAN`` feedback (no store)."""
    from mlflow.entities import Trace

    digest = hashlib.sha256(sample.id.encode("utf-8")).hexdigest()
    trace_id = f"tr-{digest[:32]}"
    stamp = "2026-01-01T00:00:00Z"
    span = {"trace_id": base64.b64encode(bytes.fromhex(digest[:32])).decode(),
            "span_id": base64.b64encode(bytes.fromhex(digest[32:48])).decode(), "parent_span_id": None,
            "name": "item", "start_time_unix_nano": 1, "end_time_unix_nano": 2,
            "status": {"code": "STATUS_CODE_OK", "message": ""},
            "attributes": {"mlflow.traceRequestId": json.dumps(trace_id), "mlflow.spanType": '"UNKNOWN"',
                           "mlflow.spanInputs": json.dumps(sample_input(sample)),
                           "mlflow.spanOutputs": json.dumps(sample.output)}}
    feedback = {"assessment_id": f"a-{digest[:16]}", "assessment_name": aspect.name, "trace_id": trace_id,
                "source": {"source_type": "HUMAN", "source_id": "humans"}, "create_time": stamp,
                "last_update_time": stamp, "valid": True,
                "feedback": {"value": _label(on_judge_scale(sample.human[aspect.name], aspect))}}
    return Trace.from_dict({"info": {"trace_id": trace_id, "request_time": stamp, "state": "OK",
                                     "trace_location": {"type": "MLFLOW_EXPERIMENT",
                                                        "mlflow_experiment": {"experiment_id": "0"}},
                                     "assessments": [feedback]},
                            "data": {"spans": [span]}})


def _base_judge(aspect: Aspect, task: TaskInfo) -> Any:
    from mlflow.genai.judges import make_judge

    return make_judge(name=aspect.name, instructions=instructions(aspect, task), model=MODEL_URI,
                      feedback_value_type=int)


def _quiet_dspy() -> None:
    """DSPy's own disk and memory caches off: the workbench's cache answers repeats, and counts them."""
    import dspy

    dspy.configure_cache(enable_disk_cache=False, enable_memory_cache=False)


def _bridge(llm: LLM, settings: PeerSettings) -> OpenAIBridge:
    return OpenAIBridge(llm, embeddings=settings.embeddings)


def _embedding_uri(settings: PeerSettings) -> str:
    return f"openai:/{settings.embedding_model}"


def align(train: Sequence[Sample], aspect: Aspect, task: TaskInfo, llm: LLM,
          settings: PeerSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run MemAlign on ``train``: the judge's state (what it learned) and the bridge's counts."""
    memalign = require_memalign()
    if not train:
        raise ValueError("MemAlign learns from human feedback: a run with no training items has nothing to align with")
    _quiet_dspy()
    traces = [trace_of(s, aspect) for s in train]
    with _bridge(llm, settings) as bridge, peer_environment(bridge):
        optimizer = memalign(reflection_lm=MODEL_URI, retrieval_k=settings.retrieval_k,
                             embedding_model=_embedding_uri(settings), embedding_dim=settings.embedding_dim)
        try:
            aligned = optimizer.align(_base_judge(aspect, task), traces)
        finally:
            _raise_if_stopped(bridge)
        counts = bridge.counts()
    examples = [{k: str(v) for k, v in dict(ex).items() if k in ("inputs", "outputs", "result", "rationale")}
                for ex in aligned._episodic_memory]
    guidelines = [{"guideline_text": g.guideline_text, "source_trace_ids": list(g.source_trace_ids or [])}
                  for g in aligned._semantic_memory]
    state = {"instructions": instructions(aspect, task), "guidelines": guidelines, "examples": examples,
             "embeddings": counts["embeddings"], "embeddings_fallback": counts["fallback"],
             "mlflow_optimizer": "MemAlignOptimizer"}
    return state, counts


def _rebuilt(state: dict[str, Any], aspect: Aspect, task: TaskInfo, settings: PeerSettings) -> Any:
    """MLflow's memory-augmented judge with the state's guidelines and feedback records."""
    import dspy
    from mlflow.genai.judges.optimizers.memalign.optimizer import MemoryAugmentedJudge
    from mlflow.genai.judges.optimizers.memalign.utils import Guideline

    judge = MemoryAugmentedJudge(base_judge=_base_judge(aspect, task), reflection_lm=MODEL_URI,
                                 retrieval_k=settings.retrieval_k, embedding_model=_embedding_uri(settings),
                                 embedding_dim=settings.embedding_dim)
    judge._semantic_memory = [Guideline(guideline_text=g["guideline_text"],
                                        source_trace_ids=g.get("source_trace_ids") or None)
                              for g in state.get("guidelines", [])]
    judge._episodic_memory = [dspy.Example(**ex).with_inputs("inputs", "outputs") for ex in state.get("examples", [])]
    if judge._episodic_memory:
        judge._build_episodic_memory()
    return judge


def score(state: dict[str, Any], aspect: Aspect, task: TaskInfo, samples: Sequence[Sample], llm: LLM,
          settings: PeerSettings, progress: Progress | None = None) -> tuple[list[Verdict], dict[str, Any]]:
    """MLflow's aligned judge on ``samples``: one verdict each (a reply with no score is missing), and the counts."""
    require_memalign()
    _quiet_dspy()
    settings = PeerSettings(settings.retrieval_k, state.get("embeddings", "local") if settings.embeddings == "auto"
                            else settings.embeddings, settings.embedding_model, settings.embedding_dim)
    scale = judge_scale(aspect)
    with _bridge(llm, settings) as bridge, peer_environment(bridge):
        judge = _rebuilt(state, aspect, task, settings)
        done = [0]

        def one(sample: Sample) -> Verdict:
            try:
                feedback = judge(inputs=sample_input(sample), outputs=sample.output)
                verdict = _verdict(sample, aspect, scale, feedback.value, feedback.error, feedback.rationale)
            except Exception as exc:  # MLflow raises on a reply it cannot read: that item is missing, not the run
                verdict = _verdict(sample, aspect, scale, None, f"{type(exc).__name__}: {exc}", None)
            _raise_if_stopped(bridge)  # a stopped run's items are not missing: the run stops
            done[0] += 1
            if progress:
                progress(done[0], len(samples), "scoring")
            return verdict

        workers = max(1, min(int(llm.config.concurrency or 1), 8, len(samples) or 1))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="memalign-score") as pool:
            verdicts = list(pool.map(one, samples))
        counts = bridge.counts()
    return verdicts, counts


def _raise_if_stopped(bridge: OpenAIBridge) -> None:
    """A stopped run, or a backend that failed as a backend (not one item), stops the peer as it stops any run."""
    if bridge.stopped:
        raise SendingStopped("the run was stopped while MLflow's MemAlign was sending its requests")
    if bridge.fatal is not None:
        raise bridge.fatal


def _verdict(sample: Sample, aspect: Aspect, scale: tuple[int, int], value: Any, error: Any,
             rationale: Any) -> Verdict:
    reason = ""
    if error:
        reason = f"MLflow's judge gave no score: {getattr(error, 'error_message', None) or error}"
    elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        reason = f"MLflow's judge gave no number: {value!r}"
    elif not scale[0] <= float(value) <= scale[1]:
        reason = f"MLflow's judge gave {value}, outside the scale {scale[0]}-{scale[1]}"
    if reason:
        return Verdict(sample_id=sample.id, aspect=aspect.name, score=math.nan, explanation=str(rationale or ""),
                       raw=json.dumps({"value": str(value)}), metadata={"source": "missing",
                                                                         "missing_reason": reason[:500]})
    return Verdict(sample_id=sample.id, aspect=aspect.name, score=to_aspect_range(float(value), scale, aspect),
                   explanation=str(rationale or ""), raw=json.dumps({"value": value}),
                   metadata={"source": "mlflow_feedback"})


def estimate_calls(n_train: int, n_test: int) -> dict[str, int]:
    """Requests to the backend, at most: a distillation request per batch of feedback records (and its retry
    without a schema where the server refuses the schema), the embeddings of the records, then per test item
    one judge request and one embeddings request for its query (embeddings only where they are forwarded)."""
    batches = math.ceil(n_train / DISTILL_BATCH) if n_train else 0
    corpus = math.ceil(n_train / EMBED_BATCH) if n_train else 0
    return {"fit": 2 * batches + corpus, "score": 2 * n_test + corpus}
