"""Run specs: what defines a run, its dataset and the human score it learns from (:mod:`.creating` stores one as a
queued run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .. import annotations, data
from ..llm import LLMConfig
from ..methods import METHODS
from ..records import Dataset
from ..store import Store


@dataclass(frozen=True)
class RunSpec:
    """Everything that defines a run; a page builds one from its form."""

    method: str
    dataset: str
    aspect: str
    params: dict[str, Any] = field(default_factory=dict)
    """Method parameters that differ from the paper defaults."""
    train_size: int = 30
    test_size: int | None = 40
    """None = every item not in train."""
    seed: int = 0
    llm: LLMConfig = field(default_factory=LLMConfig)


QUICK_TRAIN, QUICK_TEST = 12, 10
"""Split of a quick first look: enough items for a correlation to mean something, few enough for minutes.
:data:`QUICK_TRAIN` is the smallest training set a look gets (on a slow backend, the embedded model)."""

QUICK_TRAIN_SIZES = (30, QUICK_TRAIN)
"""Training items a quick look tries, largest first (:func:`judge_engine.runs.quick_look` takes the largest that fits
its time on the backend, then makes the method smaller): 30 is a full run's default (HypoEval's paper draws ~30).
The methods that learn from these items overfit 12: against a judge at the human level plus noise (the stub's
``--follow-humans``), HANNA seed 0's quick looks of HypoEval and HD-Eval were "significantly below G-Eval" at 12
(its 64x32 MLP aggregator on 6 collinear criteria, HypoEval's selection) and "ok" at 30 (+0.95 and +0.98 over 8
prompts), on the same 24 test items (docs/benchmarks.md)."""


QUICK_TEST_SIZES = (40, QUICK_TEST)
"""Test items a quick look asks for, largest first: the largest goes with the largest training set
(:data:`QUICK_TRAIN_SIZES`), where the backend's speed has the time for both (:func:`judge_engine.runs.quick_look`).
On a dataset read by source 40 items are 8 sources x 5 (10 gives 8 x 3): a within-source correlation over 3 items
is little more than a sign, and against a judge at the human level plus noise (the stub's ``--follow-humans``)
the quick looks' group-level intervals over 8 x 3 were up to 1.10 wide ("too few items to say", docs/benchmarks.md).
The embedded model keeps 10 (its looks do not fit their time at 30 training items)."""


def fast_defaults(method: str, llm: LLMConfig) -> dict[str, Any]:
    """Defaults measured faster with the same result on this backend, where the method has the parameter.

    The sample-first layout on a backend that reuses a prompt prefix; on the
    embedded model, probability-weighted scores (a tiny model seldom states a
    score in free text; the logprobs give one for every item).
    """
    params = METHODS[method].default_params()
    out: dict[str, Any] = {}
    if "layout" in params and llm.reuses_prompt_prefix:
        out["layout"] = "sample_first"
    if "weighted" in params and llm.backend == "llamacpp":
        out["weighted"] = True
    return out


def quick_spec(spec: RunSpec, params: dict[str, Any] | None = None, *, train_size: int = QUICK_TRAIN,
               test_size: int = QUICK_TEST) -> RunSpec:
    """``spec`` as a quick first look: the method's quick parameters (then ``params``) and a small split of
    ``train_size`` training items (one of :data:`QUICK_TRAIN_SIZES`) and ``test_size`` test items (one of
    :data:`QUICK_TEST_SIZES`).

    A method that takes its own count of training items (HypoEval's ``n_train``) is given ``train_size``, below
    ``params``. The pages' "Quick first look" buttons and the screenshot tool start this same spec.
    """
    own = {"n_train": train_size} if "n_train" in METHODS[spec.method].default_params() else {}
    return RunSpec(method=spec.method, dataset=spec.dataset, aspect=spec.aspect,
                   params={**spec.params, **METHODS[spec.method].quick_params, **own, **(params or {})},
                   train_size=train_size, test_size=test_size, seed=spec.seed, llm=spec.llm)


def ensure_dataset(store: Store, name: str) -> Dataset:
    """The stored dataset ``name``; a built-in benchmark is imported on first use."""
    if store.has_dataset(name):
        return store.load_dataset(name)
    if name in data.BENCHMARKS:
        dataset = data.load_benchmark(name)
        store.save_dataset(dataset)
        return dataset
    raise ValueError(f"no dataset named {name!r}: import it first (built-ins: {', '.join(data.BENCHMARKS)})")


def human_dataset(store: Store, name: str, aggregate: str | None = None) -> Dataset:
    """Dataset ``name`` with the human score of ``aggregate`` (default: the dataset's chosen one).

    ``imported`` gives the dataset as it was imported; any other aggregate is
    computed from the stored labels (see :mod:`judge_engine.annotations`).
    """
    return _with_human_score(store, ensure_dataset(store, name), aggregate)


def _with_human_score(store: Store, dataset: Dataset, aggregate: str | None) -> Dataset:
    """The stored ``dataset`` with the human score of ``aggregate`` (see :func:`human_dataset`)."""
    chosen = annotations.parse_aggregate(aggregate if aggregate is not None else store.human_aggregate(dataset.name))
    if chosen.kind == "imported":
        return dataset
    return annotations.apply_aggregate(dataset, store.annotations(dataset.name), chosen, store.experts())
