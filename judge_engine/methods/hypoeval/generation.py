"""§3.1 hypothesis generation from small-scale data and literature: the bank grown over S_tr, then unioned."""

from __future__ import annotations

import math
import random
from typing import Any, Sequence

from ... import structured as st
from ...prompting import load_template
from ...records import Aspect, Sample
from ..base import small_model_hint
from .agents import generate_hypotheses, refine_hypotheses
from .bank import curated_entries, hypothesis_key, new_entry
from .context import Context
from .evaluation import evaluate_hypotheses
from .replies import read_repetition
from .reward import _reward_payload, by_reward, update_reward
from .settings import HypoEvalSettings

REPETITION_TEMPLATE = load_template("hypoeval_repetition")


def initialize_bank(ctx: Context, s_init: Sequence[Sample], literature: Sequence[dict[str, str]],
                    samples_by_id: dict[str, Sample]) -> list[dict[str, Any]]:
    """H_init = M_G(S_init, L) with |H_init| hypotheses, each evaluated on S_init for its first reward (§3.1)."""
    texts = generate_hypotheses(ctx, ctx.settings.n_init_hypotheses, samples=s_init, literature=literature,
                                stage="initial hypotheses")
    bank = [new_entry(t, "initial", s_h=[]) for t in dict.fromkeys(texts)]
    for e in bank:
        ctx.emit("hypothesis_proposed", {"key": e["key"], "text": e["text"], "origin": "initial"})
    evaluate_hypotheses(ctx, bank, s_init, "initial rewards")
    for e in bank:
        e["s_h"] = [s.id for s in s_init]
        update_reward(e, samples_by_id, ctx, len(s_init))
        ctx.emit("reward_updated", _reward_payload(e, None, len(s_init)))
    return bank


def w_hyp_threshold(settings: HypoEvalSettings, index: int, n_train: int, n_top: int) -> float:
    """How many top-k hypotheses must mispredict a sample before it enters W.

    The paper gives no value. An int ``w_hyp`` is used as is; ``None`` is our
    schedule ``max(1, scale * |H_top| * i / |S_tr|)`` (HypoGeniC's
    growing threshold with the actual |H_top| instead of the constant k).
    """
    if settings.w_hyp is not None:
        return float(settings.w_hyp)
    return max(1.0, settings.w_hyp_scale * n_top * index / max(n_train, 1))


def generate_and_refine(ctx: Context, wrong: Sequence[Sample], literature: Sequence[dict[str, str]],
                        round_no: int) -> list[str]:
    """H_W^0 = M_G(W), then N_refine rounds alternating data (W) and literature (L) (§3.1).

    Parity: the paper's (odd rounds data) unless ``refine_start="literature"``
    (the authors' code). With ``refine_early_stop`` a round that
    returns the same list ends the loop (authors' code); the paper runs all
    rounds. Without literature the literature rounds are skipped.
    """
    hypotheses = generate_hypotheses(ctx, ctx.settings.n_new_hypotheses, samples=wrong,
                                     stage=f"refresh {round_no}: generation")
    for e in hypotheses:
        ctx.emit("hypothesis_proposed", {"key": hypothesis_key(e), "text": e, "origin": "wrong_examples",
                                         "refresh": round_no, "refinement": 0})
    first = "data" if ctx.settings.refine_start == "data" else "literature"
    second = "literature" if first == "data" else "data"
    for i in range(1, ctx.settings.n_refine + 1):
        if not hypotheses:
            break
        source = first if i % 2 == 1 else second
        if source == "literature" and not literature:
            ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source, "skipped": True,
                                          "reason": "no literature notes given"})
            continue
        refined = refine_hypotheses(ctx, hypotheses, samples=wrong if source == "data" else (),
                                    literature=literature if source == "literature" else (),
                                    stage=f"refresh {round_no}: refinement {i} ({source})")
        if not refined:
            ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source, "kept_previous": True})
            continue
        ctx.emit("refinement_round", {"refresh": round_no, "round": i, "source": source,
                                      "hypotheses": [{"key": hypothesis_key(h), "text": h} for h in refined]})
        if refined == hypotheses and ctx.settings.refine_early_stop:
            ctx.emit("refinement_stopped", {"refresh": round_no, "round": i, "reason": "no change"})
            break
        hypotheses = refined
    return list(dict.fromkeys(hypotheses))


