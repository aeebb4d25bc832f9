"""Compare finished runs fairly: same items, same levels, paired significance, failures, cost.

Everything here is a pure function of stored runs and their verdicts; the
comparison page only renders what these return.

- :func:`finished_runs` and :func:`split_key`: which runs can be compared
  (same dataset, aspect and test items).
- :func:`align`: the runs' scores on one list of items; refuses runs on
  different items unless the common subset is asked for.
- :func:`comparison_frame`: Pearson / Spearman / Kendall with bootstrap CIs,
  parse failures, calls, tokens, seconds and dollars for fitting and scoring,
  and a paired bootstrap test of each run against the best one.
- :func:`disagreement_frame`, :func:`label_next`: where judges fail, and
  which items a person should label next.
- :func:`item_explanation`: for a run whose judge aggregates criterion scores
  with a white-box model, the SHAP attribution of one item's score.
- :func:`human_ceiling`: leave-one-annotator-out agreement, where the data
  has per-annotator scores.
- :func:`transfer_judge`: a finished judge aimed at another dataset's aspect.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import pandas as pd

from . import annotations, evidence, explain, metrics
from .llm import LedgerTotals
from .methods import Judge
from .records import Annotation, Aspect, Dataset, RunRecord, Verdict
from .store import Store

STATISTICS = metrics.COEFFICIENTS
"""Correlation coefficients reported: pearson, spearman, kendall."""


class NotComparable(ValueError):
    """Runs that were not scored on the same items."""


def split_key(run: RunRecord) -> str:
    """Identity of a run's test items (dataset + sorted test ids), short hex."""
    ids = sorted(run.split.test_ids) if run.split else []
    return hashlib.sha256("\n".join([run.dataset, *ids]).encode("utf-8")).hexdigest()[:12]


def finished_runs(store: Store, dataset: str, aspect: str) -> list[RunRecord]:
    """Finished runs of ``dataset`` / ``aspect``, newest first (without their judges, as ``Store.runs``)."""
    return [r for r in store.runs(dataset=dataset, limit=10_000) if r.aspect == aspect and r.status == "finished"]


