"""Prompt and completion tokens per request of a run before it starts, and the share of its counted requests it
sends: from the store's earlier runs of the method, else from the prompts the method itself builds on the dataset's
items (:mod:`.rendering`: its fit run against replies of the shape it asks for, no model called), else the item's
length plus the method's instructions (rough, and it says so)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..llm import LLMConfig
from ..methods import METHODS
from ..records import Dataset, Sample
from ..store import Store
from . import rendering
from .counts import _method, judged_item_chars
from .duration import MIN_CALLS_FOR_TIMING, Duration
from .embedded_speed import EMBEDDED_REPLY_SHARE
from .rendering import CHARS_PER_TOKEN
from .reply_lengths import measured_completion
from .spec import RunSpec

ROUGH_INSTRUCTION_CHARS = 1500.0
"""Characters of a request around its item (task, aspect definition, rubric or criteria, reply format) when
no earlier run measured the method: the shorter prompts of direct scoring and G-Eval are 1,000-2,000."""

ROUGH_COMPLETION_TOKENS = 100.0
"""Tokens of a reply when no earlier run measured the method: a score with a short reason."""


def tokens_per_request(store: Store, method: str, limit: int = 500) -> tuple[float, float, str] | None:
    """Prompt and completion tokens per request sent, from the store's runs of ``method`` on any backend that
    sent enough requests (tokenizers differ by about 10-20%); None when there are none."""
    calls = prompt = completion = 0
    for run in store.runs(limit=limit):
        if run.method == method and run.ledger.calls and run.ledger.prompt_tokens:
            calls += run.ledger.calls
            prompt += run.ledger.prompt_tokens
            completion += run.ledger.completion_tokens
    if calls < MIN_CALLS_FOR_TIMING:
        return None
    return prompt / calls, completion / calls, f"tokens per request of {calls:,} earlier requests of this method"


def request_tokens(store: Store, dataset: Dataset, spec: RunSpec, duration: Duration) -> tuple[float, float, str]:
    """Prompt and completion tokens per request of ``spec``'s run, with where they come from: earlier runs of the
    method (:func:`tokens_per_request`), else its prompts rendered on the dataset (:func:`rendered_tokens`), else
    the item's length plus the instructions."""
    return tokens_per_request(store, spec.method) or own_tokens(dataset, spec, duration)


def reply_share(llm: LLMConfig) -> float | None:
    """The share of a text reply's bound a first estimate takes (:data:`.estimates.EMBEDDED_REPLY_SHARE` on the
    embedded model); None elsewhere: a capable model's reply length follows the question, not the bound, and
    :data:`ROUGH_COMPLETION_TOKENS` stands for it until a run measures it."""
    return EMBEDDED_REPLY_SHARE if llm.embedded else None


def own_tokens(dataset: Dataset, spec: RunSpec, duration: Duration) -> tuple[float, float, str]:
    """Prompt and completion tokens per request of ``spec``'s run from the run alone: its prompts rendered on the
    dataset (:func:`rendered_tokens`), else the item's length plus the instructions."""
    rendered = rendered_tokens(dataset, spec, duration)
    measured = None if spec.llm.embedded else measured_completion(spec.method)
    if rendered is not None and measured is not None:  # a server: the method's measured reply length
        return (rendered[0], measured, f"{rendered[2].split(' and about ')[0]} and {measured:.0f} tokens a reply "
                f"(this method's replies as measured on a server); the first run measures it")
    if rendered is not None:
        return rendered
    chars = judged_item_chars(dataset, spec) + ROUGH_INSTRUCTION_CHARS
    return (chars / CHARS_PER_TOKEN, ROUGH_COMPLETION_TOKENS,
            "rough: no earlier run of this method, so the item's length at about 4 characters a token "
            "plus the instructions; the first run measures it")


MIN_RENDERED_SHARE = 0.1
"""The share of a fit's counted requests its rendering must reach to stand for them. HPSS's and HD-Eval's fits
run to their end against empty replies (their requests rendered within 5% of a simulated run's, tests); a fit
that stops at its first empty generation reply (HypoEval: 12 of about 340 requests) shows only its largest
prompts, 2.8x the mean, and is left to the rough count."""

