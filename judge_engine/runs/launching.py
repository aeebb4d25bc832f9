"""Starting a run with its baselines on exactly its split: the one way pages start work."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..llm import LLMConfig
from ..methods import Judge, get_method
from ..records import RunRecord, Split
from ..store import STOPPED_STATUSES, Store
from .spec import RunSpec, create_run, ensure_dataset
from .workers import start_run


BASELINES = ("direct", "geval")
"""The methods every paper compares against; a method's run can bring them on its own split."""


@dataclass(frozen=True)
class Baseline:
    """A comparison run on another run's split: a method with its parameters (paper defaults when empty)."""

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    title: str = ""
    """How pages name it (the method's title when empty)."""

    def beside(self, spec: RunSpec) -> RunSpec:
        """The spec of this baseline on ``spec``'s dataset, aspect, split sizes, seed and backend."""
        return RunSpec(method=self.method, dataset=spec.dataset, aspect=spec.aspect, params=dict(self.params),
                       train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed, llm=spec.llm)

    @classmethod
    def of(cls, baseline: "str | Baseline") -> "Baseline":
        """A method name (its paper defaults) or a Baseline, as a Baseline."""
        return baseline if isinstance(baseline, Baseline) else cls(baseline)


@dataclass(frozen=True)
class Started:
    """A run :func:`launch` created, and whether its worker is running."""

    run_id: int
    method: str
    role: str
    """``run``, or ``baseline`` for a comparison run on the run's split."""
    worker_error: str = ""
    """Why the worker could not start (the run exists and can be resumed); empty when it runs."""
    reused: bool = False
    """A baseline that already existed on this split and backend (nothing new started)."""


def same_backend(a: LLMConfig, b: LLMConfig) -> bool:
    """The same model behind the same endpoint (settings such as concurrency do not change scores)."""
    return (a.backend, a.model, a.base_url) == (b.backend, b.model, b.base_url)


def runs_on_same_split(store: Store, run: RunRecord, *, methods: tuple[str, ...] | None = None,
                       include_failed: bool = False) -> list[RunRecord]:
    """Other runs scored on exactly ``run``'s test items, with the same human aggregate and backend.

    Only these are comparable with ``run`` number for number: the same items,
    the same human score and the same model. Newest first; ``methods``
    filters by method; runs that stopped without finishing (failed, interrupted) are left out unless asked,
    so a baseline is never "reused" from a run that will not finish on its own.
    """
    test_ids = run.split.test_ids if run.split else None
    llm = LLMConfig.from_dict(run.llm)
    out = []
    for other in store.runs(dataset=run.dataset, limit=1000):
        if other.id == run.id or other.aspect != run.aspect:
            continue
        if methods is not None and other.method not in methods:
            continue
        if not include_failed and other.status in STOPPED_STATUSES:
            continue
        if ((other.split.test_ids if other.split else None) != test_ids
                or other.human_aggregate != run.human_aggregate
                or not same_backend(LLMConfig.from_dict(other.llm), llm)):
            continue
        out.append(other)
    return out


def launch(store: Store, spec: RunSpec, *, judge: Judge | None = None, split: Split | None = None,
           baselines: Sequence[str | Baseline] = (), actor: str = "", api_key: str | None = None,
           log_dir: str | Path | None = None) -> list[Started]:
    """Create a run and start its worker, with ``baselines`` on exactly its split: the one way pages start work.

    A baseline (paper-default parameters) that already exists on the same
    split, human score and backend is reused, not started again. A spec the
    engine refuses raises ValueError (or NotFound) before anything is
    created; a worker that cannot start leaves its run created, to be
    resumed, and says why in :attr:`Started.worker_error`.
    """
    stored = ensure_dataset(store, spec.dataset)  # once for the run and its baselines
    run_id = create_run(store, spec, judge=judge, split=split, actor=actor, stored=stored)
    started = [_start_worker(store, run_id, spec.method, "run", api_key=api_key, log_dir=log_dir)]
    if not baselines:
        return started
    wanted = [Baseline.of(b) for b in baselines]
    run = store.run(run_id)
    existing = runs_on_same_split(store, run, methods=tuple({b.method for b in wanted}))
    for b in wanted:
        params = get_method(b.method, b.params).get_params()
        found = next((r for r in existing if r.method == b.method and r.params == params), None)
        if found is not None:
            started.append(Started(found.id, b.method, "baseline", reused=True))
            continue
        base_id = create_run(store, b.beside(spec), split=run.split, actor=actor, stored=stored)
        started.append(_start_worker(store, base_id, b.method, "baseline", api_key=api_key, log_dir=log_dir))
    return started


def _start_worker(store: Store, run_id: int, method: str, role: str, *, api_key: str | None,
                  log_dir: str | Path | None) -> Started:
    try:
        start_run(store.path, run_id, api_key=api_key, log_dir=log_dir)
    except OSError as exc:
        return Started(run_id, method, role, worker_error=str(exc))
    return Started(run_id, method, role)
