"""Where and why a finished judge disagrees with the humans: probes over its stored verdicts.

The trust report (:mod:`judge_engine.trust`) says whether a judge agrees with the humans. The probes say
what it follows besides them and where it goes wrong, on the same held-out items, without a new call:

- :func:`length_bias` — does the judge follow output length more than the humans do?
- :func:`collapse` — how many distinct scores did it give, and how often its most frequent one?
- :func:`disagreements` — the items it ranks furthest from the humans, and slices (system, group, length
  tercile, human score band) where its agreement is worst;
- :func:`explanation_themes` — what the explanations of over- and under-scored items talk about (TF-IDF
  terms clustered with k-means);
- :func:`binary_agreement` — for an aspect humans scored 0/1, agreement, Cohen's kappa and the true
  positive and negative rates at a threshold chosen on other items than those it is measured on.

Each function is pure, over arrays of the items both sides scored, and returns a frozen record that says how
many items it rests on, carries an interval where one is defined, and says in ``note`` why a figure is
missing. :func:`probe_run` reads a finished run from the store and runs them all. Correlations and their
intervals come from :mod:`judge_engine.metrics` (and the paired bootstrap of :mod:`judge_engine.compare`):
one statistics module for the whole workbench.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any, Sequence

import numpy as np
from scipy import stats

from . import compare, metrics
from .trust import _jsonable  # the report's JSON rule (NaN written as null), shared with the trust report
from .llm import LLMConfig, make_llm
from .records import Dataset, Sample, Verdict

ALPHA = 0.05
"""Two-sided level below which a probe calls an effect significant."""

N_BOOTSTRAP = 1000
"""Resamples behind every interval of the probes."""

MIN_ITEMS = 8
"""Fewest items both sides scored for a correlation probe; below it the probe says so instead of a figure."""

MIN_SLICE = 3
"""Fewest items in a slice for it to be listed (a correlation over two items is +-1 whatever the judge does)."""

TOP_DISAGREEMENTS = 10
SLICES_WITH_INTERVAL = 12
"""The worst slices get a bootstrap interval; the rest (a dataset of 100 groups has 100 group slices) are
ranked by their point figure and shown without one, which keeps the probes of 1,600 items to a second or two."""
"""How many of the most disagreeing items are listed."""

DISAGREEMENT_SHARE = 0.25
"""An item is over- (under-) scored when the judge ranks it at least this share of the items above (below)
where the humans rank it; explanation themes are drawn from these items."""

MAX_THEMES = 3
"""Most themes per side (over-scored, under-scored)."""

MIN_THEME_TEXTS = 4
"""Fewest explanations on a side to cluster; fewer are listed as they are, with a note."""


def words(text: str) -> int:
    """Length of an output in words (whitespace-separated tokens), the unit the length probe reports."""
    return len(str(text or "").split())


def _interval(ci: Any) -> tuple[float | None, float | None]:
    low, high = ci
    return (None if not math.isfinite(low) else float(low), None if not math.isfinite(high) else float(high))


def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class Figure:
    """A coefficient with its bootstrap interval over the items it rests on."""

    value: float | None
    """None when undefined (constant scores, too few items)."""
    ci: tuple[float | None, float | None]
    """95% percentile bootstrap interval; (None, None) with fewer than five items."""
    n: int
    """Items it rests on."""


def _spearman(x: Sequence[float], y: Sequence[float], *, seed: int) -> Figure:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    c = metrics.sample_correlation(a, b, statistic="spearman", n_bootstrap=N_BOOTSTRAP, seed=seed)
    return Figure(_finite(c.value), _interval((c.ci_low, c.ci_high)), int((np.isfinite(a) & np.isfinite(b)).sum()))


def rank_difference(human: Sequence[float], judge: Sequence[float]) -> np.ndarray:
    """Judge rank minus human rank per item, as a share of the items (positive: the judge ranks it higher).

    Ranks are averaged over ties (:func:`scipy.stats.rankdata`), so a judge that gives most items the same
    score moves those items to the middle of its ranking rather than to an arbitrary order.
    """
    h, j = np.asarray(human, dtype=float), np.asarray(judge, dtype=float)
    if h.size == 0:
        return np.zeros(0)
    return (stats.rankdata(j) - stats.rankdata(h)) / h.size


# --------------------------------------------------------------------------- length


@dataclass(frozen=True)
class LengthBias:
    """How the judge's and the humans' scores follow output length (in words), on the same items."""

    n: int
    judge: Figure
    """Spearman of the judge's score with length."""
    human: Figure
    """Spearman of the human score with length."""
    excess: float | None
    """judge minus human Spearman with length (paired bootstrap over items)."""
    excess_p: float | None
    """Two-sided p-value of ``excess``."""
    residual: Figure
    """Spearman of (judge rank minus human rank) with length: positive when longer outputs are over-scored."""
    flagged: bool
    """The judge follows length significantly more than the humans do (``excess`` > 0, p < :data:`ALPHA`)."""
    note: str = ""


