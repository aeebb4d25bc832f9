"""One item scored by an exported judge, as every framework wrapper asks for it.

MLflow, inspect_ai and DeepEval each hand a scorer one item at a time (an input and an output, in their own
shapes); :class:`ItemJudge` scores it through the workbench's LLM path and call cache and returns an
:class:`ItemScore`: the score on the judge's human scale, or none with the reason, never a number made up for a
reply that gave none. Each wrapper then reports it the framework's way.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .labels import text_of

if TYPE_CHECKING:
    from ..export import ExportedJudge
    from ..llm import LLM, LLMConfig


@dataclass(frozen=True)
class ItemScore:
    score: float | None
    """On the judge's human scale; None when the reply gave no score."""
    explanation: str
    missing_reason: str
    """Why there is no score ("" when there is one)."""

    @property
    def missing(self) -> bool:
        return self.score is None


def item_id(input_text: str, output_text: str) -> str:
    """A stable id for an item a framework hands over (it has none the judge could use)."""
    return hashlib.sha256(f"{input_text}\0{output_text}".encode("utf-8")).hexdigest()[:16]


class ItemJudge:
    """An exported judge that scores one item at a time through the LLM path and the call cache in ``db``."""

    def __init__(self, exported: ExportedJudge, *, llm: LLMConfig | LLM | None = None,
                 db: str | Path | None = None):
        from ..llm import LLM, make_llm
        from ..score_files import judge_fingerprint
        from ..store import Store

        self.judge = exported.judge
        self.fingerprint = judge_fingerprint(self.judge)
        self.llm = llm if isinstance(llm, LLM) else make_llm(llm or exported.llm, store=Store(db))
        self.aspect = dict(self.judge.aspect)

    @property
    def low(self) -> float:
        return float(self.aspect.get("low", 0.0))

    @property
    def high(self) -> float:
        return float(self.aspect.get("high", 1.0))

    def normalized(self, score: float) -> float:
        """A score on 0-1 (for frameworks whose thresholds are on 0-1)."""
        return (score - self.low) / (self.high - self.low) if self.high > self.low else 0.0

    def __call__(self, inputs: Any, outputs: Any) -> ItemScore:
        from ..records import missing_reason
        from ..records import Sample

        input_text, output_text = text_of(inputs), text_of(outputs)
        sample_id = item_id(input_text, output_text)
        sample = Sample(id=sample_id, input=input_text, output=output_text, group_id=sample_id)
        verdict = self.judge.score([sample], llm=self.llm)[0]
        if verdict.missing:
            return ItemScore(None, verdict.explanation, missing_reason(verdict))
        return ItemScore(float(verdict.score), verdict.explanation, "")
