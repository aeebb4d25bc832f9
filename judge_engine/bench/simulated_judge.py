"""A seeded simulated judge with planted signal, for the ``simulate`` benchmark and tests only.

The only model we can run (SmolLM2-135M) is too small to show whether an
algorithm finds what it should, so the benchmark runs every method against a
simulated world whose optimum is known. A :class:`World` is made per seed:

* samples with unique, recognisable output texts (``[sim-item-NNNN]``),
  grouped by source, each with latent sub-criteria ``z`` (standard normal)
  and human scores on three aspects built from the latents with planted
  weights (some zero) plus annotator noise;
* planted prompt effects per method (see :meth:`World.draws`, written to the
  benchmark JSON): HPSS factor-value effects and pairwise interactions on the
  judge's noise; a HypoEval hypothesis pool of helpful, useless and
  misleading rubrics; HD-Eval sub-criteria tied to one latent or to none;
  Active-Critic criteria and demonstration effects;
* a budget of malformed replies: a seeded fraction of all replies is
  unparsable, so missing scores and coverage-aware selection are exercised.

:class:`SimulatedBackend` is a backend of the one LLM call path
(``generate(messages, params) -> Completion``). It recognises which step of
which method asks: from the JSON schema's title when ``params.json_schema``
is set (then it answers JSON of that shape), else from the prompt's fixed
template text (then it answers in the free-text format the prompt asks for).
Every recogniser is in the section "Recognisers" below, with the marker
texts it relies on in :data:`MARKERS`, so a change of a template's wording
needs one edit there; an HPSS judge prompt's strategy is read by
:func:`judge_engine.methods.hpss.strategy.read_strategy`, the exact inverse of the
template builder. Samples are found by their output text, hypotheses by
their whole text, sub-criteria by their name, never by position. With
``World(structured=False)`` the backend ignores every schema, as a server
without constrained decoding would, so the methods' free-text fallbacks run.

The simulated score of a scoring prompt is the human score on the judge's
scale plus noise (plus a bias where planted) whose size depends on the
prompt's planted features, rounded to the scale. Noise is a pure function of
(seed, prompt), as a greedy model's reply would be: the same prompt gets the
same answer whatever was asked before it. Direct-scoring and G-Eval prompts (the papers'
external baselines) are answered as a plain judge would: the named aspect's human level plus noise of
sd :data:`PLAIN_JUDGE_SD`, with no planted effect of their wording. A scoring prompt that shows the judged
item a second time, among its own in-context examples or demonstrations next to its human score, is
answered with that score (:meth:`World.shows_judged_item`), as a real model would copy it: a method that
leaks the answer into its own prompt gets a figure it did not earn, visible in the table and counted in
``stats["leaked"]``, instead of a judge blind to the leak hiding it.

Never offered by the app: this module lives under ``judge_engine.bench``.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .. import structured
from ..methods.hpss.strategy import FACTORS, Strategy, all_strategies, read_strategy
from ..llm.base import Completion, GenerationParams, Message
from ..prompting import TaskInfo
from ..records import Aspect, Sample
from ..rubric_checks import statement_name

ASPECTS = (Aspect("coherence", 1.0, 5.0, "how well the summary's sentences fit together into a clear whole"),
           Aspect("relevance", 1.0, 5.0, "how much of the summary is about the important content of the source"),
           Aspect("fluency", 1.0, 5.0, "how grammatical and easy to read each sentence of the summary is"))
TARGET = "coherence"
"""The aspect every method is fitted and scored on (HD-Eval also uses the other two as layer 1)."""
TASK = TaskInfo("news summarization", "Article", "Summary")
N_LATENTS = 6
LATENT_SCALE = 0.2
"""A latent z maps to the normalised level 0.5 + 0.2 z (±2.5 sd spans the scale)."""
ANNOTATOR_SD = 0.3
"""Noise of the human mean score (1-5 units): even a perfect judge of the latents cannot reach r = 1."""
ITEM_TAG = re.compile(r"\[sim-item-(\d{4})\]")
PLAIN_JUDGE_SD = 0.3
"""Noise sd (normalised [0, 1] level) of a direct-scoring or G-Eval prompt: the papers' external baselines get a
reading of the human level with the noise of HPSS's average prompt (``World.hpss_sigma0``), the same for both
(nothing planted favours either; G-Eval's probability weighting only smooths the rounding)."""
REFINE_CANDIDATES = 3
"""Pool hypotheses a refinement on evidence tries against each hypothesis it was asked to improve."""

ADJECTIVES = ("Clause", "Topic", "Entity", "Lead", "Claim", "Tense", "Pronoun", "Detail", "Event", "Quote",
              "Number", "Causal", "Temporal", "Lexical", "Framing", "Closing", "Opening", "Hedge", "Source",
              "Contrast")
NOUNS = ("Ordering", "Linkage", "Precision", "Coverage", "Consistency", "Economy", "Salience", "Balance",
         "Grounding", "Transitions", "Agreement", "Focus", "Resolution", "Density", "Attribution", "Flow",
         "Structure", "Continuity", "Clarity", "Scope")
TRAITS = ("logical progression", "paragraph unity", "referent tracking", "headline alignment", "sentence rhythm",
          "connective choice", "redundancy", "abrupt endings", "topic drift", "chronology", "named entities",
          "numeric accuracy", "quotation use", "length", "vocabulary variety", "passive voice", "hedging",
          "lead sentence", "causal links", "contrast markers", "tense shifts", "repetition of names",
          "list structure", "punctuation", "formality")

GOOD_WORDS = ("deliberate", "steady", "careful", "precise", "natural", "smooth", "purposeful", "measured",
              "consistent", "tidy", "vivid", "balanced", "sharp", "graceful", "orderly", "confident", "lucid",
              "disciplined", "economical", "polished", "faithful", "sensible", "exact", "fitting", "assured",
              "even", "crisp", "methodical", "thoughtful", "clean")
BAD_WORDS = ("erratic", "careless", "muddled", "jarring", "sloppy", "clumsy", "haphazard", "confusing", "uneven",
             "garbled", "awkward", "scattered", "chaotic", "inconsistent", "lopsided", "tangled", "aimless",
             "disjointed", "bloated", "broken", "misplaced", "stilted", "patchy", "random", "overwrought",
             "neglected", "vague", "shaky", "cluttered", "hasty")
POOL_TEMPLATES = (
    "Experts score a summary high on {aspect} when its handling of {t} is {g}, and low when it is {b}.",
    "Summaries with {g} {t} earn a high {aspect} score; {b} {t} pulls that score down.",
    "When judging {aspect}, raters reward {g} {t} and give a poor score for {b} {t}.",
    "A high {aspect} rating goes to a summary whose {t} feels {g}; a low rating to one whose {t} feels {b}.",
    "The {aspect} score rises with {g} {t} and falls as the {t} turns {b}.",
    "Raters look closely at {t}: {g} {t} means a strong {aspect} score, while {b} {t} means a weak one.",
)
"""Wordings of the HypoEval pool's rubrics (a trait, a good and a bad descriptor each)."""
STATEMENT_BODIES = (
    "handles {t} with {g} care that keeps it coherent, never with {b} care",
    "has {g} {t}, while {b} {t} makes a summary less coherent",
    "keeps its {t} {g} rather than {b}, so it reads as one clear whole",
    "shows {t} that feels {g} and not {b}, which makes it coherent",
    "earns its coherence with {g} {t} and loses it with {b} {t}",
    "treats {t} in a {g} manner instead of a {b} one, so its parts fit together well",
)
"""The same rubrics as HypoEval asks for them, a sentence after :data:`OPENER` (lower-case words and commas,
as :func:`judge_engine.structured.statement_pattern` requires; each names a quality word, so the rubric checks
pass them as they would a good model's)."""
OPENER = TASK.statement_opener
"""How the methods' statements start for the world's task."""


# --------------------------------------------------------------------------- seeded helpers


def _unit(*parts: Any) -> float:
    """A uniform number in [0, 1) that depends only on ``parts`` (stable across runs and threads)."""
    h = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


def _rng(*parts: Any) -> random.Random:
    return random.Random(int(_unit(*parts) * 2 ** 53))


def _gauss(*parts: Any) -> float:
    return _rng(*parts).gauss(0.0, 1.0)


def higher_order_part(values: np.ndarray) -> np.ndarray:
    """``values`` (one per cell of a full factorial, one axis per factor) less its grand mean, main effects and
    two-way interactions: what is left is 3-way and higher interaction only.

    The ANOVA decomposition of a balanced full factorial is orthogonal, so each
    effect is a difference of marginal means; the result's marginal mean over
    any one or two factors is zero.
    """
    axes = range(values.ndim)
    grand = values.mean()

    def margin(*keep: int) -> np.ndarray:
        return values.mean(axis=tuple(a for a in axes if a not in keep), keepdims=True)

    main = [margin(i) - grand for i in axes]
    out = values - grand - sum(main)
    for i in axes:
        for j in range(i + 1, values.ndim):
            out = out - (margin(i, j) - grand - main[i] - main[j])
    return out


# --------------------------------------------------------------------------- planted worlds


@dataclass(frozen=True)
class Dials:
    """How much of each method's planted structure a world has: 1.0 everywhere is the default world.

    Each dial runs from 1.0 (the structure the benchmark plants by default, in
    the method's own terms) to 0.0 (a world without it, where the method has
    nothing of its own to find); values in between mix the two. The default
    world's draws do not depend on the dials: a dial at 1.0 takes exactly the
    default code path.
    """

    hpss: float = 1.0
    """Share of the variance of HPSS's log-noise that is per-factor (factor-value effects and the 4 pairwise
    interactions, the structure HPSS's advantage estimate assumes); the rest is higher-order interaction
    (3-way and up, every main and pairwise effect projected out exactly) of the same spread over all
    strategies. 0: no per-factor structure in the noise (the scale's rounding stays, as a real judge's)."""
    hd_eval: float = 1.0
    """How much of a sub-criterion's reading is its own: 1, it reads its latent at the planted noise (about
    half its parent's); 0, it restates its parent's reading (the same value, the same noise draw), so
    decomposition tells the aggregator nothing new. A reading mixes the two: ``d * own + (1 - d) * parent``."""
    hypoeval: float = 1.0
    """How the pool's misleading hypotheses mislead: 1, they score the reverse of the human level
    (anti-correlated); 0, they track a latent the target aspect does not weigh (merely unrelated, quality 0)."""
    active_critic: float = 1.0
    """Scale of Active-Critic's planted structure: the demonstrations' log-noise values and the spread of the
    criteria's noise multipliers around their mean. 0: every demonstration set and criterion is as good as any."""
    refinement: float = 1.0
    """Share of refinements (HypoEval's hypotheses, Active-Critic's criteria) that follow the default script
    (improve with a fixed probability whatever the prompt shows). The rest change only as far as the prompt's
    evidence supports: the items shown with their human scores, against which the judge tries the candidates
    (:meth:`World.evidence_fit`). 0: every refinement depends on what the prompt shows."""

    def check(self) -> None:
        """A ValueError naming the first dial outside [0, 1]."""
        for name, value in asdict(self).items():
            if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
                raise ValueError(f"dial {name}={value!r}: a value in [0, 1] is needed (1 = the default world)")


DEFAULT_DIALS = Dials()


@dataclass(frozen=True)
class PoolHypothesis:
    """One candidate hypothesis of the HypoEval pool with its planted quality."""

    text: str
    trait: str
    kind: str
    """``helpful`` (tracks the human score, low noise), ``useless`` (pure noise), ``misleading`` (anti-correlated,
    or at the ``hypoeval`` dial's 0 merely unrelated)."""
    noise: float
    """Noise sd on the normalised [0, 1] level."""
    quality: float
    """Planted quality: the population Pearson of scores under this hypothesis with the human score."""
    statement: str = ""
    """The same rubric as a statement ("A good summary has ... ."): what the simulated judge answers when
    HypoEval asks for statements."""
    unrelated: int | None = None
    """For a misleading hypothesis: the latent (one the target aspect does not weigh) it tracks as far as the
    ``hypoeval`` dial is below 1."""


@dataclass(frozen=True)
class Node:
    """One HD-Eval criterion the simulated judge knows: an aspect or a proposed sub-criterion."""

    name: str
    latent: int | None
    """Index of the latent it measures; None = measures nothing (pure noise)."""
    noise: float
    aspect: str | None = None
    """For layer-1 nodes: the aspect whose human score it measures."""
    parent: str | None = None
    """The node it was proposed as a child of (None for layer 1): what it restates as far as the ``hd_eval`` dial
    is below 1."""


@dataclass
class World:
    """One seeded simulated world: data, latents, human scores and every planted effect."""

    seed: int
    n_samples: int = 160
    malformed: float = 0.05
    """Fraction of replies that are unparsable (each reply decided by a hash of its conversation)."""
    structured: bool = True
    """Whether the judge honours JSON schemas; False answers every request as free text (a server without
    constrained decoding), so the methods' free-text fallbacks run end to end."""
    dials: Dials = DEFAULT_DIALS
    """How much of each method's planted structure this world has (:class:`Dials`; default: all of it)."""
    samples: tuple[Sample, ...] = ()
    latents: np.ndarray = field(default_factory=lambda: np.zeros((0, N_LATENTS)))
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    hpss_sigma0: float = 0.3
    hpss_effects: dict[tuple[str, str], float] = field(default_factory=dict)
    hpss_interactions: list[tuple[str, str, str, str, float]] = field(default_factory=list)
    hpss_bias: dict[tuple[str, str], float] = field(default_factory=dict)
    pool: tuple[PoolHypothesis, ...] = ()
    nodes: dict[str, Node] = field(default_factory=dict)
    ac_criteria: dict[str, float] = field(default_factory=dict)
    target_sd: float = 0.0

    def __post_init__(self) -> None:
        self.dials.check()
        rng = np.random.default_rng(self.seed)
        self._plant_latent_weights(rng)
        self._make_samples(rng)
        self.target_sd = self._population_target_sd()
        self._plant_hpss(rng)
        self._plant_pool(rng)
        for a in ASPECTS:
            self.nodes[a.name.lower()] = Node(a.name, None, 0.2, aspect=a.name)
        self._plant_active_critic(rng)

    # ---- data

    def _plant_latent_weights(self, rng: np.random.Generator) -> None:
        """Each aspect weighs 2-3 latents; at least two latents carry no weight in any aspect (null)."""
        null = set(rng.choice(N_LATENTS, size=2, replace=False).tolist())
        live = [j for j in range(N_LATENTS) if j not in null]
        for a in ASPECTS:
            w = np.zeros(N_LATENTS)
            chosen = rng.choice(live, size=int(rng.integers(2, 4)), replace=False)
            w[chosen] = rng.uniform(0.5, 1.5, size=len(chosen))
            self.weights[a.name] = w

    def human_level(self, z: np.ndarray, aspect: str) -> np.ndarray:
        """Noise-free human score (1-5 units) of latent rows ``z``."""
        w = self.weights[aspect]
        return np.clip(3.0 + (z @ w) / np.linalg.norm(w), 1.0, 5.0)

    def _make_samples(self, rng: np.random.Generator) -> None:
        z = rng.standard_normal((self.n_samples, N_LATENTS))
        self.latents = z
        per_group = 4
        samples = []
        for i in range(self.n_samples):
            group = i // per_group
            human = {a.name: float(np.clip(round(float(self.human_level(z[i:i + 1], a.name)[0])
                                                 + rng.normal(0, ANNOTATOR_SD), 2), 1.0, 5.0)) for a in ASPECTS}
            words = " ".join(rng.choice(["plant", "river", "council", "market", "storm", "vote", "school",
                                         "bridge", "harvest", "court"], size=6))
            samples.append(Sample(
                id=f"s{i:04d}", input=f"[sim-source-{group:03d}] A news article about the {words}.",
                output=f"[sim-item-{i:04d}] A summary that mentions the {words} in its own way.",
                group_id=f"g{group:03d}", system_id=f"sys{i % per_group}", human=human,
                metadata={"latents": [round(float(x), 4) for x in z[i]]}))
        self.samples = tuple(samples)

    def _population_target_sd(self) -> float:
        """Sd of the target's normalised human score over the generating distribution (large draw)."""
        z = np.random.default_rng(self.seed + 10_000).standard_normal((20_000, N_LATENTS))
        h = self.human_level(z, TARGET) + np.random.default_rng(self.seed + 20_000).normal(0, ANNOTATOR_SD, 20_000)
        return float(np.std(np.clip(h, 1, 5)) / 4.0)

    def level(self, index: int, aspect: str = TARGET) -> float:
        """The human score of sample ``index`` normalised to [0, 1]."""
        return (self.samples[index].human[aspect] - 1.0) / 4.0

    def demo_indices(self, text: str, judged: int | None) -> list[int]:
        """Samples shown in ``text`` besides the judged one (demonstrations, in-context examples)."""
        found = []
        for m in ITEM_TAG.finditer(text):
            i = int(m.group(1))
            if i != judged and i < len(self.samples) and i not in found and self.samples[i].output[:40] in text:
                found.append(i)
        return found

    def shows_judged_item(self, text: str, judged: int | None) -> bool:
        """Whether ``text`` shows the judged sample a second time, besides judging it: among its in-context
        examples or demonstrations, where its human score is shown next to it (issue 51 item 3).

        A real model copies the score it was just shown for the very text it is asked about, so the simulated
        judge does too (:meth:`SimulatedBackend._score`): a method that leaks the answer into its own prompt
        gets a near-perfect validation figure here, where a judge blind to the examples would hide the leak.
        """
        return judged is not None and judged < len(self.samples) and \
            text.count(self.samples[judged].output[:40]) >= 2

    def index_of_output(self, text: str) -> int | None:
        """The judged sample: the last sample output in ``text`` (examples come before it in every prompt)."""
        for m in reversed(list(ITEM_TAG.finditer(text))):
            i = int(m.group(1))
            if i < len(self.samples) and self.samples[i].output[:40] in text:
                return i
        return None

    def shown_scores(self, text: str) -> list[tuple[int, float]]:
        """The items ``text`` shows with a human score, and that score as shown (on whatever scale the prompt
        uses): each item paired with the first score after it and before the next item."""
        tags = [(m.start(), int(m.group(1))) for m in ITEM_TAG.finditer(text)
                if int(m.group(1)) < len(self.samples) and self.samples[int(m.group(1))].output[:40] in text]
        scores = [(m.start(), float(m.group(1))) for m in MARKERS["shown_score"].finditer(text)]
        out: dict[int, float] = {}
        for k, (at, i) in enumerate(tags):
            end = tags[k + 1][0] if k + 1 < len(tags) else len(text)
            score = next((v for p, v in scores if at < p < end), None)
            if score is not None and i not in out:
                out[i] = score
        return list(out.items())

    @staticmethod
    def evidence_fit(reading: Callable[[int], float], shown: Sequence[tuple[int, float]]) -> float:
        """How well a candidate's readings of the items shown follow the human scores shown for them: their
        Pearson, 0 with fewer than 3 items or no spread (nothing to learn from)."""
        if len(shown) < 3:
            return 0.0
        x = np.array([reading(i) for i, _ in shown])
        y = np.array([score for _, score in shown])
        if x.std() == 0 or y.std() == 0:
            return 0.0
        return float(np.corrcoef(x, y)[0, 1])

    # ---- HPSS

    def _plant_hpss(self, rng: np.random.Generator) -> None:
        """log-noise effects per factor value (centred per factor), 4 pairwise interactions, 2 biases."""
        spread = {"scale": 0.18, "criteria": 0.15, "cot": 0.12, "autocot": 0.1, "metrics": 0.1, "example": 0.18,
                  "reference": 0.12, "order": 0.1}
        for name, values in FACTORS:
            e = rng.normal(0, spread[name], len(values))
            e -= e.mean()
            for v, x in zip(values, e):
                self.hpss_effects[(name, v)] = float(x)
        names = [n for n, _ in FACTORS]
        for _ in range(4):
            f1, f2 = rng.choice(len(names), size=2, replace=False)
            v1 = FACTORS[f1][1][int(rng.integers(len(FACTORS[f1][1])))]
            v2 = FACTORS[f2][1][int(rng.integers(len(FACTORS[f2][1])))]
            self.hpss_interactions.append((names[f1], v1, names[f2], v2, float(rng.choice([-1, 1]) *
                                                                                rng.uniform(0.15, 0.3))))
        self.hpss_bias = {("cot", "Suffix"): 0.05, ("reference", "Dialectic"): -0.05}

    def hpss_log_sigma(self, strategy: Strategy) -> float:
        """Log of the judge's noise sd under ``strategy``: the planted per-factor log-noise, mixed by the ``hpss``
        dial ``d`` with higher-order interaction of the same spread, ``mean + √d (planted - mean) + √(1-d) free``
        (the two parts are orthogonal over the 12,960 strategies, so the spread stays the planted one)."""
        d = self.dials.hpss
        planted = self._hpss_planted_log_sigma(strategy)
        if d >= 1.0:
            return planted
        mean, free = self._hpss_structure_free()
        return mean + math.sqrt(d) * (planted - mean) + math.sqrt(1.0 - d) * free[strategy]

    def _hpss_planted_log_sigma(self, strategy: Strategy) -> float:
        f = dict(zip((n for n, _ in FACTORS), strategy))
        x = math.log(self.hpss_sigma0) + sum(self.hpss_effects[(n, v)] for n, v in f.items())
        for a, va, b, vb, eff in self.hpss_interactions:
            if f[a] == va and f[b] == vb:
                x += eff
        return x

    def _hpss_structure_free(self) -> tuple[float, dict[Strategy, float]]:
        """The mean planted log-noise over all strategies, and per strategy a log-noise deviation with no main or
        pairwise effect (:func:`higher_order_part` of a seeded normal field), scaled to the planted part's sd."""
        cached = getattr(self, "_hpss_free", None)
        if cached is None:
            strategies = all_strategies()
            shape = tuple(len(values) for _, values in FACTORS)
            planted = np.array([self._hpss_planted_log_sigma(s) for s in strategies]).reshape(shape)
            free = higher_order_part(np.random.default_rng([self.seed, 31]).standard_normal(shape))
            free *= planted.std() / free.std()
            cached = (float(planted.mean()), dict(zip(strategies, free.ravel().tolist())))
            self._hpss_free = cached
        return cached

    def hpss_true_fitness(self, strategy: Strategy) -> float:
        """Population Pearson × 100 of the strategy's scores with the human score, analytically.

        Judge level = human level + N(0, sigma²), rounded to the strategy's
        scale: rounding adds the variance step²/12 (step = 1/(S-1) on [0, 1]).
        Clipping at the scale's ends is ignored, so this is an approximation of
        the expected validation coefficient, but it is monotone in the
        effective noise: the ranking of strategies and the optimum are exact
        for the planted noise model.
        """
        sigma = math.exp(self.hpss_log_sigma(strategy))
        step = 1.0 / (int(strategy[0]) - 1)
        sd = self.target_sd
        return 100.0 * sd / math.sqrt(sd * sd + sigma * sigma + step * step / 12.0)

    def hpss_variance_shares(self) -> dict[str, float]:
        """How the variance of the log-noise over all 12,960 strategies splits: main effects (one factor),
        two-way interactions, and 3-way and higher (what no per-factor estimate can see)."""
        shape = tuple(len(values) for _, values in FACTORS)
        x = np.array([self.hpss_log_sigma(s) for s in all_strategies()]).reshape(shape)
        total = float(x.var())
        centred = x - x.mean()
        main = sum(centred.mean(axis=tuple(a for a in range(x.ndim) if a != i), keepdims=True)
                   + np.zeros(shape) for i in range(x.ndim))
        higher = higher_order_part(x)
        return {"main_effects": round(float(main.var()) / total, 4),
                "two_way": round(float((centred - main - higher).var()) / total, 4),
                "higher_order": round(float(higher.var()) / total, 4)}

    def hpss_landscape(self) -> tuple[dict[Strategy, float], Strategy, float]:
        """True fitness of all 12,960 strategies, the optimum and its fitness."""
        table = {s: self.hpss_true_fitness(s) for s in all_strategies()}
        best = max(table, key=table.get)
        return table, best, table[best]

    # ---- HypoEval

    def _plant_pool(self, rng: np.random.Generator) -> None:
        """30 hypotheses: 9 helpful, 12 useless, 9 misleading; traits shared by pairs make repetitions.

        Each text is a distinct rubric (its own wording, trait and descriptors) that names a quality, so
        HypoEval's rubric checks (:mod:`judge_engine.rubric_checks`: near-duplicates, no quality named,
        copies of shown texts) pass every pool entry, as they would a good model's hypotheses: the
        benchmark measures selection, not the checks. Two hypotheses on the same trait still differ in
        wording; telling them apart is the repetition check's job.
        """
        kinds = ["helpful"] * 9 + ["useless"] * 12 + ["misleading"] * 9
        traits = list(rng.permutation(TRAITS))
        good = list(rng.permutation(GOOD_WORDS))
        bad = list(rng.permutation(BAD_WORDS))
        pool = []
        for i, kind in enumerate(kinds):
            trait = traits[i % len(traits)]
            noise = float(rng.uniform(0.06, 0.2)) if kind == "helpful" else 0.25 if kind == "useless" else \
                float(rng.uniform(0.08, 0.2))
            sd = self.target_sd
            quality = 0.0 if kind == "useless" else (1 if kind == "helpful" else -1) * sd / math.sqrt(sd * sd + noise * noise)
            unrelated = None
            if kind == "misleading":  # drawn by hash, not from ``rng``: the default world's draws stay as they were
                unrelated = _rng(self.seed, "unrelated", i).choice(
                    [j for j in range(N_LATENTS) if self.weights[TARGET][j] == 0])
                d = self.dials.hypoeval
                if d < 1.0:  # the population Pearson of d (1 - level) + (1 - d) (0.5 + 0.2 z) + noise (clipping ignored)
                    quality = -d * sd / math.sqrt((d * sd) ** 2 + ((1 - d) * LATENT_SCALE) ** 2 + noise * noise)
            text = POOL_TEMPLATES[i % len(POOL_TEMPLATES)].format(t=trait, g=good[i], b=bad[i], aspect=TARGET)
            body = STATEMENT_BODIES[i % len(STATEMENT_BODIES)].format(t=trait, g=good[i], b=bad[i])
            pool.append(PoolHypothesis(text, trait, kind, noise, quality, f"{OPENER} {body}.", unrelated))
        self.pool = tuple(pool)

    def hypothesis_truth(self, h: PoolHypothesis, index: int) -> float:
        """What hypothesis ``h`` measures on sample ``index`` (normalised, before the judge's noise): the human
        level (helpful), nothing (useless: 0.5), or for a misleading one ``d (1 - level) + (1 - d) u`` with ``d``
        the ``hypoeval`` dial and ``u`` the level of a latent the target does not weigh."""
        if h.kind == "helpful":
            return self.level(index)
        if h.kind == "useless":
            return 0.5
        d = self.dials.hypoeval
        if d >= 1.0 or h.unrelated is None:
            return 1 - self.level(index)
        u = min(1.0, max(0.0, 0.5 + LATENT_SCALE * float(self.latents[index, h.unrelated])))
        return d * (1 - self.level(index)) + (1 - d) * u

    def hypothesis_in(self, text: str) -> list[PoolHypothesis]:
        """Pool hypotheses whose whole text or whole statement occurs in ``text`` (blank space normalised), in
        order of appearance."""
        flat = " ".join(text.split())
        found = [(max(flat.find(h.text), flat.find(h.statement)), h) for h in self.pool]
        return [h for pos, h in sorted(((p, h) for p, h in found if p >= 0), key=lambda ph: ph[0])]

    def hypothesis_by_text(self, text: str) -> PoolHypothesis | None:
        hits = self.hypothesis_in(text)
        return hits[0] if hits else None

    # ---- HD-Eval

    def informative_latent(self, j: int) -> bool:
        return any(self.weights[a.name][j] != 0 for a in ASPECTS)

    def node_informative(self, node: Node) -> bool:
        """A layer-1 aspect, or a criterion tied to a latent that some aspect weighs."""
        return node.aspect is not None or (node.latent is not None and self.informative_latent(node.latent))

    def node(self, name: str) -> Node | None:
        """The node of this name, else the node whose name it contains (a child named from its sentence)."""
        return self.nodes.get(name.strip().lower()) or self.node_in(name)

    def _new_name(self, rng: random.Random) -> str:
        for _ in range(1000):
            name = f"{rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
            if name.lower() not in self.nodes:
                return name
        raise RuntimeError("the simulated world ran out of criterion names")

    def node_in(self, text: str) -> Node | None:
        """The node whose name ``text`` contains (the longest such name): a child proposed as a sentence
        ("A good summary handles vivid cohesion well.") is named from its sentence, not by the world."""
        low = " ".join(text.lower().split())
        hits = [n for key, n in self.nodes.items() if key in low]
        return max(hits, key=lambda n: len(n.name)) if hits else None

    def decompose(self, parent: str, k: int, draw: int = 0) -> list[Node]:
        """Children of ``parent``, each tied to one latent or to none (planted once per parent and draw).

        An aspect gets its weighted latents (up to k-2, low noise), one null
        latent and one criterion measuring nothing; a sub-criterion tied to a
        latent gets a finer child of the same latent, one of another latent
        and noise; a criterion measuring nothing gets noise only.
        """
        key = ("children", parent.lower(), draw)
        if key in self._decomposed:
            return self._decomposed[key]
        rng = _rng(self.seed, *key)
        node = self.node(parent)
        plan: list[tuple[int | None, float]] = []
        nulls = [j for j in range(N_LATENTS) if not self.informative_latent(j)]
        if node is not None and node.aspect is not None:
            w = self.weights[node.aspect]
            live = sorted(np.flatnonzero(w).tolist(), key=lambda j: -w[j])[:max(1, k - 2)]
            plan = [(j, 0.1) for j in live] + [(rng.choice(nulls), 0.1), (None, 0.25)]
        elif node is not None and node.latent is not None:
            other = rng.choice([j for j in range(N_LATENTS) if j != node.latent])
            plan = [(node.latent, 0.07), (other, 0.1), (None, 0.25), (None, 0.25)]
        else:
            plan = [(rng.choice(nulls), 0.1), (None, 0.25), (None, 0.25), (None, 0.25)]
        rng.shuffle(plan)
        children = []
        for latent, noise in plan[:k]:
            n = Node(self._new_name(rng), latent, noise, parent=node.name if node is not None else None)
            self.nodes[n.name.lower()] = n
            children.append(n)
        self._decomposed[key] = children
        return children

    @property
    def _decomposed(self) -> dict[tuple, list[Node]]:
        if not hasattr(self, "_decomposed_store"):
            self._decomposed_store: dict[tuple, list[Node]] = {}
        return self._decomposed_store

    def node_level(self, node: Node, index: int) -> float:
        """What a criterion measures on sample ``index``, normalised (0.5 when it measures nothing)."""
        if node.aspect is not None:
            return self.level(index, node.aspect)
        if node.latent is None:
            return 0.5
        return float(min(1.0, max(0.0, 0.5 + LATENT_SCALE * self.latents[index, node.latent])))

    def hd_reading(self, node: Node, index: int) -> float:
        """A criterion's reading of sample ``index`` (normalised, noise included) when the ``hd_eval`` dial ``d`` is
        below 1: ``d`` times its own (what it measures plus its planted noise) plus ``1 - d`` times its parent's
        reading, recursively; a layer-1 aspect reads its own. The noise is keyed by (criterion, sample), not by
        prompt, so a child restates exactly the reading its parent's prompt got."""
        own = self.node_level(node, index) + node.noise * _gauss(self.seed, "hd-noise", node.name.lower(), index)
        parent = self.nodes.get(node.parent.lower()) if node.parent else None
        if parent is None:
            return own
        d = self.dials.hd_eval
        return d * own + (1 - d) * self.hd_reading(parent, index)

    # ---- Active-Critic

    def _plant_active_critic(self, rng: np.random.Generator) -> None:
        """Criteria with planted noise multipliers (lower = more helpful) and a planted value per demonstration.

        A demonstration set multiplies the overall score's noise by
        exp(sum of its samples' values): some examples teach the judge, some
        mislead it, so the choice of the set matters. The ``active_critic``
        dial ``d`` scales both: the values by ``d``, each multiplier's distance
        from the criteria's mean by ``d`` (0: nothing to choose between).
        """
        names = rng.permutation(["Logical Flow", "Topic Focus", "Referent Clarity", "Sentence Variety",
                                 "Headline Match", "Word Count", "Connective Use", "Tone Match"]).tolist()
        self.ac_criteria = {n: float(m) for n, m in zip(names, (0.5, 0.6, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7))}
        self.demo_value = rng.normal(0.0, 0.2, self.n_samples)
        d = self.dials.active_critic
        if d < 1.0:
            mean = float(np.mean(list(self.ac_criteria.values())))
            self.ac_criteria = {n: mean + d * (m - mean) for n, m in self.ac_criteria.items()}
            self.demo_value = d * self.demo_value

    def ac_planted(self, text: str) -> str | None:
        """The planted criterion a criterion's name or text stands for: its planted name, the name a method
        takes from its statement (:func:`judge_engine.rubric_checks.statement_name`), or the statement itself;
        None for a criterion the world does not know."""
        text = (text or "").strip()
        if text in self.ac_criteria:
            return text
        low = text.lower()
        for name in self.ac_criteria:
            body = ac_statement_body(name)
            if low == statement_name(body, "").lower() or low == statement_name(body, "", max_words=12).lower() \
                    or body in low:
                return name
        return None

    def ac_noise(self, name: str) -> float:
        """A criterion's planted noise multiplier (1.7 for one the world does not know)."""
        planted = self.ac_planted(name)
        return self.ac_criteria[planted] if planted else 1.7

    def ac_multiplier(self, names: Sequence[str]) -> float:
        """Noise multiplier of a set of criteria: the mean of theirs (1.7 for a name the world does not know)."""
        if not names:
            return 1.4
        return float(np.mean([self.ac_noise(n) for n in names]))

    def demo_multiplier(self, indices: Sequence[int]) -> float:
        return float(math.exp(sum(self.demo_value[i] for i in indices)))

    # ---- what was planted

    def draws(self) -> dict[str, Any]:
        """Every random draw of this world, JSON-native (written to the benchmark output)."""
        table, best, best_fit = self.hpss_landscape()
        return {
            "seed": self.seed, "n_samples": self.n_samples, "malformed_fraction": self.malformed,
            "honours_json_schemas": self.structured, "dials": asdict(self.dials),
            "aspect_weights": {a: [round(float(x), 4) for x in w] for a, w in self.weights.items()},
            "null_latents": [j for j in range(N_LATENTS) if not self.informative_latent(j)],
            "target_sd_normalised": round(self.target_sd, 4),
            "hpss": {"sigma0": self.hpss_sigma0,
                     "log_sigma_effects": {f"{n}={v}": round(e, 4) for (n, v), e in self.hpss_effects.items()},
                     "interactions": [{"a": f"{a}={va}", "b": f"{b}={vb}", "log_sigma_effect": round(e, 4)}
                                      for a, va, b, vb, e in self.hpss_interactions],
                     "bias": {f"{n}={v}": b for (n, v), b in self.hpss_bias.items()},
                     "optimum": "_".join(best), "optimum_true_fitness": round(best_fit, 3),
                     "median_true_fitness": round(float(np.median(list(table.values()))), 3),
                     "log_sigma_variance_shares": self.hpss_variance_shares()},
            "hypoeval_pool": [{"text": h.text, "statement": h.statement, "trait": h.trait, "kind": h.kind,
                               "noise": round(h.noise, 4), "quality": round(h.quality, 4),
                               **({"unrelated_latent": h.unrelated} if h.unrelated is not None else {})}
                              for h in self.pool],
            "hd_eval_nodes": {n.name: {"latent": n.latent, "noise": n.noise, "informative": self.node_informative(n),
                                       "parent": n.parent}
                              for n in self.nodes.values() if n.aspect is None},
            "active_critic_criteria_noise_multipliers": self.ac_criteria,
            "active_critic_demo_log_noise": [round(float(x), 4) for x in self.demo_value],
        }


# --------------------------------------------------------------------------- Recognisers
# A request with a JSON schema is recognised by the schema's title (judge_engine.structured), which names the
# kind of reply; the prompt is read only for what the title does not say (which sample, which criterion, which
# strategy). A request without a schema (a backend or a step that asks for free text) is recognised from fixed
# template text (judge_engine/prompts/*.txt): these markers are the one place to edit when a template's wording
# changes. Never details of a sample.

MARKERS = {
    # HPSS auxiliaries (hpss_gen_*.txt); the judge prompt itself is read by hpss.strategy.read_strategy
    "hpss_gen_criteria": "Write the evaluation criteria for",
    "hpss_gen_steps": "Write the evaluation steps",
    "hpss_gen_metrics": "Propose at most three short questions",
    "hpss_gen_reference": '{"reference":',
    "llm_criteria": "(self-generated criteria)",
    # criterion scoring shared by HD-Eval and HypoEval (criterion_paper.txt / criterion_sample_first.txt)
    "criterion": re.compile(r"Criterion to apply: ([^\n]+)\n([^\n]*)"),
    "scale_1_to_n": re.compile(r"from (\d+) to (\d+)"),
    # HD-Eval decomposition (hd_eval_decompose.txt: sentences; hd_eval_decompose_named.txt: named children)
    "hd_decompose": re.compile(r'The criterion to split up is "([^"\n]+)"'),
    "hd_k": re.compile(r"(?:Write|between \d+ and) (\d+) (?:different sentences|narrower criteria)"),
    # HypoEval (hypoeval_*.txt)
    "hypo_generate": "Your job is to write",
    "hypo_refine": "Hypotheses to improve:",
    "hypo_count": re.compile(r"exactly (\d+) (?:improved )?hypotheses"),
    "hypo_repetition": "Do these two say essentially the same thing",
    # Active-Critic (active_critic_*.txt)
    "ac_task_observe": "Write down observations about patterns",
    "ac_task_describe": "Name the kind of evaluation task",
    "ac_criteria_init": "which evaluation criteria the human annotators",
    "ac_criteria_observe": "Do the criteria match the dimensions",
    "ac_criteria_refine": "Improve the criteria using the new observations",
    "ac_criteria_list": re.compile(r"List \d+ evaluation criteria"),
    "ac_criteria_qualities": "do the annotators look at when they rate",
    "ac_mcse": "Multiple Evaluation Criteria:",
    "ac_ose": "Rate the overall quality of the Response",
    "ac_ose_scores": "Score Of Different Criteria:",
    "ac_ose_criteria": "Evaluation Criteria:",
    "ac_prior": "Observations so far:",
    "ac_weighted": "single digit",
    "ac_criteria_json": re.compile(r'"([^"\n]{2,40})"\s*:'),
    "ac_opener": re.compile(r'Start each sentence with "([^"\n]{3,60})"'),
    # the papers' external baselines: direct scoring (direct_score.txt) and G-Eval (geval_score.txt)
    "direct": re.compile(r"Aspect to rate: ([^\n]+)\n"),
    "direct_scale": re.compile(r"from (\d+) \(worst\) to (\d+) \(best\)"),
    "geval": re.compile(r"Evaluation criterion:\n([^\n(]+?) \((\d+)-(\d+)\):"),
    # what a prompt shows about an item: its human score (HypoEval's observations, Active-Critic's examples)
    "shown_score": re.compile(r"(?:Human Score:|gave this \w+ a score of) (-?\d+(?:\.\d+)?)"),
    # the evidence sentence this judge's Active-Critic observe step writes and its refine step reads
    "ac_evidence": re.compile(r"Scores rise with ([a-z ]+?) more than the current criteria show; "
                              r"([a-z ]+?) explains less of them"),
}


@dataclass(frozen=True)
class Step:
    """What a request asks, as recognised: the kind of step and what it needs to be answered."""

    kind: str
    info: dict[str, Any] = field(default_factory=dict)


def _schema_score_range(schema: dict[str, Any] | None) -> tuple[int, int] | None:
    try:
        enum = schema["properties"]["score"]["enum"]
        return int(min(enum)), int(max(enum))
    except (KeyError, TypeError, ValueError):
        return None


def _schema_items(schema: dict[str, Any] | None, key: str) -> tuple[int | None, int | None]:
    """(minItems, maxItems) of the schema's array property ``key`` (None where the schema says nothing)."""
    node = ((schema or {}).get("properties") or {}).get(key) or {}
    return node.get("minItems"), node.get("maxItems")


def _statement_opener(schema: dict[str, Any] | None, key: str) -> str:
    """The opener of a sentence-list schema's items ("A good summary"; "" when ``key`` holds no sentences)."""
    items = (((schema or {}).get("properties") or {}).get(key) or {}).get("items") or {}
    return _schema_opener(items.get("pattern", "")) if items.get("type") == "string" else ""


def recognise(world: World, messages: Sequence[Message], params: GenerationParams) -> Step:
    """The step a request belongs to: by the schema's title when it has one, else by the prompt's fixed text.

    Follow-up turns (a user message after an assistant reply) are recognised
    from the first user message and marked ``follow_up``; the last user
    message is kept as ``last``.
    """
    users = [m["content"] for m in messages if m["role"] == "user"]
    prompt = users[0] if users else ""
    schema = structured.schema_of(params.json_schema) if params.json_schema else None
    title = str(schema.get("title", "")) if schema else ""
    step = _by_title(world, prompt, title, schema) if title else _by_text(world, prompt)
    return Step(step.kind, {**step.info, "follow_up": len(users) > 1, "schema": schema,
                            "title": title, "last": users[-1] if users else ""})


def _by_title(world: World, prompt: str, title: str, schema: dict[str, Any]) -> Step:
    """Dispatch on the reply kind the request's schema names (the methods send a schema with every step)."""
    m = MARKERS
    if title == structured.HPSS_CRITERIA:
        return Step("hpss_criteria")
    if title == structured.GEVAL_STEPS:
        return Step("hpss_steps")
    if title == structured.HPSS_METRICS:
        return Step("hpss_metrics")
    if title == structured.HPSS_REFERENCE:
        return Step("hpss_reference")
    if title == structured.DECOMPOSITION:
        parent = m["hd_decompose"].search(prompt)
        low, high = _schema_items(schema, "children")
        return Step("hd_decompose", {"parent": parent.group(1) if parent else "", "k": int(high or 4),
                                     "min_k": int(low or 1)})
    if title == structured.YES_NO:
        return Step("hypo_repetition", {"hypotheses": world.hypothesis_in(prompt)})
    if title == structured.HYPOTHESES:
        _, n = _schema_items(schema, "hypotheses")
        return _hypotheses_step(world, prompt, int(n or 5))
    if title == structured.TASK_DESCRIPTION:
        return Step("ac_describe")
    if title == structured.CRITERIA:
        return _ac_criteria_step(world, prompt)
    if title == structured.EXPLAINED_SCORES:
        props = schema.get("properties") or {}
        index = world.index_of_output(prompt)
        demos = world.demo_indices(prompt, index)
        if "criteria" in props:  # McS-E: the schema lists exactly the criteria to score
            names = list((props["criteria"].get("properties") or {}))
            return Step("ac_mcse", {"index": index, "criteria": names, "demos": demos})
        return Step("ac_ose", {"index": index, "criteria": _ose_criteria(prompt), "demos": demos})
    if title == structured.SCORE:
        return _score_step(world, prompt, _schema_score_range(schema))
    return Step("unknown")


def _by_text(world: World, prompt: str) -> Step:
    """Free-text requests: recognised from the templates' fixed text (:data:`MARKERS`)."""
    m = MARKERS
    if m["ac_task_observe"] in prompt or m["ac_criteria_observe"] in prompt:
        prior = prompt.split(m["ac_prior"], 1)[1] if m["ac_prior"] in prompt else ""
        criteria = m["ac_criteria_observe"] in prompt
        return Step("ac_observe", {"prior": "(none yet)" not in prior and bool(prior.strip()),
                                   "current": _ac_current(world, prompt) if criteria else [],
                                   "shown": world.shown_scores(prompt) if criteria else []})
    if (m["ac_criteria_init"] in prompt or m["ac_criteria_refine"] in prompt or m["ac_criteria_list"].search(prompt)
            or m["ac_criteria_qualities"] in prompt):
        return _ac_criteria_step(world, prompt)
    if m["ac_task_describe"] in prompt:
        return Step("ac_describe")
    if m["hpss_gen_criteria"] in prompt:
        return Step("hpss_criteria")
    if m["hpss_gen_steps"] in prompt:
        return Step("hpss_steps")
    if m["hpss_gen_metrics"] in prompt:
        return Step("hpss_metrics")
    if m["hpss_gen_reference"] in prompt:
        return Step("hpss_reference")
    decompose = m["hd_decompose"].search(prompt)
    if decompose:
        k = m["hd_k"].search(prompt)
        return Step("hd_decompose", {"parent": decompose.group(1), "k": int(k.group(1)) if k else 4, "min_k": 1})
    if m["hypo_repetition"] in prompt:
        return Step("hypo_repetition", {"hypotheses": world.hypothesis_in(prompt)})
    if m["hypo_generate"] in prompt or m["hypo_refine"] in prompt:
        count = m["hypo_count"].search(prompt)
        return _hypotheses_step(world, prompt, int(count.group(1)) if count else 5)
    if m["ac_mcse"] in prompt:
        index = world.index_of_output(prompt)
        section = prompt.split(m["ac_mcse"], 1)[1].split("Output format", 1)[0]
        names = [line.split(":", 1)[0].strip() for line in section.strip().splitlines() if ":" in line]
        return Step("ac_mcse", {"index": index, "criteria": names, "demos": world.demo_indices(prompt, index)})
    return _score_step(world, prompt, None)


def _hypotheses_step(world: World, prompt: str, n: int) -> Step:
    refine = MARKERS["hypo_refine"] in prompt
    old = world.hypothesis_in(prompt.split(MARKERS["hypo_refine"], 1)[1]) if refine else []
    return Step("hypo_refine" if refine else "hypo_generate", {"n": n, "old": old,
                                                               "shown": world.shown_scores(prompt) if refine else []})


AC_DEFINITIONS = {
    "Logical Flow": "keeps a logical order, each sentence following from the one before.",
    "Topic Focus": "stays relevant to the article's main subject and leaves out side stories.",
    "Referent Clarity": "makes clear whom every pronoun and name points to.",
    "Sentence Variety": "is not repetitive, its sentences differing in length and shape.",
    "Headline Match": "clearly states in its first sentence what the article's headline announces.",
    "Word Count": "is concise enough to read at a glance but keeps every key fact.",
    "Connective Use": "uses words such as because, then and however where they are appropriate.",
    "Tone Match": "is faithful to the article's neutral register without adding opinion.",
}
"""What the simulated judge writes for each planted Active-Critic criterion: a definition that says more than
its name and names a quality, as the rubric checks require: the named criterion's definition in the paper's
form, and read after "A good summary" the statement of the sentence form (:func:`ac_statement`)."""


def ac_statement_body(name: str) -> str:
    """A planted criterion's statement body: its definition lower-cased, without the full stop."""
    return AC_DEFINITIONS.get(name, "Whether the summary gets this right.").lower().rstrip(".")


def ac_statement(name: str, opener: str) -> str:
    """A planted criterion as the statement the criteria steps ask for: ``"<opener> <body>."``."""
    return f"{opener} {ac_statement_body(name)}."


def _schema_opener(pattern: str) -> str:
    """The opener a statement pattern (:func:`judge_engine.structured.statement_pattern`) asks for."""
    literal = pattern.lstrip("^").split(" [a-z]", 1)[0]
    return re.sub(r"\[\\?(.)\]", r"\1", literal)


def _ac_current(world: World, prompt: str) -> list[str]:
    """The planted criteria a prompt lists (by quoted name or by definition)."""
    low = prompt.lower()
    return [n for n in world.ac_criteria if f'"{n}"' in prompt or ac_statement_body(n) in low]


def _ac_criteria_step(world: World, prompt: str) -> Step:
    m = MARKERS
    refine = m["ac_criteria_refine"] in prompt
    current = _ac_current(world, prompt) if refine else []
    opener = m["ac_opener"].search(prompt)
    evidence = m["ac_evidence"].search(prompt) if refine else None
    names = {n.lower(): n for n in world.ac_criteria}
    swap = (names.get(evidence.group(1)), names.get(evidence.group(2))) if evidence else None
    return Step("ac_criteria", {"current": current, "lines": bool(m["ac_criteria_list"].search(prompt)),
                                "qualities": m["ac_criteria_qualities"] in prompt,
                                "opener": opener.group(1) if opener else "", "evidence": swap})


def _ose_criteria(prompt: str) -> list[str]:
    """The criteria an OS-E prompt shows: the scored criteria's JSON keys, or AC-Coarse's ``Name: definition`` list."""
    m = MARKERS
    if m["ac_ose_scores"] in prompt:
        section = prompt.rsplit(m["ac_ose_scores"], 1)[1].split("Output format", 1)[0]
        return [n for n in m["ac_criteria_json"].findall(section) if n.lower() not in ("explanation", "score")]
    section = prompt.rsplit(m["ac_ose_criteria"], 1)[1].split("Output format", 1)[0] \
        if m["ac_ose_criteria"] in prompt else ""
    return [line.split(":", 1)[0].strip() for line in section.strip().splitlines() if ":" in line]


def _score_step(world: World, prompt: str, scale: tuple[int, int] | None) -> Step:
    """A score request (``{"score": N}`` or free text): Active-Critic's OS-E, an HPSS strategy, or a criterion."""
    m = MARKERS
    index = world.index_of_output(prompt)
    if m["ac_ose"] in prompt:  # the first turn of a weighted or retry follow-up
        return Step("ac_ose", {"index": index, "criteria": _ose_criteria(prompt),
                               "demos": world.demo_indices(prompt, index)})
    strategy = read_hpss_strategy(prompt)
    if strategy is not None:
        return Step("hpss_judge", {"index": index, "strategy": strategy})
    crit = m["criterion"].search(prompt)
    if crit:
        scale = scale or _scale_in(prompt)
        hyp = world.hypothesis_by_text(crit.group(2)) or world.hypothesis_by_text(prompt)
        if hyp is not None:
            return Step("hypo_score", {"index": index, "hypothesis": hyp, "scale": scale})
        node = world.node(f"{crit.group(1)} {crit.group(2)}")
        if node is not None:
            return Step("hd_score", {"index": index, "node": node, "scale": scale})
        return Step("unknown_criterion", {"index": index, "scale": scale, "name": crit.group(1)})
    direct, geval = m["direct"].search(prompt), m["geval"].search(prompt)
    if geval:
        return Step("plain_score", {"index": index, "aspect": geval.group(1).strip(),
                                    "scale": scale or (int(geval.group(2)), int(geval.group(3)))})
    if direct:
        found = m["direct_scale"].search(prompt)
        return Step("plain_score", {"index": index, "aspect": direct.group(1).strip(),
                                    "scale": scale or ((int(found.group(1)), int(found.group(2))) if found
                                                       else (1, 5))})
    return Step("unknown")


def _scale_in(prompt: str) -> tuple[int, int]:
    found = MARKERS["scale_1_to_n"].findall(prompt)
    return (int(found[-1][0]), int(found[-1][1])) if found else (1, 5)


def read_hpss_strategy(prompt: str) -> Strategy | None:
    """The HPSS strategy of a judge prompt (:func:`judge_engine.methods.hpss.strategy.read_strategy`, the exact inverse
    of the template builder), trying each aspect of the world; None when the prompt is no HPSS judge prompt."""
    for aspect in sorted(ASPECTS, key=lambda a: a.name != TARGET):
        try:
            return read_strategy(prompt, aspect, TASK)
        except ValueError:
            continue
    return None


# --------------------------------------------------------------------------- the backend


class SimulatedBackend:
    """A backend of the one LLM call path answering like a judge whose quality depends on the prompt.

    Counts what it saw in ``stats`` (steps by kind, malformed replies, unrecognised prompts with their
    opening words) so a benchmark can show that every request was understood.
    """

    name = "simulated"
    supports_logprobs = True
    serialises_calls = False

    def __init__(self, world: World, *, structured: bool | None = None):
        self.world = world
        self.structured = world.structured if structured is None else structured
        """False: behave like a server that honours no JSON schema (see :attr:`World.structured`)."""
        self.model_id = f"simulated-judge-seed{world.seed}" + ("" if self.structured else "-free-text")
        self.stats: dict[str, Any] = {"steps": {}, "malformed": 0, "unrecognised": [], "leaked": 0}
        """``leaked``: score prompts that showed the judged item among their examples (answered with its score)."""

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        if not self.structured and params.json_schema:
            params = params.with_(json_schema="")
        step = recognise(self.world, messages, params)
        texts, logprobs = [], []
        for i in range(params.n):
            text, lp = self._answer(step, messages, params, params.sample_index * params.n + i)
            texts.append(text)
            logprobs.append(lp)
        self.stats["steps"][step.kind] = self.stats["steps"].get(step.kind, 0) + 1
        return Completion(texts=tuple(texts), logprobs=tuple(logprobs) if params.top_logprobs else (),
                          prompt_tokens=sum(len(m["content"]) // 4 for m in messages),
                          completion_tokens=sum(len(t) // 4 for t in texts), latency_s=0.0, model=self.model_id)

    # ---- answering

    def _answer(self, step: Step, messages: Sequence[Message], params: GenerationParams,
                draw: int) -> tuple[str, tuple[dict[str, Any], ...]]:
        w = self.world
        conversation = "\n".join(m["content"] for m in messages)
        if _unit(w.seed, "malformed", conversation, draw) < w.malformed:
            self.stats["malformed"] += 1
            return ('{"score": "unsure' if params.json_schema else "I am not sure how to rate this."), ()
        schema = step.info.get("schema")
        kind = step.kind
        if kind in ("ac_mcse", "ac_ose"):
            return self._active_critic_score(step, messages, params, draw)
        if kind == "ac_describe":
            text = ("The evaluation task is text summarization, which refers to evaluating summaries generated "
                    "from news articles. The relationship between 'Source' and 'Response' is that the Response "
                    "condenses the Source.")
            return self._json_or(schema, {"task_description": text}, text), ()
        if kind == "ac_observe":
            # with observations already made, "COMPLETE" 60% of the time (so refinement rounds happen and end)
            if step.info["prior"] and _unit(w.seed, "complete", conversation, draw) < 0.6:
                return "COMPLETE", ()
            text = ("Higher scores go to summaries whose sentences follow one another logically and stay on "
                    "the article's topic.")
            if w.dials.refinement < 1.0 and step.info.get("current"):  # what the examples shown say, for the refine
                text = f"{text} {self._ac_evidence(step)}"
            return text, ()
        if kind == "ac_criteria":
            crit = self._ac_criteria(step, conversation, draw)
            props = (schema or {}).get("properties") or {}
            key = next((k for k in ("criteria", "qualities") if k in props), "criteria")
            item = (props.get(key) or {}).get("items") or {}
            if schema:
                if item.get("type") == "string":  # the sentence form: statements that start with the opener
                    opener = _schema_opener(item.get("pattern", ""))
                    value: dict[str, Any] = {key: [ac_statement(n, opener) for n in crit]}
                else:  # the paper's form: the planted criteria named, with their definitions
                    value = {key: [{"name": n, "definition": d} for n, d in crit.items()]}
                if "observations" in props:
                    value["observations"] = "Scores follow how connected the summary is."
                return json.dumps(conform(value, schema)), ()
            if step.info["lines"]:
                return "\n".join(f"{n}: {d}" for n, d in crit.items()), ()
            if step.info.get("opener"):  # asked for statements without a grammar: one per numbered line
                return "\n".join(f"{i}. {ac_statement(n, step.info['opener'])}" for i, n in enumerate(crit, 1)), ()
            if step.info.get("qualities"):  # the short structured fallback's shape, asked without a grammar
                return json.dumps({"qualities": [{"name": n, "description": d} for n, d in crit.items()]}), ()
            if step.info["current"]:
                return json.dumps(crit), ()
            return json.dumps({"Criteria": crit, "Observations": "Scores follow how connected the summary is."}), ()
        if kind in ("hpss_judge", "hd_score", "hypo_score", "unknown_criterion", "plain_score"):
            return self._score(step, messages, params, draw)
        if kind == "hpss_criteria":
            text = (f"{TARGET} : (self-generated criteria) A coherent summary presents its points in a sensible "
                    f"order; the lowest rating means no order at all, the middle rating some order, the highest "
                    f"rating a clear and well-connected whole.")
            return self._json_or(schema, {"criteria": [text]}, text), ()
        if kind == "hpss_steps":
            steps = ["Read the article and note its main points.", "Read the summary and follow its order.",
                     "Rate how well the summary's sentences connect."]
            return self._json_or(schema, {"steps": steps}, "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))), ()
        if kind == "hpss_metrics":
            qs = ["Does the summary follow the order of events?", "Are the sentences connected?",
                  "Is the main point stated first?"]
            return self._json_or(schema, {"questions": qs}, "\n".join(f"{i}. {q}" for i, q in enumerate(qs, 1))), ()
        if kind == "hpss_reference":
            text = "A short reference summary of the article in three connected sentences."
            return self._json_or(schema, {"reference": text}, text), ()
        if kind == "hd_decompose":
            children = w.decompose(step.info["parent"], step.info["k"], draw=params.sample_index)
            items = [{"name": c.name, "abbrev": c.name.lower().replace(" ", "-"),
                      "definition": f"How well the summary handles {c.name.lower()}."} for c in children]
            opener = _statement_opener(schema, "children")
            if opener:  # the sentence shape: each child a sentence that names it
                return json.dumps(conform({"children": [f"{opener} handles {c.name.lower()} well."
                                                        for c in children]}, schema)), ()
            if schema:
                return json.dumps(conform({"children": [{"name": i["name"], "definition": i["definition"]}
                                                        for i in items]}, schema)), ()
            return json.dumps(items), ()
        if kind in ("hypo_generate", "hypo_refine"):
            hyps = self._hypotheses(step, conversation, draw)
            items = ((schema or {}).get("properties") or {}).get("hypotheses") or {}
            if "pattern" in (items.get("items") or {}) or OPENER in step.info.get("last", ""):
                # asked for statements ("A good summary ..."): the planted rubrics as statements, as JSON of
                # the schema or, without one, a numbered list of sentences
                statements = [h.statement for h in hyps]
                listing = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
                return self._json_or(schema, {"hypotheses": statements}, listing), ()
            texts = [h.text for h in hyps]
            listing = "\n".join(f"hypothesis{i}. {t}" for i, t in enumerate(texts, 1))
            return self._json_or(schema, {"hypotheses": texts}, listing), ()
        if kind == "hypo_repetition":
            hyps = step.info["hypotheses"]
            same = len(hyps) == 2 and hyps[0].trait == hyps[1].trait
            answer = "yes" if same else "no"
            return self._json_or(schema, {"answer": answer},
                                 f"They {'cover the same trait' if same else 'cover different traits'}. "
                                 f"Final answer: {answer}"), ()
        if len(self.stats["unrecognised"]) < 20:
            self.stats["unrecognised"].append(" ".join(messages[-1]["content"].split())[:120])
        return "I cannot help with that request.", ()

    @staticmethod
    def _json_or(schema: dict[str, Any] | None, value: dict[str, Any], text: str) -> str:
        return json.dumps(conform(value, schema)) if schema else text

    def _ac_criteria(self, step: Step, conversation: str, draw: int) -> dict[str, str]:
        """Initial criteria: 5 of the planted ones at random. A scripted refinement (the share the
        ``refinement`` dial sets; all of them by default) swaps, with probability 1/2, the least helpful
        current criterion for the most helpful absent one (refinement helps, noisily); any other makes the swap
        its prompt's observations name (:meth:`_ac_evidence`), or none."""
        w = self.world
        rng = _rng(w.seed, "ac-criteria", conversation, draw)
        current = list(step.info["current"])
        if not current:
            current = rng.sample(sorted(w.ac_criteria), 5)
        elif w.dials.refinement < 1.0 and _unit(w.seed, "refine-scripted", conversation, draw) >= w.dials.refinement:
            best, worst = step.info.get("evidence") or (None, None)
            if best and worst and best not in current and worst in current:
                current[current.index(worst)] = best
        elif rng.random() < 0.5:
            absent = [n for n in w.ac_criteria if n not in current]
            if absent:
                worst = max(current, key=w.ac_criteria.get)
                current[current.index(worst)] = min(absent, key=w.ac_criteria.get)
        return {n: AC_DEFINITIONS.get(n, "Whether the summary gets this right.") for n in current}

    def _ac_evidence(self, step: Step) -> str:
        """An observe step's reading of its examples: each planted criterion tried on the items shown (its
        McS-E reading, 0.15 × its multiplier noise) against their human scores (:meth:`World.evidence_fit`);
        names the best-fitting absent criterion and the worst-fitting current one when the first fits better."""
        w = self.world
        shown, current = step.info["shown"], step.info["current"]

        def fit(name: str) -> float:
            return w.evidence_fit(lambda i: w.level(i) + 0.15 * w.ac_criteria[name]
                                  * _gauss(w.seed, "ac-evidence", name, i), shown)

        absent = [n for n in w.ac_criteria if n not in current]
        if absent:
            best, worst = max(absent, key=fit), min(current, key=fit)
            if fit(best) > fit(worst):
                return (f"Scores rise with {best.lower()} more than the current criteria show; "
                        f"{worst.lower()} explains less of them.")
        return "The current criteria fit the scores shown."

    def _active_critic_score(self, step: Step, messages: Sequence[Message], params: GenerationParams,
                             draw: int) -> tuple[str, tuple[dict[str, Any], ...]]:
        """McS-E: each criterion's 0-100 score with its planted noise; OS-E: the overall score with noise
        0.2 × (criteria multiplier) × (demonstration multiplier). A follow-up turn restates the score."""
        w = self.world
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        index = step.info.get("index")
        if index is None:
            return "There is no response here to rate.", ()
        demo = w.demo_multiplier(step.info["demos"])
        schema = step.info.get("schema")
        last = messages[-1]["content"] if step.info["follow_up"] else ""
        leaked = w.shows_judged_item(prompt, index)  # its own demonstration: the shown score is read back
        self.stats["leaked"] += leaked

        def score_100(sigma: float, key: str) -> int:
            level = w.level(index) + (0.0 if leaked else sigma) * _gauss(w.seed, "ac", key, prompt)
            return int(min(100, max(0, round(100 * level))))

        if step.kind == "ac_mcse":
            scores = {n: score_100(0.15 * w.ac_noise(n) * demo, n) for n in step.info["criteria"]}
            if schema:
                return json.dumps(fill_schema(schema, scores, 50, "Judged on this criterion.")), ()
            return json.dumps({n: {"Explanation": f"Judged on {n.lower()}.", "Score": v}
                               for n, v in scores.items()}, indent=1), ()
        score = score_100(0.2 * w.ac_multiplier(step.info["criteria"]) * demo, "overall")
        if step.info["follow_up"]:
            # the weighted follow-up asks for a 1-9 digit (its schema's enum), the retry for the 0-100 score
            if _schema_score_range(schema) == (1, 9) or MARKERS["ac_weighted"] in last:
                digit = int(min(9, max(1, round(1 + 8 * score / 100))))
                text = json.dumps({"score": digit}) if schema else str(digit)
                return text, (_digit_logprobs(text, digit, 1, 9) if params.top_logprobs else ())
            return (json.dumps(conform({"score": score}, schema)) if schema else f"Score Of Overall: {score}"), ()
        if schema:
            return json.dumps(fill_schema(schema, {}, score, "The response was weighed on every criterion.")), ()
        return f"Explanation: The response was weighed on every criterion.\n\nScore Of Overall: {score}", ()

    def _hypotheses(self, step: Step, conversation: str, draw: int) -> list[PoolHypothesis]:
        """Draws from the pool: generation 30% helpful; a scripted refinement (the share of hypotheses the
        ``refinement`` dial sets; all by default) keeps each with 1/2, else draws 60% helpful; any other is
        refined on the prompt's evidence (:meth:`_refined_by_evidence`)."""
        w = self.world
        rng = _rng(w.seed, "hypotheses", conversation, draw)
        by_kind = {k: [h for h in w.pool if h.kind == k] for k in ("helpful", "useless", "misleading")}

        def pick(p_helpful: float, taken: set[str]) -> PoolHypothesis:
            u = rng.random()
            kind = "helpful" if u < p_helpful else "useless" if u < p_helpful + (1 - p_helpful) * 0.6 else "misleading"
            options = [h for h in by_kind[kind] if h.text not in taken] or [h for h in w.pool if h.text not in taken]
            return rng.choice(options)

        out: list[PoolHypothesis] = []
        taken: set[str] = set()
        if step.kind == "hypo_refine":
            for slot, old in enumerate(step.info["old"][:step.info["n"]]):
                if w.dials.refinement < 1.0 and \
                        _unit(w.seed, "refine-scripted", conversation, draw, slot) >= w.dials.refinement:
                    new = self._refined_by_evidence(old, step.info["shown"], taken, rng)
                else:
                    new = old if rng.random() < 0.5 and old.text not in taken else pick(0.6, taken)
                out.append(new)
                taken.add(new.text)
        while len(out) < step.info["n"] and len(taken) < len(w.pool):
            new = pick(0.3, taken)
            out.append(new)
            taken.add(new.text)
        return out

    def _refined_by_evidence(self, old: PoolHypothesis, shown: Sequence[tuple[int, float]], taken: set[str],
                             rng: random.Random) -> PoolHypothesis:
        """A hypothesis refined on what the prompt shows: :data:`REFINE_CANDIDATES` other pool hypotheses drawn
        at random are tried with ``old`` on the items shown (each hypothesis's reading of an item, its noise
        included, against the human score shown: :meth:`World.evidence_fit`); the best-fitting one replaces
        ``old`` when it fits better. Shown nothing to learn from (too few items, scores that do not follow the
        items), the replacement is as good as chance."""
        w = self.world

        def fit(h: PoolHypothesis) -> float:
            return w.evidence_fit(lambda i: w.hypothesis_truth(h, i) + h.noise * _gauss(w.seed, "evidence", h.text, i),
                                  shown)

        options = [h for h in w.pool if h.text not in taken and h.text != old.text]
        candidates = rng.sample(options, min(REFINE_CANDIDATES, len(options)))
        best = max(candidates, key=fit, default=None)
        if best is None or (old.text not in taken and fit(old) >= fit(best)):
            return old
        return best

    def _score(self, step: Step, messages: Sequence[Message], params: GenerationParams,
               draw: int) -> tuple[str, tuple[dict[str, Any], ...]]:
        w = self.world
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        index = step.info.get("index")
        kind = step.kind
        if index is None:
            return "There is no summary here to rate.", ()
        bias = 0.0
        if kind == "hpss_judge":
            strategy = step.info["strategy"]
            low, high = 1, int(strategy[0])
            sigma = math.exp(w.hpss_log_sigma(strategy))
            truth = w.level(index)
            bias = sum(b for (n, v), b in w.hpss_bias.items() if v in strategy)
        else:
            low, high = step.info.get("scale") or (1, 5)
            if kind == "hypo_score":
                h = step.info["hypothesis"]
                truth = w.hypothesis_truth(h, index)
                sigma = h.noise
            elif kind == "hd_score":
                node = step.info["node"]
                truth, sigma = w.node_level(node, index), node.noise
                if w.dials.hd_eval < 1.0:  # the reading mixes the node's own and its parent's (noise included)
                    truth, sigma = w.hd_reading(node, index), 0.0
            elif kind == "plain_score":  # direct scoring or G-Eval: a noisy reading of the aspect's human level
                names = {a.name.lower(): a.name for a in ASPECTS}
                truth, sigma = w.level(index, names.get(step.info["aspect"].lower(), TARGET)), PLAIN_JUDGE_SD
            else:
                truth, sigma = 0.5, 0.25
        if w.shows_judged_item(prompt, index):  # the answer is in the prompt: read it, as a real model would
            truth, sigma, bias = w.level(index), 0.0, 0.0
            self.stats["leaked"] += 1
        # the noise depends on the first prompt only: a follow-up turn restates the same judgement
        level = truth + bias + sigma * _gauss(w.seed, "noise", prompt)
        score = int(min(high, max(low, round(low + level * (high - low)))))
        return self._score_reply(score, low, high, step, params, kind, prompt)

    def _score_reply(self, score: int, low: int, high: int, step: Step, params: GenerationParams,
                     kind: str, prompt: str) -> tuple[str, tuple[dict[str, Any], ...]]:
        schema = step.info.get("schema")
        why = "The summary was judged on what the prompt asks."
        if schema:  # first turn or follow-up: the JSON of the schema asked for (explanation where it puts it)
            props = schema.get("properties", {})
            value = {k: (score if k == "score" else why) for k in props if k in ("score", "explanation")}
            text = json.dumps(conform(value, schema))
        elif step.info["follow_up"]:
            text = str(score)
        elif kind == "hpss_judge":
            cot = step.info["strategy"][2]
            text = {"Prefix": f"{why} Rating: [[{score}]]", "Suffix": f"Rating: [[{score}]] {why}",
                    "Free": f"Rating: [[{score}]]"}[cot]
        elif "[[N]]" in prompt:
            text = f"{why} [[{score}]]"
        else:  # a score-first prompt ("reply with a single whole number ... Score:")
            text = str(score)
        return text, (_digit_logprobs(text, score, low, high) if params.top_logprobs else ())


def conform(value: Any, schema: dict[str, Any] | None) -> Any:
    """``value`` cut or padded to the schema's limits (array lengths, string lengths), as a constrained
    decoder would have produced it; keys the schema does not list are dropped when it forbids them."""
    if not schema:
        return value
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties") or {}
        if props and schema.get("additionalProperties") is False:
            value = {k: v for k, v in value.items() if k in props}
        return {k: conform(v, props.get(k)) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        items = list(value)[:schema.get("maxItems", len(value))]
        low = schema.get("minItems", 0)
        while items and len(items) < low:
            extra = items[len(items) % len(items)]
            items.append(f"{extra} (also {len(items)})" if isinstance(extra, str) else extra)
        return [conform(v, schema.get("items")) for v in items]
    if kind == "string" and isinstance(value, str):
        value = value[:schema.get("maxLength", len(value))]
        return value + "." * max(0, schema.get("minLength", 0) - len(value))
    return value


def fill_schema(schema: dict[str, Any], scores: dict[str, int], overall: int, text: str) -> Any:
    """A value of ``schema`` (objects, arrays, strings, numbers) whose numbers are scores.

    A number under a property named like a known criterion gets that
    criterion's score, any other number ``overall``; strings get ``text``;
    arrays their minimum number of items (at least one). For schemas this
    module does not know the exact shape of (Active-Critic's explained scores).
    """
    def value(node: dict[str, Any], key: str) -> Any:
        kind = node.get("type")
        if "enum" in node:
            return node["enum"][0] if key not in scores and not isinstance(node["enum"][0], (int, float)) \
                else min(node["enum"], key=lambda x: abs(x - scores.get(key, overall)))
        if kind == "object":
            props = node.get("properties") or {}
            if not props and scores:
                return {k: {"explanation": text, "score": v} for k, v in scores.items()}
            return {k: value(v, k if k in scores else key) for k, v in props.items()}
        if kind == "array":
            return [value(node.get("items") or {}, key) for _ in range(max(1, node.get("minItems", 1)))]
        if kind in ("integer", "number"):
            return scores.get(key, overall)
        if kind == "string":
            return text[:node.get("maxLength", 400)]
        if kind == "boolean":
            return False
        return None
    return value(schema, "")


def _digit_logprobs(text: str, score: int, low: int, high: int) -> tuple[dict[str, Any], ...]:
    """Logprobs like a confident judge: 80% on the score's digit, 10% on each neighbour on the scale.

    Positions before the digit are the reply's leading characters (as chosen tokens); the digit's position
    carries the alternatives, as :func:`judge_engine.parsing.read_weighted` reads them.
    """
    top = {str(score): math.log(0.8)}
    for d in (score - 1, score + 1):
        if low <= d <= high:
            top[str(d)] = math.log(0.1)
    at = text.find(str(score))
    lead = [{"token": ch, "logprob": 0.0, "top": {ch: 0.0}} for ch in text[:max(at, 0)][:14] if not ch.isdigit()]
    return tuple(lead + [{"token": str(score), "logprob": math.log(0.8), "top": top}])