def length_bias(lengths: Sequence[float], human: Sequence[float], judge: Sequence[float], *,
                seed: int = 0) -> LengthBias:
    """Does the judge follow output length more than the humans? Items are the ones both sides scored."""
    length, h, j = (np.asarray(x, dtype=float) for x in (lengths, human, judge))
    n = int(h.size)
    empty = Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return LengthBias(n, empty, empty, None, None, empty, False,
                          note=f"{n} items both scored: too few for a length probe (at least {MIN_ITEMS})")
    if np.ptp(length) == 0:
        return LengthBias(n, empty, empty, None, None, empty, False,
                          note=f"all {n} outputs have the same length ({int(length[0])} words)")
    judge_fig, human_fig = _spearman(length, j, seed=seed), _spearman(length, h, seed=seed)
    residual = _spearman(length, rank_difference(h, j), seed=seed)
    excess, p = compare.paired_bootstrap(length, j, h, statistic="spearman", n_bootstrap=N_BOOTSTRAP, seed=seed)
    excess, p = _finite(excess), _finite(p)
    flagged = bool(excess is not None and p is not None and excess > 0 and p < ALPHA)
    note = "" if judge_fig.value is not None else "the judge gave every item the same score"
    return LengthBias(n, judge_fig, human_fig, excess, p, residual, flagged, note)


# --------------------------------------------------------------------------- collapse


@dataclass(frozen=True)
class Spread:
    """How a set of scores spreads over the scale."""

    n: int
    distinct: int
    """How many different scores were given."""
    modal: float | None
    """The most frequent score (the lowest, on a tie)."""
    modal_share: float | None
    """Share of items that got it."""


@dataclass(frozen=True)
class Collapse:
    """The judge's spread of scores beside the humans', on the items both scored."""

    judge: Spread
    human: Spread
    collapsed: bool
    """Every item got the same score from the judge, or the judge gave fewer distinct scores than half the
    humans' while its most frequent score covers more than half the items."""
    note: str = ""


def _spread(x: np.ndarray) -> Spread:
    if x.size == 0:
        return Spread(0, 0, None, None)
    counts = Counter(np.round(x, 6).tolist())
    top = max(counts.values())
    modal = min(v for v, c in counts.items() if c == top)
    return Spread(int(x.size), len(counts), float(modal), round(top / x.size, 4))


def collapse(human: Sequence[float], judge: Sequence[float]) -> Collapse:
    """The judge's and the humans' spread of scores (no interval: these are counts on the items)."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    js, hs = _spread(j), _spread(h)
    if js.n == 0:
        return Collapse(js, hs, False, note="no item has a score from both the judge and the humans")
    collapsed = js.distinct == 1 or (js.distinct * 2 < hs.distinct and (js.modal_share or 0) > 0.5)
    note = (f"all {js.n} items got the same score ({js.modal:g}): the judge cannot order them"
            if js.distinct == 1 else "")
    return Collapse(js, hs, bool(collapsed), note)


# --------------------------------------------------------------------------- disagreements and slices


@dataclass(frozen=True)
class Disagreement:
    """One item the judge ranks far from the humans."""

    sample_id: str
    human: float
    judge: float
    rank_difference: float
    """Judge rank minus human rank, as a share of the items (positive: over-scored)."""
    explanation: str
    output: str


@dataclass(frozen=True)
class Slice:
    """Agreement on a subset of the items (one system, group, length tercile or human score band)."""

    by: str
    """``system``, ``group``, ``length`` or ``human score``."""
    name: str
    n: int
    spearman: Figure
    mean_abs_rank_difference: float
    """Mean of |judge rank - human rank| over the slice's items (ranks over all items), as a share of them."""
    worse_by: float | None
    """Overall Spearman minus the slice's (positive: worse than overall); None where the slice's is undefined."""
    sample_ids: tuple[str, ...]


