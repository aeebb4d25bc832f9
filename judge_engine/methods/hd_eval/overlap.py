"""What of an HD-Eval fit can be in flight at once (issue 67 item 3): stages that quote nothing still being made.

Two stages of Algorithm 1 wait for work they do not read. Layer 2 decomposes every layer-1 aspect whatever
its importance (App. C.2), so its decompositions, and the scoring of the children they give, quote only the
aspects: they are sent beside layer 1's scoring instead of after it (the layer-1 scores feed only the
aggregators). And the judge's scoring of the test items quotes the tree and the criteria its aggregator keeps,
both final once the last layer's training scores are in: those requests are sent while the last aggregator and
its importance are fitted (seconds of CPU with the MLP), and the run's scoring finds them in the cache.

Either way every request is the one the stages one after another send (same prompt, same cache key), and the
records and events come in the same order; only when requests are sent changes. Both only where calls go out
several at a time: a backend that answers one call at a time gains nothing, and a client without a cache could
not hand the early answers to the run's scoring.
"""

from __future__ import annotations

import copy
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ...llm import LLM
from ...records import Sample
from ..base import Progress
from .decomposition import LayerDecomposition, decompose_layer
from .scoring import hierarchy_aware_scoring
from .settings import HDEvalSettings
from .tree import tree_index


def overlaps(llm: LLM) -> bool:
    """Whether ``llm`` has several calls in flight at once (what sending stages together gains from)."""
    return (llm.config.concurrency or 1) > 1 and not getattr(llm.backend, "serialises_calls", False)


def layer_features(tree: dict[str, Any], layer: int) -> list[str] | None:
    """The aggregator's inputs at ``layer``: every node so far that feeds it (None: the layer grew no node)."""
    nodes = tree_index(tree)
    features = [nid for nid, n in nodes.items() if n["layer"] <= layer and n.get("in_aggregator", True)]
    if layer > 1 and not any(nodes[f]["layer"] == layer for f in features):
        return None
    return features


@dataclass
class LayerAhead:
    """Layer 2 made beside layer 1's scoring: its decompositions grow a copy of the tree (layer 1's scoring
    and records read the tree as it was), then the children they gave are scored; its events are held
    (:attr:`held`) to come where one stage after another puts them."""

    tree: dict[str, Any]
    """The tree layer 2 grows; it replaces the fit's tree once :attr:`work` is done."""
    held: list[tuple[str, dict[str, Any]]]
    work: Future
    """``(decomposed, features, new, scores)`` of layer 2 (``features`` None: it grew no node)."""

    def result(self) -> tuple[LayerDecomposition, list[str] | None, list[str], dict[str, Any]]:
        return self.work.result()


def layer_two_ahead(pool: ThreadPoolExecutor, tree: dict[str, Any], chosen: Sequence[str], scored: Sequence[str],
                    train: Sequence[Sample], settings: HDEvalSettings, *, task: Any, llm: LLM, form: str,
                    shown: Sequence[str], progress: Progress | None) -> LayerAhead:
    """Start layer 2's decompositions of ``chosen`` and the scoring of their children on ``pool`` (``scored``:
    layer 1's criteria, whose scores the fit's own thread is getting)."""
    grown = copy.deepcopy(tree)
    held: list[tuple[str, dict[str, Any]]] = []

    def hold(kind: str, payload: dict[str, Any]) -> None:
        held.append((kind, payload))

    def work():
        decomposed = decompose_layer(grown, chosen, 2, settings, task=task, llm=llm, form=form, shown=shown,
                                     emit=hold, progress=progress)
        features = layer_features(grown, 2)
        if features is None:
            return decomposed, None, [], {}
        new = [f for f in features if f not in set(scored)]
        scores = hierarchy_aware_scoring(train, new, grown, task=task, llm=llm, settings=settings,
                                         progress=progress, stage=f"layer 2: scoring {len(new)} criteria")
        return decomposed, features, new, scores

    return LayerAhead(grown, held, pool.submit(work))


def kept_features(values: dict[str, list[float]], features: Sequence[str]) -> list[str]:
    """The features an aggregator fitted on ``values`` keeps (:meth:`judge_engine.aggregate.Aggregator.fit`
    drops those no training item has a score for), in its order."""
    return [f for f in features if not all(math.isnan(v) for v in values[f])]


def score_test_ahead(pool: ThreadPoolExecutor, samples: Sequence[Sample], features: Sequence[str],
                     tree: dict[str, Any], settings: HDEvalSettings, *, task: Any, llm: LLM,
                     before: Callable[[], None] | None = None, progress: Progress | None = None) -> Future:
    """Send the judge's scoring requests of ``samples`` on ``features`` now, on ``pool``: the answers go to the
    client's cache, where the run's scoring of the same items finds them. ``before`` is called first (the run
    takes what the fit cost there: every request after it is the test scoring's)."""
    frozen = copy.deepcopy(tree)

    def work():
        if before is not None:
            before()
        hierarchy_aware_scoring(samples, list(features), frozen, task=task, llm=llm, settings=settings,
                                progress=progress, stage=f"scoring the {len(samples)} test items beside the last "
                                                         "aggregator's fit")

    return pool.submit(work)


class HeldProgress:
    """``progress`` of a stage in flight beside another: held until :meth:`release`, then passed on. Of two stages
    in flight at once one reports (a progress bar per stage would be closed and opened again at every report of
    the other); what the held one reported meanwhile comes at the release, each of its stages' last report in the
    order they began, so every step still shows (issue 65: the judge's own reading of each child)."""

    def __init__(self, progress: Progress | None):
        self.progress = progress
        self._lock = threading.Lock()
        self._open = False
        self._held: dict[str, tuple[int, int]] = {}

    def __call__(self, done: int, total: int, stage: str) -> None:
        if self.progress is None:
            return
        with self._lock:  # passed on under the lock too: never between the held reports being passed on
            if not self._open:
                self._held.pop(stage, None)  # kept in the order of its last report
                self._held[stage] = (done, total)
                return
            self.progress(done, total, stage)

    def release(self) -> None:
        with self._lock:
            if self._open:
                return
            self._open = True
            held, self._held = self._held, {}
            if self.progress is not None:
                for stage, (done, total) in held.items():
                    self.progress(done, total, stage)
