"""Creating a run: its spec validated, its split drawn and stored, and a queued run kept with its estimate."""

from __future__ import annotations

from .. import annotations, data
from ..methods import Judge, get_method
from ..records import Dataset, Split
from ..store import Store
from .cost import expected
from .spec import RunSpec, _with_human_score, ensure_dataset


def create_run(store: Store, spec: RunSpec, *, judge: Judge | None = None, split: Split | None = None,
               actor: str = "", stored: Dataset | None = None) -> int:
    """Validate ``spec``, make its split and store a queued run; returns the run id.

    With ``judge`` (e.g. one a person edited after an earlier run), the run
    skips ``fit`` and only scores the test split with that judge; calls
    whose prompts did not change are answered by the cache. With ``split``
    (e.g. another run's ``store.run(other).split``) the run uses
    exactly those train and test items instead of drawing a split from the
    spec's sizes and seed, so baselines and re-scorings meet the same items.

    The run records the dataset's human aggregate at this moment (the human
    score it learns from and is meta-evaluated against) and ``actor``, who
    started it. With an aggregate other than ``imported``, a drawn split only
    takes items that have a score under it.

    ``stored`` is the dataset as :func:`ensure_dataset` gave it, when the
    caller holds it already (:func:`~judge_engine.runs.launch` ensures it
    once for a run and its baselines); otherwise it is ensured here, once.
    """
    if stored is None:
        stored = ensure_dataset(store, spec.dataset)
    elif stored.name != spec.dataset:
        raise ValueError(f"the dataset given is {stored.name!r}, not the spec's {spec.dataset!r}")
    aggregate = str(annotations.parse_aggregate(store.human_aggregate(spec.dataset)))
    dataset = _with_human_score(store, stored, aggregate)
    aspect = dataset.aspect(spec.aspect)
    method = get_method(spec.method, spec.params)
    method._validate_params()
    if judge is not None and (judge.method != spec.method or judge.aspect.get("name") != aspect.name):
        raise ValueError(f"the judge is a {judge.method} judge of {judge.aspect.get('name')!r}, "
                         f"not {spec.method} of {aspect.name!r}")
    if split is None:
        pool = dataset if aggregate == "imported" else annotations.with_human(dataset, aspect.name)
        split = data.make_split(pool, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
    else:
        known = set(dataset.by_id())
        unknown = [i for i in (*split.train_ids, *split.test_ids) if i not in known]
        if split.dataset != dataset.name or unknown:
            raise ValueError(f"the split is not one of dataset {dataset.name!r} "
                             f"({len(unknown)} unknown item ids)" if unknown else
                             f"the split belongs to dataset {split.dataset!r}, not {dataset.name!r}")
    store.save_split(split)
    # what it is expected to cost is kept with it, to set beside what it cost (issue 46 item 5): the estimate the
    # start form and `run` showed, on the sizes asked (a split of whole groups may hold a few items more)
    estimate = expected(store, spec, dataset=stored)
    return store.create_run(method=spec.method, params=judge.params if judge else method.get_params(),
                            dataset=dataset.name, aspect=aspect.name, split=split, llm=spec.llm.to_dict(),
                            judge=judge.to_dict() if judge else None, human_aggregate=aggregate, actor=actor,
                            estimate=estimate.to_dict())
