"""The seeded simulated world (:class:`World`): samples with latents and human scores, and every planted effect
per method (HPSS factor effects, HypoEval's pool, HD-Eval's sub-criteria, Active-Critic's criteria and
demonstrations), with the noise model a scoring prompt is answered from. Pure given the seed and dials; the
backend that answers requests from it is :mod:`.backend`."""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ...methods.hpss.strategy import FACTORS, Strategy, all_strategies
from ...records import Sample
from ...rubric_checks import statement_name
from .recognise import MARKERS, ac_statement_body
from .world_parts import (
    ADJECTIVES,
    ANNOTATOR_SD,
    ASPECTS,
    BAD_WORDS,
    DEFAULT_DIALS,
    GOOD_WORDS,
    ITEM_TAG,
    LATENT_SCALE,
    N_LATENTS,
    NOUNS,
    OPENER,
    POOL_TEMPLATES,
    STATEMENT_BODIES,
    TARGET,
    TRAITS,
    Dials,
    Node,
    PoolHypothesis,
    _gauss,
    _rng,
    higher_order_part,
)


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