@dataclass(frozen=True)
class Disagreements:
    n: int
    overall: Figure
    """Spearman over all the items both scored."""
    top: tuple[Disagreement, ...]
    """The items with the largest |rank difference|, largest first."""
    slices: tuple[Slice, ...]
    """Sorted by how much worse than overall (undefined ones last, then by mean rank difference)."""
    note: str = ""


def _terciles(values: np.ndarray, unit: str) -> list[tuple[str, np.ndarray]]:
    if np.ptp(values) == 0:
        return []
    cuts = np.quantile(values, [1 / 3, 2 / 3])
    codes = np.searchsorted(cuts, values, side="right")
    names = ("shortest third", "middle third", "longest third") if unit == "words" else ("low", "middle", "high")
    out = []
    for k, name in enumerate(names):
        mask = codes == k
        if mask.any():
            lo, hi = values[mask].min(), values[mask].max()
            out.append((f"{name} ({lo:g}-{hi:g} {unit})", mask))
    return out


def _bands(human: np.ndarray) -> list[tuple[str, np.ndarray]]:
    values = sorted(set(np.round(human, 6).tolist()))
    if len(values) <= 5:
        return [(f"human {v:g}", np.isclose(human, v)) for v in values]
    return _terciles(human, "points")


def disagreements(samples: Sequence[Sample], human: Sequence[float], judge: Sequence[float],
                  explanations: Sequence[str], *, seed: int = 0) -> Disagreements:
    """The most disagreeing items and the slices where the judge agrees least, on the items both scored."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    n = int(h.size)
    overall = _spearman(h, j, seed=seed) if n >= 2 else Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return Disagreements(n, overall, (), (), note=f"{n} items both scored: too few to look for where the "
                                                       f"judge disagrees (at least {MIN_ITEMS})")
    diff = rank_difference(h, j)
    order = np.argsort(-np.abs(diff), kind="stable")[:TOP_DISAGREEMENTS]
    top = tuple(Disagreement(samples[i].id, float(h[i]), float(j[i]), round(float(diff[i]), 4),
                             str(explanations[i] or ""), samples[i].output) for i in order)
    partitions: list[tuple[str, list[tuple[str, np.ndarray]]]] = []
    for by, labels in (("system", [s.system_id for s in samples]), ("group", [s.group_id for s in samples])):
        kinds = sorted(set(labels))
        if 1 < len(kinds) < n:
            partitions.append((by, [(k, np.array([x == k for x in labels])) for k in kinds]))
    partitions.append(("length", _terciles(np.array([words(s.output) for s in samples], dtype=float), "words")))
    partitions.append(("human score", _bands(h)))
    slices = []
    masks = []
    for by, parts in partitions:
        for name, mask in parts:
            size = int(mask.sum())
            if size < MIN_SLICE or size == n:
                continue
            value = _finite(metrics.correlation(h[mask], j[mask], "spearman"))
            worse = (overall.value - value) if overall.value is not None and value is not None else None
            slices.append(Slice(by, str(name), size, Figure(value, (None, None), size),
                                round(float(np.abs(diff[mask]).mean()), 4), None if worse is None else round(worse, 4),
                                tuple(samples[i].id for i in np.flatnonzero(mask))))
            masks.append(mask)
    order = sorted(range(len(slices)), key=lambda k: (slices[k].worse_by is None, -(slices[k].worse_by or 0.0),
                                                      -slices[k].mean_abs_rank_difference))
    ranked = []
    for rank, k in enumerate(order):
        s = slices[k]
        if rank < SLICES_WITH_INTERVAL:
            s = replace(s, spearman=_spearman(h[masks[k]], j[masks[k]], seed=seed))
        ranked.append(s)
    return Disagreements(n, overall, top, tuple(ranked))


# --------------------------------------------------------------------------- explanation themes


@dataclass(frozen=True)
class Theme:
    """A cluster of explanations, named by the terms that weigh most in its centre."""

    terms: tuple[str, ...]
    count: int
    examples: tuple[str, ...]
    """Up to two sample ids of explanations in it (the closest to its centre first)."""


@dataclass(frozen=True)
class Themes:
    """What the explanations of over-scored and of under-scored items talk about."""

    over: tuple[Theme, ...]
    under: tuple[Theme, ...]
    n_over: int
    """Over-scored items with an explanation."""
    n_under: int
    note: str = ""


_TOKEN = r"(?u)\b[^\W\d_]{3,}\b"
"""Words of three or more letters in any script (digits and score numbers say nothing about a theme)."""


def _themes(texts: list[str], ids: list[str], seed: int) -> tuple[Theme, ...]:
    from sklearn.cluster import KMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    if len(texts) < MIN_THEME_TEXTS:
        return ()
    try:
        matrix = TfidfVectorizer(stop_words="english", token_pattern=_TOKEN, sublinear_tf=True,
                                 max_features=2000).fit(texts)
    except ValueError:  # nothing but stop words
        return ()
    x = matrix.transform(texts)
    terms = np.array(matrix.get_feature_names_out())
    k = max(1, min(MAX_THEMES, len(texts) // MIN_THEME_TEXTS, len(set(texts))))
    model = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(x)
    themes = []
    for c in range(k):
        members = np.flatnonzero(model.labels_ == c)
        if members.size == 0:
            continue
        centre = model.cluster_centers_[c]
        top = tuple(str(terms[t]) for t in np.argsort(-centre)[:4] if centre[t] > 0)
        dist = np.linalg.norm(x[members].toarray() - centre, axis=1)
        examples = tuple(ids[i] for i in members[np.argsort(dist)][:2])
        themes.append(Theme(top, int(members.size), examples))
    themes.sort(key=lambda t: -t.count)
    return tuple(themes)


def explanation_themes(sample_ids: Sequence[str], human: Sequence[float], judge: Sequence[float],
                       explanations: Sequence[str], *, seed: int = 0) -> Themes:
    """Themes of the explanations of over-scored and of under-scored items (no call; needs explanations)."""
    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    texts = [re.sub(r"\s+", " ", str(e or "")).strip() for e in explanations]
    if not any(texts):
        return Themes((), (), 0, 0, note="this run has no explanations: its method gave scores without reasons "
                                         "(Active-Critic, reasoning-before-score runs and HD-Eval's criteria do)")
    diff = rank_difference(h, j) if h.size else np.zeros(0)
    sides = {}
    for side, mask in (("over", diff >= DISAGREEMENT_SHARE), ("under", diff <= -DISAGREEMENT_SHARE)):
        chosen = [i for i in np.flatnonzero(mask) if texts[i]]
        sides[side] = ([texts[i] for i in chosen], [str(sample_ids[i]) for i in chosen])
    over = _themes(*sides["over"], seed)
    under = _themes(*sides["under"], seed)
    few = [f"{len(sides[s][0])} {s}-scored" for s in ("over", "under") if len(sides[s][0]) < MIN_THEME_TEXTS]
    note = (f"{' and '.join(few)} items with an explanation: too few to cluster (at least {MIN_THEME_TEXTS})"
            if few else "")
    return Themes(over, under, len(sides["over"][0]), len(sides["under"][0]), note)


# --------------------------------------------------------------------------- binary aspects


@dataclass(frozen=True)
class BinaryAgreement:
    """Pass/fail agreement for an aspect with two human values, at thresholds chosen on other items."""

    n: int
    positive: float
    """The human value counted as positive (the higher one)."""
    agreement: Figure
    kappa: Figure
    """Cohen's kappa (:func:`sklearn.metrics.cohen_kappa_score`)."""
    true_positive_rate: float | None
    true_negative_rate: float | None
    thresholds: tuple[float, ...]
    """The threshold of each fold: a judge score at or above it counts as positive."""
    note: str = ""