def update_bank(ctx: Context, bank: list[dict[str, Any]], s_init: Sequence[Sample], s_update: Sequence[Sample],
                literature: Sequence[dict[str, str]], samples_by_id: dict[str, Sample]) -> list[dict[str, Any]]:
    """The update stage over S_update with the wrong-sample bank W (§3.1).

    For each sample the top-k hypotheses by reward are evaluated and their
    rewards updated (the others keep theirs); a sample that at least w_hyp of
    them mispredict (|ŝ - s| > theta, or no score) enters W. When |W|
    reaches w_max, new hypotheses are generated and refined from W, get a
    first reward on W (authors' code), and the bank becomes the
    ``max_bank`` best by reward of H_top ∪ H_W (paper; ``replace_pool="bank"``:
    the whole bank ∪ H_W, authors' code). Equal under the defaults.
    """
    settings = ctx.settings
    wrong: list[Sample] = []
    refreshes = 0
    n_train = len(s_init) + len(s_update)
    for t, sample in enumerate(s_update, 1):
        t_total = t + len(s_init)
        top = by_reward(bank)[:settings.top_k]
        evaluate_hypotheses(ctx, top, [sample], f"update {t}/{len(s_update)}")
        n_wrong = 0
        for e in top:
            e["s_h"].append(sample.id)
            update_reward(e, samples_by_id, ctx, t_total)
            predicted = e["scores"].get(sample.id)
            n_wrong += predicted is None or abs(predicted - ctx.human(sample)) > settings.theta
            ctx.emit("reward_updated", _reward_payload(e, sample.id, t_total))
        threshold = w_hyp_threshold(settings, len(s_init) + t - 1, n_train, len(top))
        if not top or n_wrong >= threshold:
            wrong.append(sample)
            ctx.emit("wrong_bank_added", {"sample_id": sample.id, "n_wrong": n_wrong, "threshold": round(threshold, 3),
                                          "size": len(wrong), "w_max": settings.w_max})
        if len(wrong) >= settings.w_max:
            refreshes += 1
            new = [new_entry(text, "wrong_examples", s_h=[], refresh=refreshes)
                   for text in generate_and_refine(ctx, wrong, literature, refreshes)
                   if hypothesis_key(text) not in {e["key"] for e in bank}]
            evaluate_hypotheses(ctx, new, wrong, f"refresh {refreshes}: rewards of new hypotheses")
            for e in new:
                e["s_h"] = [s.id for s in wrong]
                update_reward(e, samples_by_id, ctx, t_total)
                ctx.emit("hypothesis_added", {**_reward_payload(e, None, t_total), "text": e["text"],
                                              "origin": "wrong_examples", "refresh": refreshes})
            pool = top if settings.replace_pool == "top_k" else bank
            kept = by_reward(pool + new)[:settings.max_bank]
            dropped = [e for e in bank + new if e not in kept]
            bank = kept
            ctx.emit("bank_refreshed", {"refresh": refreshes, "t": t_total, "size": len(bank),
                                        "dropped": [e["key"] for e in dropped]})
            wrong = []
    return bank


def literature_hypotheses(ctx: Context, literature: Sequence[dict[str, str]]) -> list[dict[str, Any]]:
    """H_L = M_G(L): hypotheses from the literature alone, no reward (§3.1)."""
    texts = generate_hypotheses(ctx, ctx.settings.n_literature_hypotheses, literature=literature,
                                stage="literature hypotheses")
    entries = [new_entry(t, "literature", s_h=[]) for t in dict.fromkeys(texts)]
    for e in entries:
        ctx.emit("hypothesis_proposed", {"key": e["key"], "text": e["text"], "origin": "literature"})
    return entries


def remove_repetitions(ctx: Context, entries: Sequence[dict[str, Any]], bank_name: str) -> list[dict[str, Any]]:
    """Pairwise LLM repetition check within one bank; keep greedily by exploitation mean (authors' code).

    One call per unordered pair, asking for ``{"answer": "yes" | "no"}``
    (the free-text "Final answer: yes/no" is the fallback). An answer that
    cannot be read counts as not repetitive (ours).
    """
    ordered = sorted(entries, key=lambda e: -math.inf if e["acc"] is None else e["acc"], reverse=True)
    if len(ordered) < 2:
        return list(ordered)
    pairs = [(a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:]]
    prompts = [REPETITION_TEMPLATE.render(**{k: v for k, v in ctx.common_fields().items() if k != "aspect_definition"},
                                          first=a["text"], second=b["text"])
               for a, b in pairs]
    stage = f"repetition check ({bank_name})"
    replies = ctx.ask(prompts, stage, max_tokens=ctx.settings.check_max_tokens, schema=st.yes_no_schema())
    readings = [read_repetition(r) for r in replies]
    for reading in readings:
        ctx.count_reply(stage, reading.source)
    repeats = {(a["key"], b["key"]) for (a, b), reading in zip(pairs, readings) if reading.repetitive}
    unclear = sum(reading.repetitive is None for reading in readings)
    if unclear:
        ctx.emit("parse_failures", {"stage": f"repetition check ({bank_name})", "missing": unclear,
                                    "of": len(replies), "counted_as": "not repetitive"})
    kept: list[dict[str, Any]] = []
    for e in ordered:
        twin = next((k for k in kept if (k["key"], e["key"]) in repeats), None)
        if twin is None:
            kept.append(e)
        else:
            ctx.emit("duplicate_removed", {"key": e["key"], "text": e["text"], "duplicate_of": twin["key"],
                                           "bank": bank_name})
    return kept