@dataclass(frozen=True)
class RunRendering:
    """A run's requests as its method builds them against empty replies (:func:`_render_run`)."""

    fit_requests: int
    fit_per_request: float
    """Prompt tokens per request of the fit."""
    score_per_request: float | None
    """Prompt tokens per request of the test scoring; None when nothing stood for it."""
    per_completion: float
    """Reply tokens per request (the scoring's when it was rendered, else the fit's)."""
    fit_share: float
    """The share of the fit's prompt tokens new to a model that keeps earlier prompts (1 when it stopped early)."""
    score_share: float
    """The same for the test scoring (1 when nothing stood for it)."""
    fit_sent: int | None = None
    """Requests the fit sent when it ran to its judge (its calls as a run makes them); None when it stopped."""
    score_per_item: float | None = None
    """Requests the judge sent per test item it scored; None when its scoring was not rendered."""


_RENDERED: dict[tuple, RunRendering] = {}
"""Renderings by what determines them (a start form redraws its estimate on every change; a fit is rendered
once per setting); pure values, so sharing them between sessions shares nothing of a user's."""


def _rendered(dataset: Dataset, spec: RunSpec) -> RunRendering:
    """:func:`_render_run` of ``spec`` on the training items and the first :data:`RENDERED_RUN_ITEMS` test
    items of the split its run will draw (the dataset's first items when it cannot be drawn), once per
    setting. A dataset's first items can be far from its split's: Topical-Chat's first four are 3,600
    characters, a seeded four 2,000, and an HD-Eval estimate took the first."""
    train, rest = _split_items(dataset, spec)
    train = train or tuple(dataset.samples[:spec.train_size])
    rest = rest or tuple(dataset.samples[spec.train_size:spec.train_size + RENDERED_RUN_ITEMS])
    key = (spec.method, json.dumps(spec.params, sort_keys=True, default=str), spec.aspect, dataset.name, spec.llm.embedded,
           tuple((s.id, len(s.input), len(s.output)) for s in train + rest))
    if key not in _RENDERED:
        if len(_RENDERED) >= 64:
            _RENDERED.clear()
        _RENDERED[key] = _render_run(dataset, spec, train, rest)
    return _RENDERED[key]


def _split_items(dataset: Dataset, spec: RunSpec) -> tuple[tuple[Sample, ...], tuple[Sample, ...]]:
    """The training items and the first :data:`RENDERED_RUN_ITEMS` test items of the split ``spec``'s run will
    draw (seeded), in the order it uses them; both empty when the split cannot be drawn."""
    from .. import data

    if spec.test_size is None:
        return (), ()
    try:
        split = data.make_split(dataset, train_size=spec.train_size, test_size=spec.test_size, seed=spec.seed)
    except data.SplitError:
        return (), ()
    by_id = {s.id: s for s in dataset.samples}
    return (tuple(by_id[i] for i in split.train_ids if i in by_id),
            tuple(by_id[i] for i in split.test_ids[:RENDERED_RUN_ITEMS] if i in by_id))


def new_prompt_share(dataset: Dataset, spec: RunSpec, duration: Duration) -> float:
    """The share of ``spec``'s prompt tokens a model that keeps earlier prompts' states evaluates
    (:attr:`.rendering.Rendered.new_share`: on SummEval a direct judge's prompts repeat their article for each
    of its 16 summaries), the fit's and the test scoring's weighted by their counted calls and prompt sizes
    (``duration``): a test split keeps whole groups, whose items share their input, so its scoring reuses
    more than the fit (HD-Eval on 4 Topical-Chat items: 0.70 of the fit's prompt tokens new, 0.23 of the
    test scoring's, SmolLM2's run 2026-11-29)."""
    r = _rendered(dataset, spec)
    fit_tokens = duration.fit_calls * r.fit_per_request if r.fit_requests else 0.0
    score_tokens = duration.score_calls * r.score_per_request if r.score_per_request is not None else 0.0
    if fit_tokens + score_tokens <= 0:
        return r.score_share if r.score_per_request is not None else r.fit_share
    return (fit_tokens * r.fit_share + score_tokens * r.score_share) / (fit_tokens + score_tokens)


def rendered_tokens(dataset: Dataset, spec: RunSpec, duration: Duration) -> tuple[float, float, str] | None:
    """Prompt tokens per request of ``spec``'s run as the method builds its prompts on the dataset's items
    (:mod:`.rendering`): its fit on the first ``train_size`` items, and when that fit ends with a judge (direct
    scoring, G-Eval), the judge's scoring of the next few; None when the rendering covers too little of the
    fit's counted calls (:data:`MIN_RENDERED_SHARE`) and no judge came of it."""
    r = _rendered(dataset, spec)
    fit_requests, fit_per_request, score_per_request, per_completion = (r.fit_requests, r.fit_per_request,
                                                                        r.score_per_request, r.per_completion)
    fit_ok = fit_requests >= max(MIN_CALLS_FOR_TIMING, MIN_RENDERED_SHARE * duration.fit_calls)
    if score_per_request is None:
        if not fit_ok:
            return None
        per_request = fit_per_request
    else:  # the counted calls of each part at the part's own size
        fit_weight = duration.fit_calls if fit_requests else 0
        per_request = ((fit_weight * fit_per_request + duration.score_calls * score_per_request)
                       / max(1, fit_weight + duration.score_calls))
    return (per_request, per_completion,
            f"rough: no earlier run of this method, so its own prompts on this dataset's items (rendered, no "
            f"model called) and about {per_completion:.0f} tokens a reply; the first run measures it")


