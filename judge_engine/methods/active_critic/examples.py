"""Active-Critic's scored examples (§2.2, §3): human scores on 0-100, mini-batches, and how an example
is shown in a prompt."""

from __future__ import annotations

import random
from typing import Any, Sequence

from ...prompting import TaskInfo, fence, shorten
from ...records import Aspect, Sample

DEMO_COUNT_BY_TASK = (("data-to-text", 8), ("data to text", 8), ("table", 8), ("restaurant", 8), ("story", 8))
"""App. D.2: 8 demonstrations for SFRES (data-to-text) and OpenMEVA (stories), 3 otherwise."""

# ----------------------------------------------------------------------------------------------- data

NORMALIZATIONS = ("ratio", "minmax")
"""How human scores go onto 0-100: ``100 * r / r_max`` (the paper's examples) or min-max over the range."""


def normalize_score(value: float, aspect: Aspect, mode: str = "ratio") -> float:
    """§2.2: a human score on the aspect's scale, put on 0-100.

    ``"ratio"`` (default, the paper's reading): ``100 * r / r_max``;
    ``"minmax"``: ``100 * (r - r_min) / (r_max - r_min)``.
    """
    if mode == "ratio":
        if aspect.high <= 0:
            raise ValueError(f"score normalization 'ratio' needs a positive scale maximum; aspect {aspect.name!r} "
                             f"ends at {aspect.high:g} (use score_normalization='minmax')")
        return 100.0 * float(value) / aspect.high
    if mode == "minmax":
        return 100.0 * (float(value) - aspect.low) / (aspect.high - aspect.low)
    raise ValueError(f"score normalization must be one of {list(NORMALIZATIONS)}, not {mode!r}")


def to_aspect_scale(score_100: float, aspect: Aspect, mode: str = "ratio") -> float:
    """A 0-100 judge score mapped back onto the aspect's scale: the inverse of :func:`normalize_score`.

    Linear and never clipped (NaN stays NaN), so correlations on the aspect's
    scale equal those on 0-100.
    """
    if mode == "ratio":
        return float(score_100) * aspect.high / 100.0
    if mode == "minmax":
        return aspect.low + float(score_100) * (aspect.high - aspect.low) / 100.0
    raise ValueError(f"score normalization must be one of {list(NORMALIZATIONS)}, not {mode!r}")


def render_example(sample: dict[str, Any], *, source_chars: int, with_score: bool = True) -> str:
    """One example as Source / Response (fenced) and, for training examples, the 0-100 human score."""
    parts = [fence("Source", shorten(sample["input"], source_chars))]
    if sample.get("context"):
        parts.append(fence("Context", shorten(sample["context"], source_chars)))
    parts.append(fence("Response", sample["output"]))
    if with_score:
        parts.append(f"Human Score: {sample['human_100']:.2f}")
    return "\n".join(parts)


def _example(sample: Sample, aspect: Aspect, mode: str = "ratio") -> dict[str, Any]:
    return {"sample_id": sample.id, "input": sample.input, "output": sample.output, "context": sample.context,
            "human_100": normalize_score(sample.human[aspect.name], aspect, mode)}


def make_minibatches(train: Sequence[Sample], *, batch_size: int, max_batches: int, seed: int) -> list[list[Sample]]:
    """§4.1: the shuffled training split cut into mini-batches of ``batch_size``, at most ``max_batches``."""
    order = list(train)
    random.Random(seed).shuffle(order)
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return batches[:max_batches]


def demo_count(task: TaskInfo) -> int:
    """App. D.2: 3 demonstrations for summarization and dialogue, 8 for data-to-text and stories."""
    name = task.task.lower()
    return next((n for key, n in DEMO_COUNT_BY_TASK if key in name), 3)


# ------------------------------------------------------------------------------------ stage 1: task


def scored_examples(samples: Sequence[Sample], aspect: Aspect, mode: str) -> list[dict[str, Any]]:
    """The samples that have a human score on ``aspect``, as examples with that score on 0-100."""
    return [_example(s, aspect, mode) for s in samples if aspect.name in s.human]


def training_batches(train: Sequence[Sample], aspect: Aspect, *, mode: str, batch_size: int, max_batches: int,
                     seed: int) -> list[list[dict[str, Any]]]:
    """§4.1's mini-batches (:func:`make_minibatches`) as scored examples; a batch left without one is dropped."""
    batches = [scored_examples(b, aspect, mode)
               for b in make_minibatches(train, batch_size=batch_size, max_batches=max_batches, seed=seed)]
    return [b for b in batches if b]


def shown_texts(examples: Sequence[dict[str, Any]]) -> list[str]:
    """Every text the training examples show (sources, responses, contexts): what the rubric checks measure
    copies against."""
    return [t for e in examples for t in (e["input"], e["output"], e.get("context") or "") if t]
