"""Replies of a judge that follows the humans: the stub server's ``--follow-humans`` mode, for benchmarks and
tests only.

A first look's verdict can only be checked end to end against a backend whose scores agree with the humans
(issue 62: a judge that agrees must be called "ok"), and the stub's hashed scores agree with nothing. Here a
request is answered in the shape its JSON schema asks for (the methods send one with every step), and every
score in it is the judged item's human level on the schema's scale plus seeded noise:

- the judged item is the known output text (of the loaded benchmarks, at least :data:`MIN_OUTPUT_CHARS`
  long) that ends last (the longest of those) in the last user message (a scoring prompt shows its examples before the item),
  outside the sources the message shows (an extractive summary is also in its article);
- its aspect is the one of the item's human scores whose name the prompt mentions most (the first when none);
- the noise is Gaussian with ``noise`` sd on a 1-5 scale, stretched to the aspect's (Topical-Chat's
  understandability is 0-1: sd 0.5 there would drown it), a pure function of the prompt text, so the same
  prompt gets the same answer (as from a greedy model) and each criterion's prompt its own draw;
- strings are short distinct sentences (a pattern's opener kept), arrays hold their minimum number of items
  (at least :data:`LIST_ITEMS` where allowed), a ``yes``/``no`` enum says ``yes`` above the scale's middle, and so
  does a boolean, where an item is judged (with none, a ``yes``/``no`` enum says ``no``: HypoEval's repetition check).

A request with no item in it (a method's hypothesis or criteria generation) gets the same shapes with the
scale's middle as its score, and a boolean there (the rubric model check's questions about a generated entry) is
true only for a property named ``about...``; a request without a schema gets the score as a bare number.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import dataclass
from typing import Any, Sequence

MIN_OUTPUT_CHARS = 20
"""Shorter outputs ("yes", "thanks!") are not looked for: they would be found inside other texts."""

LIST_ITEMS = 3
"""Items in a generated list where the schema allows them (a method asking for hypotheses or criteria)."""

WORDS = ("clear", "faithful", "specific", "coherent", "concise", "relevant", "fluent", "complete", "engaging",
         "consistent", "precise", "natural", "focused", "vivid", "logical", "accurate")


@dataclass(frozen=True)
class Item:
    output: str
    human: dict[str, float]
    scales: dict[str, tuple[float, float]]
    """Each aspect's (low, high): Topical-Chat's run from 0-1 to 1-5."""


class HumanFollower:
    """Answers chat requests as a judge at the human level plus noise (see the module docstring)."""

    def __init__(self, datasets: Sequence[Any], *, noise: float = 0.5, seed: int = 0):
        self.noise, self.seed = noise, seed
        self.items: list[Item] = []
        self.inputs: set[str] = set()
        """The sources, long enough to hold a copied output: SummEval's lead-3 summaries are the article's first
        sentences, so a prompt that shows the article after the judged summary held another item's summary
        later than its own (G-Eval's SummEval figure was +0.25 where direct scoring's was +0.86)."""
        for ds in datasets:
            scale = {a.name: (float(a.low), float(a.high)) for a in ds.aspects}
            for s in ds.samples:
                human = {k: float(v) for k, v in s.human.items() if v is not None and k in scale}
                if len(s.input.strip()) > MIN_OUTPUT_CHARS:
                    self.inputs.add(s.input.strip())
                if len(s.output.strip()) >= MIN_OUTPUT_CHARS and human:
                    self.items.append(Item(s.output.strip(), human, {k: scale[k] for k in human}))

    def judged(self, text: str) -> Item | None:
        """The known output that ends last in ``text`` (the longest of those) outside the sources it shows (None: no item shown)."""
        for source in self.inputs:
            if source in text:
                text = text.replace(source, " ")
        # the match that ends last, the longest of those: a shorter output found inside the judged one (an
        # extractive summary of two of another's three sentences) starts later but never ends later; by start
        # alone 39 of SummEval's 1,600 items were answered at another summary's level
        best, at = None, (-1, -1)
        for item in self.items:
            k = text.rfind(item.output)
            if k >= 0 and (k + len(item.output), len(item.output)) > at:
                best, at = item, (k + len(item.output), len(item.output))
        return best

    def level(self, messages: Sequence[dict[str, Any]]) -> tuple[float, str]:
        """The judged item's noisy human level as a share of its scale (0..1; 0.5 without an item), and the
        prompt text the noise was drawn from."""
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        item = self.judged(users[-1] if users else prompt)
        if item is None:
            return 0.5, prompt
        lower = prompt.lower()
        aspect = max(item.human, key=lambda name: lower.count(name.lower().replace("_", " ")))
        rng = random.Random(hashlib.sha256(f"{self.seed}\n{prompt}".encode()).digest())
        low, high = item.scales[aspect]
        span = (high - low) or 1.0
        value = item.human[aspect] + rng.gauss(0.0, self.noise * span / 4.0)
        return min(1.0, max(0.0, (value - low) / span)), prompt

    def logprobs(self, messages: Sequence[dict[str, Any]], text: str, top: int) -> list[dict[str, Any]]:
        """OpenAI-style ``logprobs.content`` of ``text`` (a reply of :meth:`reply`): its first digit a position of
        its own whose alternatives are the 1-5 digits around the noisy level (sd 0.5), as a model that is
        unsure between neighbouring scores puts them, so a probability-weighted reading (G-Eval's) gets the
        level between the integers; the text before and after one position each, certain."""
        digit = re.search(r"\d", text)
        if digit is None or top <= 0:
            return [{"token": text, "logprob": 0.0, "top_logprobs": []}]
        share, _ = self.level(messages)
        target = 1 + 4 * share
        weights = {k: math.exp(-((k - target) ** 2) / (2 * 0.5 ** 2)) for k in range(1, 6)}
        total = sum(weights.values())
        alternatives = sorted(weights, key=weights.get, reverse=True)[:top]
        position = {"token": digit.group(), "logprob": math.log(max(1e-9, weights.get(int(digit.group()), 0) / total)),
                    "top_logprobs": [{"token": str(k), "logprob": math.log(weights[k] / total)} for k in alternatives]}
        before, after = text[:digit.start()], text[digit.end():]
        return ([{"token": before, "logprob": 0.0, "top_logprobs": []}] if before else []) + [position] + (
            [{"token": after, "logprob": 0.0, "top_logprobs": []}] if after else [])

    def reply(self, messages: Sequence[dict[str, Any]], schema: dict[str, Any] | None) -> str:
        share, prompt = self.level(messages)
        if not schema:
            return str(round(1 + 4 * share))
        tag = hashlib.sha256(prompt.encode()).hexdigest()
        users = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        judging = self.judged(users[-1] if users else prompt) is not None
        return json.dumps(_fill(schema, share, tag, schema, judging=judging))


def _number(node: dict[str, Any], share: float) -> float | int:
    if "enum" in node:
        values = [v for v in node["enum"] if isinstance(v, (int, float))]
        target = min(values) + share * (max(values) - min(values))
        return min(values, key=lambda v: abs(v - target))
    low, high = float(node.get("minimum", 1)), float(node.get("maximum", 5 if "minimum" not in node else 100))
    value = low + share * (high - low)
    return round(value) if node.get("type") == "integer" else round(value, 2)


def _sentence(tag: str, index: int, opener: str, low: int, high: int) -> str:
    words = [WORDS[int(tag[(2 * index + k) % len(tag)], 16)] for k in range(4)]
    body = f"is {words[0]} and {words[1]} with {words[2]} {words[3]} detail number {index} {tag[:6]}"
    text = f"{opener} {body}." if opener else f"The text {body}."
    text = text[:max(1, high)]
    return text + "." * max(0, low - len(text))


def _opener(pattern: str) -> str:
    """The literal opener of a statement pattern (``^A good summary [a-z]...``, characters as classes)."""
    m = re.match(r"\^((?:[A-Za-z0-9 ]|\[\\?.\])*?) \[a-z\]", pattern)
    return re.sub(r"\[\\?(.)\]", r"\1", m.group(1)) if m else ""


def _fill(node: dict[str, Any], share: float, tag: str, root: dict[str, Any], index: int = 0, *,
          judging: bool = True, name: str = "") -> Any:
    if "$ref" in node:
        ref = node["$ref"].split("/")[-1]
        node = (root.get("$defs") or root.get("definitions") or {}).get(ref, {})
    for key in ("anyOf", "oneOf"):
        if key in node:
            return _fill(next((n for n in node[key] if n.get("type") != "null"), node[key][0]), share, tag, root,
                         index, judging=judging, name=name)
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0])
    if "enum" in node and not all(isinstance(v, (int, float)) for v in node["enum"]):
        options = node["enum"]
        if "yes" in options and "no" in options:
            # with no item to judge the question is about the request's own texts (HypoEval's "do these two
            # hypotheses say the same?"): the stub's are distinct sentences, so a capable model says no. Answered
            # by the middle score, every pair was "yes", every bank fell to one hypothesis and a HypoEval run
            # sent half the requests a model that tells its hypotheses apart sends (estimate-waves: 1.89x)
            return ("yes" if share >= 0.5 else "no") if judging else "no"
        return options[0]
    if kind in ("integer", "number"):
        return _number(node, share)
    if kind == "boolean":
        # with no item to judge the question is about the request's own text (the rubric check's "does this entry
        # give orders / refuse / hedge ...?" on a generated criterion): the stub's criteria are plain statements of
        # a quality, so a capable model says yes to "about_quality" and no to every fault; answered by the middle
        # score, every fault was "yes" and every generated hypothesis and criterion was refused (issue 62)
        return share >= 0.5 if judging else name.startswith("about")
    if kind == "string":
        return _sentence(tag, index, _opener(node.get("pattern", "")), int(node.get("minLength", 1)),
                         int(node.get("maxLength", 200)))
    if kind == "array":
        low, high = int(node.get("minItems", 0)), node.get("maxItems")
        n = max(low, LIST_ITEMS if high is None else min(int(high), LIST_ITEMS), 1 if high != 0 else 0)
        return [_fill(node.get("items") or {"type": "string"}, share, tag, root, index * 10 + i, judging=judging,
                      name=name) for i in range(n)]
    if kind == "object" or "properties" in node:
        props = node.get("properties") or {}
        return {k: _fill(v, share, tag, root, index * 10 + j, judging=judging, name=k)
                for j, (k, v) in enumerate(props.items())}
    return str(round(1 + 4 * share))