def _render_run(dataset: Dataset, spec: RunSpec, train: tuple[Sample, ...], rest: tuple[Sample, ...]) -> RunRendering:
    aspect = dataset.aspect(spec.aspect)
    method = _method(spec)
    method.set_params(**type(method).render_params)  # cheaper, and the same requests
    fit = rendering.render_fit(method, train, aspect, dataset, spec.llm)
    # a fit that stopped early shows too little to say how much of its prompts repeat
    fit_share = fit.new_share if fit.finished else 1.0
    share = reply_share(spec.llm)
    fit_completion = fit.completion_per_request(ROUGH_COMPLETION_TOKENS, bound_share=share)
    fit_sent = fit.requests if fit.finished else None
    if fit.judge is None or not rest:
        return RunRendering(fit.requests, fit.per_request, None, fit_completion, fit_share, 1.0, fit_sent=fit_sent)
    scoring = rendering.render_scoring(fit.judge, rest, spec.llm)
    score_per_item = scoring.requests / len(rest) if scoring.finished else None
    if not scoring.requests:
        # a judge fitted on empty replies can keep nothing to score (HD-Eval's aggregator drops the criteria
        # it never saw scored); the fit's own scoring of the test items stands in (HD-Eval's judge scores
        # criteria of the tree its fit scores, one request per item and criterion)
        stand_in = rendering.render_fit(method, rest, aspect, dataset, spec.llm)
        if not (stand_in.finished and stand_in.requests):
            return RunRendering(fit.requests, fit.per_request, None, fit_completion, fit_share, 1.0,
                                fit_sent=fit_sent)
        scoring, score_per_item = stand_in, None
    return RunRendering(fit.requests, fit.per_request, scoring.per_request,
                        scoring.completion_per_request(ROUGH_COMPLETION_TOKENS, bound_share=share), fit_share,
                        scoring.new_share, fit_sent=fit_sent, score_per_item=score_per_item)


def rendered_calls(dataset: Dataset, spec: RunSpec) -> float | None:
    """The requests ``spec``'s run sends as its method builds them (:mod:`.rendering`): its fit's, when the fit
    ran to its judge, and that judge's per rendered test item times the test items; None when either is not
    known (a fit that stopped at its choice, a judge whose scoring did not render). ``spec`` has the drawn sizes."""
    r = _rendered(dataset, spec)
    n_test = spec.test_size if spec.test_size is not None else max(0, len(dataset.samples) - spec.train_size)
    if r.fit_sent is None or (n_test and r.score_per_item is None):
        return None
    return r.fit_sent + (r.score_per_item or 0.0) * n_test


RENDERED_RUN_ITEMS = 16
"""Items after the training items whose scoring a run's estimate renders: enough for a group of items that
share their input (SummEval's 16 summaries of an article) to show how much of a prompt repeats."""


def made_share(dataset: Dataset, spec: RunSpec, calls: dict[str, int]) -> tuple[float, str]:
    """The share of its counted calls (an upper bound) ``spec``'s run is expected to make, with why: its requests
    as rendered (:func:`~.cost.rendered_calls`, the method run against replies of the shape it asks for) when
    the rendering reached a judge and its scoring and the method's calls do not turn on its replies' agreement
    (:attr:`~judge_engine.methods.Method.calls_follow_agreement`), else the method's measured
    :attr:`~judge_engine.methods.Method.made_share`. ``spec`` has the drawn sizes."""
    counted = calls["fit"] + calls["score"]
    made = rendered_calls(dataset, spec) if counted and not METHODS[spec.method].calls_follow_agreement else None
    if made is not None:
        share = min(1.0, made / counted)
        return share, (f"x{share:.2f}: {made:,.0f} of its {counted:,} counted requests, as its own fit and judge "
                       f"send them (rendered)" if share < 1.0 else "")
    share = METHODS[spec.method].made_share
    return share, f"x{share:.2f}: the share of its counted requests a fit makes" if share < 1.0 else ""
