"""The requests a run counts before it starts (each method's bound), and the items it reads: what every other
estimate (:mod:`.estimates`' time, :mod:`.request_tokens`' tokens, :mod:`.cost`'s dollars) builds on."""

from __future__ import annotations

from dataclasses import replace

from ..llm import LLMConfig
from ..methods import METHODS, get_method
from ..records import Dataset, RunRecord
from ..store import Store
from .spec import RunSpec, ensure_dataset


def estimate(store: Store, spec: RunSpec) -> dict[str, int]:
    """LLM calls the run will request before any cache hit."""
    dataset = ensure_dataset(store, spec.dataset)
    return _calls(dataset, drawn_sizes(dataset, spec))


def drawn_sizes(dataset: Dataset, spec: RunSpec) -> RunSpec:
    """``spec`` with the sizes of the split its run will draw (:func:`~judge_engine.data.make_split`, seeded:
    the same split whenever it is drawn), for an estimate: test spans at least
    :data:`~judge_engine.data.splits.MIN_TEST_GROUPS` groups with at least 3 items from each, so ``--test 8`` on
    SummEval scores 24 items (when it kept whole articles, 16, and an estimate of 8 was half the time). Drawn from
    the dataset as stored (a run leaves out items without a human score under its aggregate, which can move a
    group boundary); the sizes asked when they cannot be drawn (the run then says why)."""
    if spec.test_size is None:
        return spec
    from .. import data  # pure and cheap, but not needed by every caller of this module

    try:
        split = data.make_split(dataset, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
    except data.SplitError:
        return spec
    return replace(spec, train_size=len(split.train_ids), test_size=len(split.test_ids))


def _calls(dataset: Dataset, spec: RunSpec) -> dict[str, int]:
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    # on a server the judge's own model checks the text a method generates: its requests are counted (issue 65)
    return _method(spec).estimate_calls(spec.train_size, n_test, backend=spec.llm.backend)


def _method(spec: RunSpec):
    """``spec``'s method with its parameters as a fit on its backend reads them."""
    return get_method(spec.method, METHODS[spec.method].params_on(dict(spec.params), spec.llm))


def counted_calls(run: RunRecord) -> int:
    """The calls a stored run's method counts before it starts (its bound), from its parameters and split."""
    if run.split is None or run.method not in METHODS:
        return 0
    llm = LLMConfig.from_dict(run.llm)
    params = METHODS[run.method].params_on(dict(run.params), llm)
    calls = get_method(run.method, params).estimate_calls(len(run.split.train_ids), len(run.split.test_ids),
                                                          backend=llm.backend)
    return int(calls["fit"] + calls["score"])


def judged_item_chars(dataset: Dataset, spec: RunSpec) -> float:
    """Mean characters of the items ``spec``'s run reads most: the dataset's mean item, or, for a method that
    reads mostly its shortest training items (:meth:`~judge_engine.methods.Method.shortest_share`, HPSS's
    ``validation_pick``), the mean of the same share of the dataset's shortest items (the split is not
    drawn for an estimate)."""
    share = _method(spec).shortest_share(spec.train_size)
    if share is None:
        return mean_item_chars(dataset)
    lengths = sorted(_item_chars(s) for s in dataset.samples)
    keep = max(1, round(len(lengths) * share))
    return sum(lengths[:keep]) / keep


def _item_chars(sample) -> int:
    return len(sample.input) + len(sample.output)


def mean_item_chars(dataset: Dataset) -> float:
    """Mean characters of an item's input and output."""
    return sum(_item_chars(s) for s in dataset.samples) / max(1, len(dataset.samples))



def same_backend(a: LLMConfig, b: LLMConfig) -> bool:
    """The same model behind the same endpoint (settings such as concurrency do not change scores)."""
    return (a.backend, a.model, a.base_url) == (b.backend, b.model, b.base_url)
