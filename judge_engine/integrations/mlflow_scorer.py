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

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..export import ExportedJudge
    from ..llm import LLM, LLMConfig

SOURCE_PREFIX = "judge-workbench:"
"""``AssessmentSource.source_id`` of a workbench judge's feedback: this, then the judge's fingerprint."""


def mlflow_scorer(exported: ExportedJudge, *, name: str | None = None, llm: LLMConfig | LLM | None = None,
                  db: str | Path | None = None) -> Any:
    """The scorer (see the module docstring); ``name`` defaults to the judge's aspect, ``llm`` and ``db`` as in
    :meth:`~judge_engine.export.ExportedJudge.score_table`."""
    from .mlflow_traces import require_mlflow

    require_mlflow()
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.genai.scorers import scorer

    from .scoring import ItemJudge

    judge = ItemJudge(exported, llm=llm, db=db)
    source = AssessmentSource(source_type="LLM_JUDGE", source_id=SOURCE_PREFIX + judge.fingerprint)
    aspect = judge.aspect.get("name", "score")
    feedback_name = name or aspect
    metadata = {"judge_fingerprint": judge.fingerprint, "method": judge.judge.method, "aspect": aspect,
                "scale": f"{judge.low:g}..{judge.high:g}"}

    def judge_workbench(inputs: Any = None, outputs: Any = None) -> Feedback:
        got = judge(inputs, outputs)
        if got.missing:
            return Feedback(name=feedback_name, value=None, error=f"no score: {got.missing_reason}", source=source,
                            rationale=got.explanation or None,
                            metadata={**metadata, "missing_reason": got.missing_reason})
        return Feedback(name=feedback_name, value=got.score, source=source, rationale=got.explanation or None,
                        metadata=metadata)

    return scorer(judge_workbench, name=feedback_name,
                  description=f"Judge Workbench {judge.judge.method} judge of {aspect} ({judge.fingerprint})")