def _best_threshold(human: np.ndarray, judge: np.ndarray) -> float:
    # the threshold with the best balanced accuracy on these items; candidates are the judge's own scores
    best, best_value = float(np.min(judge)), -1.0
    for t in np.unique(judge):
        pred = judge >= t
        pos, neg = human, ~human
        tpr = pred[pos].mean() if pos.any() else 0.0
        tnr = (~pred[neg]).mean() if neg.any() else 0.0
        value = (tpr + tnr) / 2
        if value > best_value + 1e-12:
            best, best_value = float(t), value
    return best


def _kappa(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cohen's kappa of boolean rows ``a`` and ``b`` (vectorised over bootstrap rows)."""
    po = (a == b).mean(axis=-1)
    pa, pb = a.mean(axis=-1), b.mean(axis=-1)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def binary_agreement(human: Sequence[float], judge: Sequence[float], *, seed: int = 0) -> BinaryAgreement | None:
    """Agreement, kappa and true positive/negative rates when humans gave two values; None otherwise.

    The runs store the judge's scores on the test items only, so the threshold cannot come from its training
    items: it is chosen by two-fold cross-fitting on the test items (the best balanced accuracy on one half,
    applied to the other), so no item is classified at a threshold chosen on itself.
    """
    from sklearn.metrics import cohen_kappa_score

    h, j = (np.asarray(x, dtype=float) for x in (human, judge))
    values = sorted(set(np.round(h, 6).tolist()))
    if len(values) != 2:
        return None
    positive = values[1]
    truth = np.isclose(h, positive)
    n = int(h.size)
    empty = Figure(None, (None, None), n)
    if n < MIN_ITEMS:
        return BinaryAgreement(n, positive, empty, empty, None, None, (),
                               note=f"{n} items both scored: too few for pass/fail agreement (at least {MIN_ITEMS})")
    folds = np.arange(n) % 2 == 1
    np.random.default_rng(seed).shuffle(folds)
    pred = np.zeros(n, dtype=bool)
    thresholds = []
    for fold in (folds, ~folds):
        t = _best_threshold(truth[~fold], j[~fold])
        thresholds.append(t)
        pred[fold] = j[fold] >= t
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(N_BOOTSTRAP, n))
    agree_reps = (truth[idx] == pred[idx]).mean(axis=1)
    kappa_reps = _kappa(truth[idx], pred[idx])

    def figure(point: float, reps: np.ndarray) -> Figure:
        reps = reps[np.isfinite(reps)]
        if not math.isfinite(point) or reps.size == 0:
            return Figure(_finite(point), (None, None), n)
        low, high = np.percentile(reps, [2.5, 97.5])
        return Figure(float(point), (float(low), float(high)), n)

    kappa = float(cohen_kappa_score(truth, pred)) if len(set(truth)) > 1 or len(set(pred)) > 1 else math.nan
    tpr = float(pred[truth].mean()) if truth.any() else None
    tnr = float((~pred[~truth]).mean()) if (~truth).any() else None
    return BinaryAgreement(n, positive, figure(float((truth == pred).mean()), agree_reps), figure(kappa, kappa_reps),
                           tpr, tnr, tuple(thresholds))