def runs_by_split(runs: Sequence[RunRecord]) -> dict[str, list[RunRecord]]:
    """Runs grouped by :func:`split_key`, largest group first."""
    groups: dict[str, list[RunRecord]] = {}
    for r in runs:
        groups.setdefault(split_key(r), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def short_run_label(run: RunRecord) -> str:
    """``#id method``: a run's column in the aligned score table and its name in messages.

    (The pages' select boxes use the longer ``pages.ui.tables.run_label``, with the dataset and the time.)
    """
    return f"#{run.id} {run.method}"


@dataclass(frozen=True)
class Aligned:
    """Scores of several runs on one list of items."""

    ids: tuple[str, ...]
    """Item ids, in the order of every array."""
    runs: tuple[RunRecord, ...]
    """The runs, in column order."""
    scores: dict[int, np.ndarray]
    """Run id -> judge score per item (NaN = missing)."""
    verdicts: dict[int, dict[str, Verdict]]
    """Run id -> item id -> verdict."""


def align(store: Store, runs: Sequence[RunRecord], *, common_subset: bool = False) -> Aligned:
    """Line up the verdicts of ``runs`` on the same items.

    Raises :class:`NotComparable` when the runs were scored on different
    items, unless ``common_subset`` (then only the items every run scored).
    """
    if not runs:
        raise NotComparable("choose at least one run")
    keys = {(r.dataset, r.aspect) for r in runs}
    if len(keys) > 1:
        raise NotComparable(f"runs are on different datasets or aspects: {sorted(keys)}")
    verdicts = {r.id: {v.sample_id: v for v in store.load_verdicts(r.id)} for r in runs}
    item_sets = [set(v) for v in verdicts.values()]
    common = set.intersection(*item_sets)
    if any(s != common for s in item_sets) and not common_subset:
        sizes = ", ".join(f"{short_run_label(r)}: {len(verdicts[r.id])} items" for r in runs)
        if not common:  # a common subset would be empty too: nothing to offer
            raise NotComparable(f"these runs were scored on different items and share none ({sizes}): there is "
                                "nothing to compare")
        raise NotComparable(f"these runs were scored on different items ({sizes}); compare them on the "
                            f"{len(common)} items they share only if you ask for the common subset")
    ids = tuple(sorted(common))
    scores = {rid: np.array([v[i].score if not v[i].missing else math.nan for i in ids], dtype=float)
              for rid, v in verdicts.items()}
    return Aligned(ids=ids, runs=tuple(runs), scores=scores, verdicts=verdicts)


def _columns(dataset: Dataset, aspect: str, ids: Sequence[str]) -> tuple[np.ndarray, list[str], list[str]]:
    index = dataset.by_id()
    samples = [index[i] for i in ids]
    human = np.array([s.human.get(aspect, math.nan) for s in samples], dtype=float)
    return human, [s.group_id for s in samples], [s.system_id for s in samples]


def available_levels(dataset: Dataset, ids: Sequence[str]) -> list[str]:
    """Levels that make sense for these items (group needs shared groups, system 3+ systems)."""
    _, groups, systems = _columns(dataset, dataset.aspects[0].name, ids)
    levels = ["sample"]
    if len(set(groups)) < len(groups):
        levels.append("group")
    if len(set(systems)) >= 3:
        levels.append("system")
    return levels


def paired_bootstrap(human: Sequence[float], pred_a: Sequence[float], pred_b: Sequence[float], *,
                     level: str = "sample", groups: Sequence[str] | None = None,
                     systems: Sequence[str] | None = None, statistic: str = "spearman",
                     n_bootstrap: int = 1000, seed: int = 0, independent: bool = False) -> tuple[float, float]:
    """Difference of a correlation between two judges on the same items, and its two-sided p-value.

    Items are resampled jointly for both judges (whole groups at group and
    system level, and at sample level where a group holds several items unless
    ``independent``), so the test accounts for their pairing. Only items where
    the human and both judges have a score are used. Returns ``(diff, p)``
    with ``diff = r(a) - r(b)`` on the full data; ``p`` is NaN when the
    statistic is undefined or when :func:`judge_engine.evidence.basis` allows
    no claim on these items (fewer than five independent units: one SummEval
    article's 16 summaries once gave p = 0.0 for any difference). Over whole sources at sample level the
    percentile p is read as the expanded interval reads its bounds (:func:`judge_engine.metrics._paired.
    expanded_p`): a plain one over 5 sources was too small. Sample and
    group levels are computed for all resamples at once (as
    :func:`judge_engine.metrics.meta_evaluate` does) when items are resampled.
    """
    h, a, b = (np.asarray(x, dtype=float) for x in (human, pred_a, pred_b))
    keep = np.isfinite(h) & np.isfinite(a) & np.isfinite(b)
    h, a, b = h[keep], a[keep], b[keep]
    g = [x for x, k in zip(groups, keep) if k] if groups is not None else None
    s = [x for x, k in zip(systems, keep) if k] if systems is not None else None
    if h.size < 3:
        return math.nan, math.nan
    col = STATISTICS.index(statistic)

    def point(pred: np.ndarray) -> float:
        return metrics.level_correlations(h, pred, level=level, groups=g, systems=s)[0][statistic]

    observed = point(a) - point(b)
    if not math.isfinite(observed):
        return observed, math.nan
    claim = evidence.basis(level, n_items=int(h.size), groups=g, independent=independent)
    if not claim.claim:
        return observed, math.nan
    rng = np.random.default_rng(seed)
    if level == "sample" and claim.units == "groups":
        diffs = _grouped_sample_diffs(h, a, b, g, statistic, n_bootstrap, rng)
    elif level == "sample":
        idx = rng.integers(0, h.size, size=(n_bootstrap, h.size))
        diffs = (metrics._rowwise_correlations(h[idx], a[idx], only=statistic)[:, col]
                 - metrics._rowwise_correlations(h[idx], b[idx], only=statistic)[:, col])
    elif level == "group":
        codes, _ = metrics._codes(g, h.size, "groups")
        n_groups = int(codes.max()) + 1
        ta = metrics._group_table(h, a, codes, n_groups)[:, col]
        tb = metrics._group_table(h, b, codes, n_groups)[:, col]
        weights = metrics._resample_weights(rng, n_groups, n_bootstrap).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            ra = (weights @ np.nan_to_num(ta)) / (weights @ np.isfinite(ta))
            rb = (weights @ np.nan_to_num(tb)) / (weights @ np.isfinite(tb))
        diffs = ra - rb
    else:  # system level: whole groups redrawn, system means recomputed (few systems: a plain loop is fine)
        units: dict[str, list[int]] = {}
        for i, unit in enumerate(g if g is not None else range(h.size)):
            units.setdefault(str(unit), []).append(i)
        unit_index = [np.array(v) for v in units.values()]
        diffs_list = []
        for _ in range(n_bootstrap):
            idx = np.concatenate([unit_index[k] for k in rng.integers(0, len(unit_index), size=len(unit_index))])
            ss = [s[i] for i in idx]
            ra = metrics.level_correlations(h[idx], a[idx], level="system", systems=ss)[0][statistic]
            rb = metrics.level_correlations(h[idx], b[idx], level="system", systems=ss)[0][statistic]
            diffs_list.append(ra - rb)
        diffs = np.array(diffs_list)
    diffs = diffs[np.isfinite(diffs)]
    if diffs.size == 0:
        return observed, math.nan
    p = float(min(1.0, 2 * min(np.mean(diffs <= 0), np.mean(diffs >= 0))))
    if level == "sample" and claim.units == "groups":
        # over a few sources the percentile p is too small (two equal judges "significantly" apart in 7.8% [5.5,
        # 10.8] of draws at 20 items in 5 sources, bench verdicts): read as the items' interval is (expanded tail)
        from .metrics._paired import expanded_p
        p = expanded_p(p, claim.n_units)
    return observed, p


def _grouped_sample_diffs(h: np.ndarray, a: np.ndarray, b: np.ndarray, groups: Sequence[str], statistic: str,
                          n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """Items' correlation differences over resamples of whole groups (items of one source go together,
    :func:`judge_engine.metrics.group_resamples`, as the items' interval of ``meta_evaluate`` draws them)."""
    col = STATISTICS.index(statistic)
    codes, labels = metrics._codes(groups, h.size, "groups")
    buckets, _ = metrics.group_resamples(codes, len(labels), n_bootstrap, rng)
    return np.concatenate([metrics._rowwise_correlations(h[idx], a[idx], only=statistic)[:, col]
                           - metrics._rowwise_correlations(h[idx], b[idx], only=statistic)[:, col]
                           for idx in buckets])


def cost_split(store: Store, run: RunRecord) -> dict[str, dict[str, float]]:
    """The run's ledger split into fitting and scoring (from the ledger saved when fit ended)."""
    total = run.ledger
    fitted = store.run_events(run.id, kind="fitted")
    fit = LedgerTotals.from_dict(fitted[-1].payload.get("ledger")) if fitted else LedgerTotals()
    keys = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "seconds", "dollars")
    return {"fit": {k: float(getattr(fit, k)) for k in keys},
            "score": {k: float(getattr(total, k)) - float(getattr(fit, k)) for k in keys},
            "total": {k: float(getattr(total, k)) for k in keys}}


def _seconds(run: RunRecord) -> float:
    summary = run.summary
    return float(summary.seconds) if summary else 0.0


def comparison_basis(dataset: Dataset, aligned: Aligned, level: str, *, independent: bool = False) -> evidence.Basis:
    """What the comparison's intervals and tests may rest on (:func:`judge_engine.evidence.basis`)."""
    _, groups, _ = _columns(dataset, aligned.runs[0].aspect, aligned.ids)
    return evidence.basis(level, n_items=len(aligned.ids), groups=groups, independent=independent)


def comparison_frame(store: Store, dataset: Dataset, aligned: Aligned, *, level: str, statistic: str = "spearman",
                     n_bootstrap: int = 1000, alpha: float = 0.05, independent: bool = False) -> pd.DataFrame:
    """One row per run: correlations with CIs at ``level``, failures, cost, and the test against the best run.

    Intervals and tests follow :func:`comparison_basis`: none when the items hold fewer than five independent
    units (then no row is "significantly worse"), the test at the items' level when a group-level figure rests
    on too few groups (with whole groups resampled where items share a source, unless ``independent``). The
    columns ``tested at`` and ``resampled`` say which; ``frame.attrs["evidence"]`` holds the sentence."""
    aspect = aligned.runs[0].aspect
    human, groups, systems = _columns(dataset, aspect, aligned.ids)
    claim = evidence.basis(level, n_items=len(aligned.ids), groups=groups, independent=independent)
    reports = {}
    for r in aligned.runs:
        # at the items' level over items that share sources, whole sources are resampled (unless independent)
        reports[r.id] = metrics.meta_evaluate(human, aligned.scores[r.id], level=level, groups=groups,
                                                 systems=systems, n_bootstrap=n_bootstrap,
                                                 independent=independent).to_dict()
    finite = {rid: rep[statistic] for rid, rep in reports.items() if rep[statistic] is not None}
    best = max(finite, key=finite.get) if finite else None
    # an interval at the level shown only where the rule allows a claim at that level
    show_ci = claim.level == level
    rows = []
    for r in aligned.runs:
        rep = reports[r.id]
        cost = cost_split(store, r)
        n = len(aligned.ids)
        missing = int(np.count_nonzero(~np.isfinite(aligned.scores[r.id])))
        row = {"run": r.id, "method": r.method, "level": level}
        for m in STATISTICS:
            row[m] = rep[m]
            row[f"{m} CI"] = rep[f"{m}_ci"] if show_ci else None
        row.update({
            "n": rep["n"], "parse failures": missing, "failure rate": missing / n if n else 0.0,
            "fit calls": int(cost["fit"]["calls"]), "score calls": int(cost["score"]["calls"]),
            "cache hits": int(cost["total"]["cache_hits"]),
            "tokens": int(cost["total"]["prompt_tokens"] + cost["total"]["completion_tokens"]),
            "seconds": _seconds(r), "dollars": cost["total"]["dollars"],
            "tested at": claim.level or "no test", "resampled": claim.units if claim.claim else "nothing",
        })
        if best is None or r.id == best:
            row.update({f"Δ{statistic} vs best": 0.0 if r.id == best else None, "p vs best": None,
                        "best": r.id == best, "significantly worse": False})
        else:
            diff = (reports[r.id][statistic] - reports[best][statistic]
                    if reports[r.id][statistic] is not None else None)
            p, diff_tested = None, None
            if claim.claim:
                diff_tested, p = paired_bootstrap(human, aligned.scores[r.id], aligned.scores[best], level=claim.level,
                                                  groups=groups, systems=systems, statistic=statistic,
                                                  n_bootstrap=n_bootstrap, independent=independent)
                p = p if p == p else None
                if claim.level == level:
                    diff = diff_tested
            row.update({f"Δ{statistic} vs best": diff, "p vs best": p, "best": False,
                        "significantly worse": evidence.p_value_claim(p, diff_tested, alpha, claim)})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs["evidence"] = evidence_sentence(claim)
    return frame


def frame_evidence(frame: pd.DataFrame) -> str:
    """The sentence :func:`comparison_frame` left in the frame's attrs (a cached copy may have lost them: then
    it is read again from the frame's columns)."""
    said = frame.attrs.get("evidence")
    if said:
        return str(said)
    if len(frame) and frame["tested at"].iloc[0] == "no test":
        return f"No interval and no paired test: too few independent units, so {evidence.NO_EVIDENCE}."
    return ""


def evidence_sentence(claim: evidence.Basis) -> str:
    """What the comparison's intervals and tests rest on, in words."""
    if not claim.claim:
        return f"No interval and no paired test: {claim.note}."
    how = ("whole groups resampled (items of one source go together)" if claim.units == "groups"
           else "items resampled (treated as independent)")
    text = f"Intervals and paired tests at the {claim.level} level over {claim.n_units} {claim.units}: {how}."
    return text + (f" {claim.note[0].upper()}{claim.note[1:]}." if claim.note else "")


def _normalised(values: np.ndarray, low: float, high: float) -> np.ndarray:
    return (values - low) / (high - low) if high > low else values * 0.0


def disagreement_frame(dataset: Dataset, aligned: Aligned) -> pd.DataFrame:
    """Items sorted by how far the judges are from the human score (mean |judge - human| on a 0-1 scale)."""
    aspect = dataset.aspect(aligned.runs[0].aspect)
    human, groups, systems = _columns(dataset, aspect.name, aligned.ids)
    h = _normalised(human, aspect.low, aspect.high)
    errors = np.vstack([np.abs(_normalised(aligned.scores[r.id], aspect.low, aspect.high) - h)
                        for r in aligned.runs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an item no judge scored has no mean error
        mean_error = np.nanmean(errors, axis=0)
    frame = pd.DataFrame({"item": aligned.ids, "group": groups, "system": systems, "human": human,
                          "mean |judge - human| (0-1)": mean_error})
    for r in aligned.runs:
        frame[short_run_label(r)] = aligned.scores[r.id]
    return frame.sort_values("mean |judge - human| (0-1)", ascending=False, na_position="last",
                             kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class ItemExplanation:
    """Why an aggregator judge gave one item its score: the SHAP value of each criterion."""

    run_id: int
    """The run whose judge scored the item."""
    item: str
    """The item (sample id)."""
    target: str
    """The aspect explained (the run's aspect)."""
    shap: pd.DataFrame
    """One row (index ``item``) x criteria; ``shap.attrs["base_value"]`` is the explainer's base value.

    Base value plus the row's sum is the aggregator's prediction, before the
    verdict clips it to the aspect's scale (exactly for linear and tree
    aggregators, approximately for the MLP's permutation explainer)."""
    labels: dict[str, str]
    """Readable criterion names by criterion id."""
    imputed: tuple[str, ...]
    """Criteria with no score for this item (reply did not parse), filled with their training mean."""


def item_explanation(store: Store, run_id: int, item: str, *, verdict: Verdict | None = None) -> ItemExplanation | None:
    """SHAP explanation of ``item``'s score in run ``run_id``, if the run's judge holds an aggregator.

    Works for any method whose Judge keeps a white-box aggregator over
    criterion scores in its state (see :func:`judge_engine.explain.state_aggregator`;
    HD-Eval today). Returns None when the judge has no aggregator, when the
    run has no verdict with a score for ``item``, or when the aggregator
    learned nothing. ``verdict`` saves reading the run's verdicts again.
    """
    run = store.run(run_id)
    target, state = run.judge_target, run.judge_state
    agg = explain.state_aggregator(state, target)
    if agg is None:
        return None
    if verdict is None:
        verdict = next((v for v in store.load_verdicts(run_id) if v.sample_id == item), None)
    if verdict is None or verdict.missing or not verdict.criteria:
        return None
    frame = explain.explain_row(agg, verdict.criteria, sample_id=item, target=target)
    if frame is None:
        return None
    imputed = tuple(f for f in agg.features if verdict.criteria.get(f) is None or math.isnan(verdict.criteria[f]))
    return ItemExplanation(run_id=int(run_id), item=item, target=target, shap=frame,
                           labels=explain.criterion_labels(state), imputed=imputed)


def label_next(dataset: Dataset, aligned: Aligned, *, k: int = 10) -> pd.DataFrame:
    """Items whose human label would help most: where the judges disagree most with each other.

    Disagreement is the spread (standard deviation) of the judges' scores on
    a 0-1 scale; the list takes the most disputed item of each group first,
    then the next of each group, so it covers many groups.
    """
    aspect = dataset.aspect(aligned.runs[0].aspect)
    _, groups, _ = _columns(dataset, aspect.name, aligned.ids)
    if len(aligned.runs) < 2:
        raise ValueError("label suggestions need at least two runs to compare")
    matrix = np.vstack([_normalised(aligned.scores[r.id], aspect.low, aspect.high) for r in aligned.runs])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an item no judge scored has no spread
        # one call over the matrix, not one per item: 1,600 items took 0.1 s in a loop
        spread = np.where(np.isfinite(matrix).sum(axis=0) >= 2, np.nanstd(matrix, axis=0), np.nan)
    order = [i for i in np.argsort(-np.nan_to_num(spread, nan=-1.0), kind="stable")]
    by_group: dict[str, list[int]] = {}
    for i in order:
        by_group.setdefault(groups[i], []).append(i)
    picked: list[int] = []
    depth = 0
    while len(picked) < min(k, len(order)):
        layer = [items[depth] for items in by_group.values() if depth < len(items)]
        if not layer:
            break
        layer.sort(key=lambda i: -np.nan_to_num(spread[i], nan=-1.0))
        picked.extend(layer[: k - len(picked)])
        depth += 1
    return pd.DataFrame({"item": [aligned.ids[i] for i in picked], "group": [groups[i] for i in picked],
                         "judge spread (0-1)": [spread[i] for i in picked]})


def human_ceiling(dataset: Dataset, aspect: str, ids: Sequence[str], *, level: str = "sample") -> dict[str, Any] | None:
    """Leave-one-annotator-out agreement of the samples' per-annotator lists: each annotator against the mean
    of the others, averaged (computed by :func:`judge_engine.annotations.agreement`; the Compare page uses the
    stored labels instead, which include the workbench's annotators).

    Returns None when the items have fewer than two annotators' scores for
    ``aspect``. A judge that reaches this value agrees with the humans as well
    as they agree with each other.
    """
    index = dataset.by_id()
    samples = [index[i] for i in ids]
    labels = [Annotation(dataset.name, s.id, aspect, f"rater{k + 1}", float(v), 0.0, source="imported")
              for s in samples for k, v in enumerate(s.annotators.get(aspect) or [])]
    if min((len(s.annotators.get(aspect) or []) for s in samples), default=0) < 2:
        return None
    result = annotations.agreement(labels, aspect, list(ids), level=level, groups=[s.group_id for s in samples],
                                   systems=[s.system_id for s in samples], n_bootstrap=0)
    return {"level": level, "annotators": len(result.annotators),
            "krippendorff_alpha": result.alpha if math.isfinite(result.alpha) else None,
            **{m: v if math.isfinite(v) else None for m, v in result.ceiling.items()}}


def transfer_judge(judge: Judge, target: Aspect) -> Judge:
    """The same judge aimed at another dataset's aspect: its learned state and wording kept, scores mapped
    onto the target aspect's scale (e.g. SummEval coherence to Newsroom coherence, HANNA coherence to
    WritingPrompt-A cohesive)."""
    aspect = {**judge.aspect, "name": target.name, "low": target.low, "high": target.high}
    return Judge(method=judge.method, params=judge.params, aspect=aspect, task=judge.task, state=judge.state,
                 schema_version=judge.schema_version)


def transfer_targets(store: Store, source_dataset: str) -> dict[str, list[str]]:
    """Other stored datasets and their aspects a judge could be transferred to."""
    return {d["name"]: [a["name"] for a in d["aspects"]] for d in store.list_datasets() if d["name"] != source_dataset}
