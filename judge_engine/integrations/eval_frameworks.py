"""Eval frameworks out: the exported judge as an inspect_ai scorer and as a DeepEval metric.

Neither framework is a dependency: each is imported when its wrapper is made. Both report a reply with no score
the framework's own way, never as a number:

- inspect_ai: ``Score.unscored(reason=...)`` (a NaN value that its metrics and reducers skip), with the missing
  reason and the judge's fingerprint in the score's metadata;
- DeepEval: the metric's ``error`` holds the missing reason, ``score`` stays None and ``success`` is False
  (DeepEval's way for a metric that could not measure), as its own metrics do on an error.

DeepEval thresholds are on 0-1: the metric's ``score`` is the judge's score mapped from its human scale onto
0-1 (``score_breakdown["judge_score"]`` keeps the score on the judge's scale).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scoring import ItemJudge

if TYPE_CHECKING:
    from ..export import ExportedJudge
    from ..llm import LLM, LLMConfig


def _require(module: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{package} is not installed here; pip install {package}") from None


def inspect_scorer(exported: ExportedJudge, *, llm: LLMConfig | LLM | None = None,
                   db: str | Path | None = None) -> Any:
    """An inspect_ai scorer (made with ``@scorer(metrics=[mean(), stderr()])``) scoring each sample's input and
    the model's completion with the judge."""
    _require("inspect_ai", "inspect-ai")
    from inspect_ai.scorer import Score, mean, scorer, stderr

    judge = ItemJudge(exported, llm=llm, db=db)
    name = f"judge_workbench_{judge.aspect.get('name', 'score')}"

    @scorer(metrics=[mean(), stderr()], name=name)
    def judge_workbench() -> Any:
        async def score(state: Any, target: Any) -> Any:
            got = await asyncio.to_thread(judge, state.input_text, state.output.completion)
            metadata = {"judge_fingerprint": judge.fingerprint, "method": judge.judge.method}
            if got.missing:
                if hasattr(Score, "unscored"):
                    return Score.unscored(reason=got.missing_reason, explanation=got.explanation or None,
                                          metadata={**metadata, "missing_reason": got.missing_reason})
                return Score(value=float("nan"), explanation=got.explanation or None,
                             metadata={**metadata, "missing_reason": got.missing_reason})
            return Score(value=got.score, explanation=got.explanation or None, metadata=metadata)

        return score

    return judge_workbench()


def deepeval_metric(exported: ExportedJudge, *, threshold: float = 0.5, llm: LLMConfig | LLM | None = None,
                    db: str | Path | None = None) -> Any:
    """A DeepEval ``BaseMetric`` scoring a test case's ``input`` and ``actual_output`` with the judge; passes when
    the score mapped onto 0-1 reaches ``threshold``."""
    _require("deepeval", "deepeval")
    from deepeval.metrics import BaseMetric

    judge = ItemJudge(exported, llm=llm, db=db)
    title = f"Judge Workbench {judge.aspect.get('name', 'score')} ({judge.fingerprint})"

    class JudgeWorkbenchMetric(BaseMetric):
        def __init__(self) -> None:
            self.threshold = threshold
            self.include_reason = True
            self.async_mode = True
            self.strict_mode = False
            self.evaluation_model = f"judge-workbench {judge.judge.method}"

        def measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float | None:
            got = judge(test_case.input, test_case.actual_output)
            self.reason = got.explanation or None
            if got.missing:
                self.score, self.error, self.success = None, f"no score: {got.missing_reason}", False
                self.score_breakdown = {"judge_score": None, "missing_reason": got.missing_reason}
                return None
            self.error = None
            self.score = judge.normalized(got.score)
            self.score_breakdown = {"judge_score": got.score, "judge_fingerprint": judge.fingerprint}
            self.success = self.score >= self.threshold
            return self.score

        async def a_measure(self, test_case: Any, *args: Any, **kwargs: Any) -> float | None:
            return await asyncio.to_thread(self.measure, test_case)

        def is_successful(self) -> bool:
            return bool(self.success) and self.error is None

        @property
        def __name__(self) -> str:
            return title

    return JudgeWorkbenchMetric()