# --------------------------------------------------------------------------- stability (new calls)


STABILITY_ITEMS = 20
"""Test items a stability probe re-scores by default."""

STABILITY_REPEATS = 3
"""Times each is re-scored by default."""

STABILITY_TEMPERATURE = 0.7
"""Sampling temperature of the repeats (greedy requests are sent at it; a method that samples keeps its own)."""


@dataclass(frozen=True)
class Stability:
    """How much the judge's scores move when the same items are scored again with sampling on."""

    n_items: int
    """Items re-scored."""
    repeats: int
    temperature: float
    n: int
    """Items scored in every repeat (the figures rest on these)."""
    missing: int
    """Repeat scores that came back without a score (counted, never imputed)."""
    mean_sd: float | None
    """Mean over items of the standard deviation of their scores across repeats (scale points)."""
    retest: Figure
    """Mean pairwise Spearman between repeats, with a bootstrap interval over items."""
    with_humans: tuple[float | None, ...]
    """Spearman with the human scores of each repeat."""
    with_humans_spread: float | None
    """Largest minus smallest of ``with_humans``."""
    varied: str
    """What varied between repeats: ``sampling`` (temperature and seed) or ``order`` (the order of the
    demonstrations, criteria, examples or hypotheses inside the prompts, decoding greedy)."""
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict; NaN is never written (undefined values are None)."""
        return _jsonable(asdict(self))


def stability_figures(scores: np.ndarray, human: Sequence[float], *, temperature: float,
                      seed: int = 0, varied: str = "sampling") -> Stability:
    """The stability figures of ``scores`` (one row per repeat, one column per item), no call."""
    x = np.asarray(scores, dtype=float)
    h = np.asarray(human, dtype=float)
    repeats, n_items = x.shape
    complete = np.all(np.isfinite(x), axis=0)
    n = int(complete.sum())
    missing = int((~np.isfinite(x)).sum())
    retest, _ = metrics.retest_agreement(x, n_bootstrap=N_BOOTSTRAP, seed=seed)
    per_repeat = tuple(_finite(metrics.correlations(h[np.isfinite(row)], row[np.isfinite(row)])["spearman"])
                       if np.isfinite(row).sum() >= 2 else None for row in x)
    defined = [v for v in per_repeat if v is not None]
    note = ""
    if n < 2:
        note = f"{n} of {n_items} items were scored in every repeat: too few for a figure"
    elif not math.isfinite(retest.value):
        note = "the judge gave every item the same score in a repeat: its repeats cannot be correlated"
    return Stability(n_items=n_items, repeats=repeats, temperature=temperature, n=n, missing=missing,
                     mean_sd=_finite(float(np.std(x[:, complete], axis=0, ddof=1).mean())) if n and repeats > 1
                     else None,
                     retest=Figure(_finite(retest.value), _interval((retest.ci_low, retest.ci_high)), n),
                     with_humans=per_repeat,
                     with_humans_spread=round(max(defined) - min(defined), 4) if defined else None,
                     varied=varied, note=note)


def stability_items(test_ids: Sequence[str], size: int = STABILITY_ITEMS, *, seed: int = 0) -> list[str]:
    """The test items a stability probe re-scores: a seeded sample of ``size`` (all when fewer)."""
    ids = list(test_ids)
    if len(ids) <= size:
        return ids
    chosen = np.random.default_rng(seed).choice(len(ids), size=size, replace=False)
    return [ids[i] for i in sorted(chosen)]


def stability_calls(method: Any, n_items: int, repeats: int) -> int:
    """Calls a stability probe makes before any cache hit: ``repeats`` scorings of ``n_items``."""
    return int(method.estimate_calls(0, n_items).get("score", n_items)) * repeats


VARIES = ("sampling", "order")
"""What a stability probe varies between repeats; reported apart, so a position effect shows as such."""


def stability(judge: Any, samples: Sequence[Sample], aspect: str, *, llm: Any, repeats: int = STABILITY_REPEATS,
              temperature: float = STABILITY_TEMPERATURE, seed: int = 0, vary: str = "sampling",
              progress: Any = None) -> Stability:
    """Score ``samples`` ``repeats`` times, varying one thing, and measure the spread.

    ``vary="sampling"``: each repeat samples at ``temperature`` with its own seed (``seed + 1 ...``) through
    the one call path (:meth:`judge_engine.llm.LLM.sampled`). ``vary="order"``: decoding stays greedy and each
    repeat shuffles the order of the items the judge puts inside its prompts (its method's
    ``ordered_state``: demonstrations, criteria, examples, hypotheses); a method that puts none raises
    ValueError. Every call is cached: re-running the probe costs nothing and an interrupted one resumes. The
    run's own verdicts are not touched. ``progress(done, total, stage)`` is called as items are scored.
    """
    from .methods import METHODS, reordered

    if vary not in VARIES:
        raise ValueError(f"a stability probe varies one of {', '.join(VARIES)}, not {vary!r}")
    if repeats < 2:
        raise ValueError(f"a stability probe needs at least 2 repeats, got {repeats}")
    if not samples:
        raise ValueError("a stability probe needs at least one item to re-score")
    if vary == "order" and not METHODS[judge.method].ordered_state:
        raise ValueError(f"{judge.method} puts no list of demonstrations, criteria or examples into one prompt: "
                         "there is no order to vary")
    rows = []
    for r in range(repeats):
        stage = f"stability ({vary}) repeat {r + 1} of {repeats}"
        tick = (lambda d, t, _stage="", _s=stage: progress(d, t, _s)) if progress else None
        if vary == "sampling":
            verdicts = judge.score(list(samples), llm=llm.sampled(temperature=temperature, seed=seed + 1 + r),
                                   progress=tick)
        else:
            verdicts = reordered(judge, seed + 1 + r).score(list(samples), llm=llm, progress=tick)
        by_id = {v.sample_id: v.score for v in verdicts if v.aspect == aspect}
        rows.append([by_id.get(s.id, math.nan) for s in samples])
    human = [s.human.get(aspect, math.nan) for s in samples]
    return stability_figures(np.array(rows, dtype=float), human, temperature=temperature if vary == "sampling"
                             else 0.0, seed=seed, varied=vary)


def probe_stability(store: Any, run_id: int, *, llm: Any = None, items: int = STABILITY_ITEMS,
                    repeats: int = STABILITY_REPEATS, temperature: float = STABILITY_TEMPERATURE, seed: int = 0,
                    vary: str = "sampling", progress: Any = None, api_key: str | None = None) -> Stability:
    """:func:`stability` of finished run ``run_id`` on a seeded sample of its test items, on the run's backend.

    Raises
    ------
    ValueError
        When the run is not finished, or has no judge or no test items.
    """
    from . import runs
    from .methods import Judge

    run = store.run(run_id)
    if run.status != "finished" or run.judge is None or run.split is None:
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has a judge to re-score with")
    dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
    ids = stability_items([i for i in run.split.test_ids if i in dataset.by_id()], items, seed=seed)
    if llm is None:
        llm = make_llm(LLMConfig.from_dict(run.llm), store=store, api_key=api_key)
    return stability(Judge.from_dict(run.judge), dataset.subset(ids), run.aspect, llm=llm, repeats=repeats,
                     temperature=temperature, seed=seed, vary=vary, progress=progress)


def stability_lines(found: Stability) -> list[str]:
    """The stability probe in sentences (for a terminal or a caption)."""
    what = (f"sampling, temperature {found.temperature:g}" if found.varied == "sampling"
            else "order of the items inside the prompts, greedy")
    head = (f"stability ({what}, {found.repeats} repeats of "
            f"{found.n_items} items, {found.n} scored in every repeat"
            + (f", {found.missing} repeat scores missing" if found.missing else "") + ")")
    if found.note:
        return [f"{head}: {found.note}"]
    spread = ", ".join("undefined" if v is None else f"{v:+.2f}" for v in found.with_humans)
    return [f"{head}: mean per-item standard deviation {found.mean_sd:.2f} points; test-retest Spearman "
            f"{_fig(found.retest)}; Spearman with the humans per repeat {spread}"
            + (f" (spread {found.with_humans_spread:.2f})" if found.with_humans_spread is not None else "")]


# --------------------------------------------------------------------------- a run


@dataclass(frozen=True)
class ProbeReport:
    """Every probe of one finished run, on its test items both the judge and the humans scored."""

    run_id: int
    aspect: str
    n: int
    """Test items both scored."""
    n_missing: int
    """Test items the judge gave no score (left out of every probe, as of every correlation)."""
    length: LengthBias
    collapse: Collapse
    disagreements: Disagreements
    themes: Themes
    binary: BinaryAgreement | None
    """None when the humans gave more than two values."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict; NaN is never written (undefined values are None)."""
        return _jsonable(asdict(self))


