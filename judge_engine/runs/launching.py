"""Starting a run with its baselines on exactly its split: the one way pages start work."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..llm import LLMConfig
from ..llm.availability import backend_problem
from ..methods import Judge, get_method
from ..records import RunRecord, Split
from ..store import STOPPED_STATUSES, NotFound, Store
from ..submissions import once
from .counts import same_backend
from .creating import create_run
from .spec import RunSpec, ensure_dataset
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
    repeated: bool = False
    """The same submission (its token) had started this run already: nothing new was started."""


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


def refuse_unavailable(llm: LLMConfig, *, api_key: str | None = None, reach: bool = False) -> None:
    """ValueError naming why ``llm``'s backend cannot work here and the fix
    (:func:`judge_engine.llm.availability.backend_problem`); nothing when it can. ``reach``: also try a TCP
    connection to a server's base URL (the pages do; a server down later pauses the run, to be resumed)."""
    problem = backend_problem(llm, api_key=api_key, reach=reach)
    if problem:
        raise ValueError(problem)


def _still_there(store: Store) -> Any:
    def check(result: dict[str, Any]) -> bool:
        try:
            for made in result.get("runs", []):
                store.get_run(made["run_id"])
        except NotFound:
            return False
        return True
    return check


def launch(store: Store, spec: RunSpec, *, judge: Judge | None = None, split: Split | None = None,
           baselines: Sequence[str | Baseline] = (), actor: str = "", api_key: str | None = None,
           log_dir: str | Path | None = None, token: str = "", reach: bool = False) -> list[Started]:
    """Create a run and start its worker, with ``baselines`` on exactly its split: the one way pages start work.

    A baseline (paper-default parameters) that already exists on the same
    split, human score and backend is reused, not started again. A spec the
    engine refuses raises ValueError (or NotFound) before anything is
    created, and so does a backend that cannot work here
    (:func:`refuse_unavailable`); a worker that cannot start leaves its run created, to be
    resumed, and says why in :attr:`Started.worker_error`. ``token``: the submission's
    (:mod:`judge_engine.submissions`): given again, it starts nothing and returns the runs it started the
    first time, marked :attr:`Started.repeated` (a run deleted since is started anew). ``reach``: a server
    that accepts no connection is refused too (:func:`refuse_unavailable`).
    """
    refuse_unavailable(spec.llm, api_key=api_key, reach=reach)
    stored = ensure_dataset(store, spec.dataset)  # once for the run and its baselines
    wanted = [Baseline.of(b) for b in baselines]

    def create() -> dict[str, Any]:
        run_id = create_run(store, spec, judge=judge, split=split, actor=actor, stored=stored)
        made = [{"run_id": run_id, "method": spec.method, "role": "run", "reused": False}]
        if not wanted:
            return {"runs": made}
        run = store.run(run_id)
        existing = runs_on_same_split(store, run, methods=tuple({b.method for b in wanted}))
        for b in wanted:
            params = get_method(b.method, b.params).get_params()
            found = next((r for r in existing if r.method == b.method and r.params == params), None)
            if found is not None:
                made.append({"run_id": found.id, "method": b.method, "role": "baseline", "reused": True})
                continue
            base_id = create_run(store, b.beside(spec), split=run.split, actor=actor, stored=stored)
            made.append({"run_id": base_id, "method": b.method, "role": "baseline", "reused": False})
        return {"runs": made}

    result, first = once(store, token, "launch", create, actor=actor, still_there=_still_there(store))
    if not first:
        return [Started(m["run_id"], m["method"], m["role"], reused=m["reused"], repeated=True)
                for m in result["runs"]]
    # workers start once the runs are committed: a worker reads its run from the store
    return [Started(m["run_id"], m["method"], m["role"], reused=True) if m["reused"]
            else _start_worker(store, m["run_id"], m["method"], m["role"], api_key=api_key, log_dir=log_dir)
            for m in result["runs"]]


def resume(store: Store, run_id: int, *, api_key: str | None = None, force: bool = False, token: str = "",
           log_dir: str | Path | None = None, reach: bool = False) -> Started:
    """Start a worker that continues run ``run_id`` (see :func:`start_run`), once per ``token``.

    :class:`NotFound` when the run was deleted meanwhile; ValueError when its backend cannot work here
    (:func:`refuse_unavailable`), before any worker starts. A token given again starts no second worker on
    the same run (two would score the same items side by side) and returns :attr:`Started.repeated`.
    """
    run = store.run(run_id)
    refuse_unavailable(LLMConfig.from_dict(run.llm), api_key=api_key, reach=reach)
    _, first = once(store, token, "resume", lambda: {"runs": [{"run_id": run_id}]}, still_there=_still_there(store))
    if not first:
        return Started(run_id, run.method, "run", repeated=True)
    try:
        start_run(store.path, run_id, api_key=api_key, log_dir=log_dir, **({"force": True} if force else {}))
    except OSError as exc:
        return Started(run_id, run.method, "run", worker_error=str(exc))
    return Started(run_id, run.method, "run")


def _start_worker(store: Store, run_id: int, method: str, role: str, *, api_key: str | None,
                  log_dir: str | Path | None) -> Started:
    try:
        start_run(store.path, run_id, api_key=api_key, log_dir=log_dir)
    except OSError as exc:
        return Started(run_id, method, role, worker_error=str(exc))
    return Started(run_id, method, role)
