"""The simulated judge as a backend of the one LLM call path (:class:`SimulatedBackend`): ``generate`` recognises
each request (:mod:`.recognise`), answers it from the world (:mod:`.world`) as a judge whose quality depends on
the prompt, in the schema's shape (:mod:`.schema`) or in free text, with the world's budget of malformed replies,
and counts what it saw in ``stats``."""

from __future__ import annotations

import json
import math
import random
import threading
from typing import Any, Sequence

from ...llm.base import Completion, GenerationParams, Message
from .recognise import (
    AC_DEFINITIONS,
    MARKERS,
    Step,
    _schema_opener,
    _schema_score_range,
    _statement_opener,
    ac_statement,
    recognise,
)
from .schema import _digit_logprobs, conform, fill_schema
from .world import World
from .world_parts import ASPECTS, OPENER, PLAIN_JUDGE_SD, REFINE_CANDIDATES, TARGET, PoolHypothesis, _gauss, _rng, _unit


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
        # The methods call one backend from many threads (batch scoring); ``d[k] = d.get(k) + 1`` and ``+=`` are
        # read-modify-writes a thread switch can split, which lost step counts under load (1197 vs 1188 for the
        # same calls), so every update of ``stats`` holds this lock.
        self._stats_lock = threading.Lock()

    def generate(self, messages: list[Message], params: GenerationParams) -> Completion:
        if not self.structured and params.json_schema:
            params = params.with_(json_schema="")
        step = recognise(self.world, messages, params)
        texts, logprobs = [], []
        for i in range(params.n):
            text, lp = self._answer(step, messages, params, params.sample_index * params.n + i)
            texts.append(text)
            logprobs.append(lp)
        with self._stats_lock:
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
            self._count("malformed")
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
        with self._stats_lock:
            if len(self.stats["unrecognised"]) < 20:
                self.stats["unrecognised"].append(" ".join(messages[-1]["content"].split())[:120])
        return "I cannot help with that request.", ()

    def _count(self, key: str, n: int = 1) -> None:
        with self._stats_lock:
            self.stats[key] += n

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
        self._count("leaked", leaked)

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
            self._count("leaked")
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