def probes(dataset: Dataset, aspect: str, verdicts: Sequence[Verdict], *, run_id: int = 0,
           seed: int = 0) -> ProbeReport:
    """All the probes of ``verdicts`` against the human scores of ``dataset`` on ``aspect``."""
    index = dataset.by_id()
    rows = [(index[v.sample_id], v) for v in verdicts if v.sample_id in index and v.aspect == aspect]
    both = [(s, v) for s, v in rows if not v.missing and math.isfinite(s.human.get(aspect, math.nan))]
    samples = [s for s, _ in both]
    human = np.array([s.human[aspect] for s in samples], dtype=float)
    judge = np.array([v.score for _, v in both], dtype=float)
    explanations = [v.explanation for _, v in both]
    lengths = [words(s.output) for s in samples]
    return ProbeReport(
        run_id=int(run_id), aspect=aspect, n=len(both), n_missing=sum(1 for _, v in rows if v.missing),
        length=length_bias(lengths, human, judge, seed=seed),
        collapse=collapse(human, judge),
        disagreements=disagreements(samples, human, judge, explanations, seed=seed),
        themes=explanation_themes([s.id for s in samples], human, judge, explanations, seed=seed),
        binary=binary_agreement(human, judge, seed=seed))


def probe_run(store: Any, run_id: int, *, seed: int = 0) -> ProbeReport:
    """The :class:`ProbeReport` of finished run ``run_id`` (no LLM call).

    Raises
    ------
    ValueError
        When the run is not finished.
    """
    from . import runs

    run = store.run(run_id)
    if run.status != "finished":
        raise ValueError(f"run #{run_id} is {run.status}: only a finished run has verdicts to probe")
    dataset = runs.human_dataset(store, run.dataset, run.human_aggregate)
    return probes(dataset, run.aspect, store.load_verdicts(run_id), run_id=run_id, seed=seed)


