"""MLflow out: an exported judge as a scorer for ``mlflow.genai.evaluate(data=..., scorers=[...])``.

``jw.load_judge("judge.json").to_mlflow_scorer()`` (:meth:`~judge_engine.export.ExportedJudge.to_mlflow_scorer`)
is an MLflow scorer whose feedback on each row is the judge's score on its human scale, with its explanation as
the rationale. A reply with no score is no number: the feedback has no value and carries the missing reason as
its error, so MLflow counts it as an error instead of averaging a made-up score. The feedback's source is
``LLM_JUDGE`` with the judge's fingerprint (:func:`~judge_engine.score_files.judge_fingerprint`), so whoever
reads the assessments knows exactly which judge gave them. Every call goes through the workbench's LLM path and
its call cache (the database ``db``): scoring the same rows again costs nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .labels import text_of

if TYPE_CHECKING:
    from ..export import ExportedJudge
    from ..llm import LLM, LLMConfig

SOURCE_PREFIX = "judge-workbench:"
"""``AssessmentSource.source_id`` of a workbench judge's feedback: this, then the judge's fingerprint."""


def item_id(input_text: str, output_text: str) -> str:
    """A stable id for a row MLflow hands the scorer (it has none of its own)."""
    return hashlib.sha256(f"{input_text}\0{output_text}".encode("utf-8")).hexdigest()[:16]


def mlflow_scorer(exported: ExportedJudge, *, name: str | None = None, llm: LLMConfig | LLM | None = None,
                  db: str | Path | None = None) -> Any:
    """The scorer (see the module docstring); ``name`` defaults to the judge's aspect, ``llm`` and ``db`` as in
    :meth:`~judge_engine.export.ExportedJudge.score_table`."""
    from .mlflow_traces import require_mlflow

    require_mlflow()
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.genai.scorers import scorer

    from ..export import missing_reason
    from ..llm import LLM, make_llm
    from ..records import Sample
    from ..score_files import judge_fingerprint
    from ..store import Store

    judge = exported.judge
    fingerprint = judge_fingerprint(judge)
    client = llm if isinstance(llm, LLM) else make_llm(llm or exported.llm, store=Store(db))
    source = AssessmentSource(source_type="LLM_JUDGE", source_id=SOURCE_PREFIX + fingerprint)
    aspect = judge.aspect.get("name", "score")
    feedback_name = name or aspect

    def judge_workbench(inputs: Any = None, outputs: Any = None) -> Feedback:
        input_text, output_text = text_of(inputs), text_of(outputs)
        sample_id = item_id(input_text, output_text)
        sample = Sample(id=sample_id, input=input_text, output=output_text, group_id=sample_id)
        verdict = judge.score([sample], llm=client)[0]
        metadata = {"judge_fingerprint": fingerprint, "method": judge.method, "aspect": aspect,
                    "scale": f"{judge.aspect.get('low')}..{judge.aspect.get('high')}"}
        if verdict.missing:
            reason = missing_reason(verdict)
            return Feedback(name=feedback_name, value=None, error=f"no score: {reason}", source=source,
                            rationale=verdict.explanation or None, metadata={**metadata, "missing_reason": reason})
        return Feedback(name=feedback_name, value=float(verdict.score), source=source,
                        rationale=verdict.explanation or None, metadata=metadata)

    return scorer(judge_workbench, name=feedback_name,
                  description=f"Judge Workbench {judge.method} judge of {aspect} ({fingerprint})")
