"""§3.1 reward: r_h = mean of a - b (s - ŝ)^2 over S_h plus the UCB exploration term, and its bookkeeping."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Sequence

from ...records import Sample

if TYPE_CHECKING:  # Context asks this module for the reward's b: imported for the annotations only
    from .context import Context

def default_reward_b(scale: tuple[int, int]) -> float:
    """b = 1/(high - low)^2: the paper's 1/16 on 1-5, for any judge scale.

    The paper (B.1) sets a = 1, b = 1/16 "so that the exploitation term is
    bounded in [0, 1]": on a 1-5 scale the largest squared error is
    (5 - 1)^2 = 16. The same bound on a ``low``-``high`` scale needs
    b = 1/(high - low)^2 (1/4 on 1-3, 1/81 on 1-10); with 1/16 a 1-10 scale
    would give rewards down to 1 - 81/16 < -4 and a 1-3 scale would barely
    separate good from bad hypotheses.
    """
    low, high = scale
    return 1.0 / float(high - low) ** 2 if high > low else 1.0


def exploitation(entry: dict[str, Any], samples_by_id: dict[str, Sample], ctx: Context,
                 sample_ids: Sequence[str]) -> float | None:
    """Mean of ``a - b (s - ŝ)^2`` over the samples in S_h with a parsed score; None when none parsed.

    ``s`` and ``ŝ`` are on the judge scale and b follows it (:func:`default_reward_b`).
    """
    a, b = ctx.settings.reward_a, ctx.reward_b
    values = [a - b * (ctx.human(samples_by_id[i]) - entry["scores"][i]) ** 2
              for i in sample_ids if entry["scores"].get(i) is not None]
    return sum(values) / len(values) if values else None


def reward(acc: float | None, n_h: int, t_total: int, alpha: float) -> float | None:
    """UCB reward r_h = acc + alpha * sqrt(ln(t_total) / |S_h|) (natural log, paper code); None without data."""
    if acc is None or n_h <= 0:
        return None
    return acc + alpha * math.sqrt(math.log(max(t_total, 1)) / n_h)


def update_reward(entry: dict[str, Any], samples_by_id: dict[str, Sample], ctx: Context, t_total: int) -> None:
    """Recompute one hypothesis' reward over its S_h (the samples it was evaluated on with a parsed score)."""
    s_h = [i for i in entry["s_h"] if entry["scores"].get(i) is not None]
    entry["acc"] = exploitation(entry, samples_by_id, ctx, s_h)
    entry["n_evaluated"] = len(entry["s_h"])
    entry["reward"] = reward(entry["acc"], len(s_h), t_total, ctx.settings.alpha)


def by_reward(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Highest reward first; entries without a reward last; ties keep insertion order (ours)."""
    return sorted(entries, key=lambda e: -math.inf if e["reward"] is None else e["reward"], reverse=True)


def _reward_payload(e: dict[str, Any], sample_id: str | None, t_total: int) -> dict[str, Any]:
    return {"key": e["key"], "reward": e["reward"], "acc": e["acc"], "n_evaluated": e["n_evaluated"],
            "sample_id": sample_id, "t": t_total}