def _fig(f: Figure) -> str:
    if f.value is None:
        return "undefined"
    ci = f" [{f.ci[0]:+.2f}, {f.ci[1]:+.2f}]" if f.ci[0] is not None and f.ci[1] is not None else " (no interval)"
    return f"{f.value:+.2f}{ci}"


def summary_lines(report: ProbeReport) -> list[str]:
    """The probes in sentences, one per probe (for a terminal or a caption); figures carry n and interval.

    Generated text (explanations, outputs) is not quoted here: the lines name items by id only.
    """
    lines = [f"probes of run #{report.run_id} on {report.aspect}: {report.n} test items scored by both "
             f"the judge and the humans" + (f", {report.n_missing} without a judge score (left out)"
                                            if report.n_missing else "")]
    lb = report.length
    if lb.note and lb.judge.value is None:
        lines.append(f"length: {lb.note}")
    else:
        verdict = ("follows length significantly more than the humans do" if lb.flagged
                   else "does not follow length significantly more than the humans do")
        p = f"p = {lb.excess_p:.3f}" if lb.excess_p is not None else "no test"
        excess = f"{lb.excess:+.2f}" if lb.excess is not None else "undefined"
        lines.append(f"length: the judge {verdict}: Spearman with length in words {_fig(lb.judge)} against the "
                     f"humans' {_fig(lb.human)} (difference {excess}, paired bootstrap {p}, {lb.n} items)")
    c = report.collapse
    if c.judge.n:
        lines.append(f"collapse: {c.judge.distinct} distinct judge scores against {c.human.distinct} human ones; "
                     f"its most frequent score ({c.judge.modal:g}) went to {c.judge.modal_share:.0%} of the items"
                     + (" (collapsed)" if c.collapsed else ""))
    else:
        lines.append(f"collapse: {c.note}")
    d = report.disagreements
    if d.note:
        lines.append(f"disagreements: {d.note}")
    else:
        worst = [s for s in d.slices if s.worse_by is not None and s.worse_by > 0][:3]
        listed = "; ".join(f"{s.by} {s.name}: Spearman {_fig(s.spearman)} over {s.n} items" for s in worst)
        lines.append(f"disagreements: overall Spearman {_fig(d.overall)}; worst slices: {listed or 'none worse'}; "
                     f"most disagreeing items: {', '.join(x.sample_id for x in d.top[:5])}")
    t = report.themes
    if t.over or t.under:
        for side, themes in (("over-scored", t.over), ("under-scored", t.under)):
            if themes:
                lines.append(f"themes of {side} items' explanations: " + "; ".join(
                    f"{', '.join(th.terms)} ({th.count})" for th in themes))
    if t.note:
        lines.append(f"themes: {t.note}")
    b = report.binary
    if b is not None:
        if b.note:
            lines.append(f"pass/fail: {b.note}")
        else:
            rates = (f"true positive rate {b.true_positive_rate:.0%}, true negative rate {b.true_negative_rate:.0%}"
                     if b.true_positive_rate is not None and b.true_negative_rate is not None else "")
            lines.append(f"pass/fail (human {b.positive:g} is positive): agreement {_fig(b.agreement)}, Cohen's "
                         f"kappa {_fig(b.kappa)}, {rates} ({b.n} items, thresholds cross-fitted on the test items)")
    return lines
