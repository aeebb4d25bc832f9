"""The simulated world's constants and typed parts: the aspects and task, the latent model's sizes and noise,
the vocabularies planted texts are built from, the seeded helpers every draw goes through (:func:`_unit`,
:func:`_rng`, :func:`_gauss`), :func:`higher_order_part`, and the records a :class:`~.world.World` is made of
(:class:`Dials`, :class:`PoolHypothesis`, :class:`Node`). No draws happen here."""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ...prompting import TaskInfo
from ...records import Aspect


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