def union_banks(data_bank: Sequence[dict[str, Any]], literature_bank: Sequence[dict[str, Any]], *, max_bank: int,
                mode: str, seed: int) -> list[dict[str, Any]]:
    """The final bank: at most ``max_bank`` from the de-duplicated data and literature banks (§3.1).

    ``random_half`` (the paper's wording, default): a seeded random choice of
    at most ``max_bank // 2`` from each. The random choice exists to let
    literature hypotheses in beside the rewarded data ones; without a
    literature bank there is nothing to make room for, so the data bank's
    ``max_bank // 2`` best by reward are kept (highest first) instead of a
    random half that could drop the best one. ``balanced_fill`` (authors'
    code): the best ``max_bank // 2`` data hypotheses by
    exploitation mean, then literature ones in order up to ``max_bank``.
    """
    half = max_bank // 2
    if mode == "random_half" and not literature_bank:
        chosen = by_reward(data_bank)[:half]
    elif mode == "random_half":
        rng = random.Random(seed)
        pick = lambda xs: rng.sample(list(xs), min(half, len(xs)))  # noqa: E731
        chosen = pick(data_bank) + pick(literature_bank)
    else:
        data_sorted = sorted(data_bank, key=lambda e: -math.inf if e["acc"] is None else e["acc"], reverse=True)
        chosen = data_sorted[:half]
        chosen += list(literature_bank)[:max_bank - len(chosen)]
    seen: set[str] = set()
    return [e for e in chosen if not (e["key"] in seen or seen.add(e["key"]))]


# --------------------------------------------------------------------------- the stage as fit calls it


def training_samples(train: Sequence[Sample], aspect: Aspect, settings: HypoEvalSettings) -> list[Sample]:
    """S_tr: the human-scored samples in a seeded random order, at most ``n_train`` (its first ``n_init`` are
    S_init)."""
    s_tr = [s for s in train if not math.isnan(s.human.get(aspect.name, math.nan))]
    random.Random(settings.seed).shuffle(s_tr)  # the seed orders S_tr, hence S_init (ours)
    return s_tr[:settings.n_train]


def generate_bank(ctx: Context, s_tr: Sequence[Sample]) -> list[dict[str, Any]]:
    """H = g_M(S_tr, L) (§3.1): initialisation on S_init, the update stage over the rest, the repetition check
    of each bank, and the union with the literature-only hypotheses."""
    settings, literature = ctx.settings, ctx.settings.literature
    by_id = {s.id: s for s in s_tr}
    if not literature:
        ctx.emit("literature_skipped", {"reason": "no literature notes given: literature refinement rounds "
                                                  "and literature-only hypotheses are skipped"})
    s_init, s_update = s_tr[:settings.n_init], s_tr[settings.n_init:]
    bank = initialize_bank(ctx, s_init, literature, by_id)
    bank = update_bank(ctx, bank, s_init, s_update, literature, by_id)
    data_bank = remove_repetitions(ctx, bank, "data")
    lit_bank = remove_repetitions(ctx, literature_hypotheses(ctx, literature), "literature") if literature \
        else []
    bank = union_banks(data_bank, lit_bank, max_bank=settings.max_bank, mode=settings.union_mode, seed=settings.seed)
    ctx.emit("union", {"size": len(bank), "from_data": sum(e["origin"] != "literature" for e in bank),
                       "from_literature": sum(e["origin"] == "literature" for e in bank)})
    return bank


def curated_bank(ctx: Context, hypotheses: Sequence[Any]) -> list[dict[str, Any]]:
    """A person's curated hypotheses as the bank, in place of §3.1 (human in the loop)."""
    bank = curated_entries(hypotheses)
    ctx.emit("curated_hypotheses", {"n": len(bank), "keys": [e["key"] for e in bank],
                                    "texts": [e["text"] for e in bank],
                                    "origins": [e["origin"] for e in bank]})
    return bank


def require_hypotheses(ctx: Context, bank: Sequence[dict[str, Any]], *, curated: bool) -> None:
    """Raise ``ValueError`` with the reason when the bank is empty.

    No judge can be built from nothing: fail clearly rather than return a
    judge whose every score is missing (the run then ends with this message
    instead of "parse_failures: N").
    """
    if bank:
        return
    read = ", ".join(f"{n} {k}" for k, n in ctx.replies.items() if n)
    message = ("HypoEval generated no usable hypothesis: " + (
        "no curated hypothesis text was given" if curated else
        "no hypothesis was left from the model's generation replies ("
        + "; ".join([f"replies read: {read or 'none'}", *dict.fromkeys(ctx.unread_reasons)]
                    + ([f"{len(ctx.rejected)} hypotheses refused by the rubric checks: "
                        + ", ".join(sorted({r['rule'] for r in ctx.rejected}))] if ctx.rejected else []))
        + small_model_hint(ctx.form) + ")"))
    ctx.emit("empty_bank", {"reason": message, "replies": dict(ctx.replies)})
    ctx.warn("empty_bank", message)
    raise ValueError(message)
