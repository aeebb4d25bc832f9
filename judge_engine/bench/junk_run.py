"""Junk in a capable model's replies: what HypoEval, Active-Critic and HD-Eval keep, flag and refuse (issue 50).

Each method is fitted on a built-in dataset's training items against a scripted model standing in for a
capable one behind an OpenAI-compatible server (the ``openai`` backend's settings, so the methods ask for the
paper's form): every generation request (hypotheses, criteria, sub-criteria, a task description) is answered
with the schema's JSON holding half real rubric text (the papers' examples, ``tests/data/rubric_paper_examples.jsonl``)
and half generated-looking junk (``tests/data/rubric_junk.jsonl``), drawn in a fixed order from the prompt's
hash; scoring requests get a score fixed by the prompt. The fit then says, for the real entries and the junk it
was given, how many it kept unflagged, kept with a flag, and refused (``rejected``).

The scores are noise, so this measures the checks, not selection: a junk entry kept unflagged is one the checks
missed. The replies are scripted in-process over the engine's one LLM path (a ``FakeBackend`` under an
``openai`` configuration), so a run is reproducible to the entry and costs no server.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from typing import Any

from . import result
from .rubric_checks import JUNK, PAPER_EXAMPLES, read_jsonl

METHODS = ("hypoeval", "active_critic", "hd_eval")
OUTCOMES = ("given", "refused", "not_needed", "flagged", "passed", "at_end", "in_judge", "in_judge_flagged")


def add_arguments(parser) -> None:
    parser.add_argument("--dataset", default="summeval", help="built-in dataset (default summeval)")
    parser.add_argument("--aspect", default="", help="aspect (default: the dataset's first)")
    parser.add_argument("--train", type=int, default=12, help="training items (default 12)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--written-apart", action="store_true",
                        help="draw real and junk entries from tests/data/rubric_written_apart.jsonl (issue 65)")
    parser.add_argument("--obey", action="store_true",
                        help="the stub obeys an instruction inside a criterion (answers the highest score) and "
                             "otherwise follows the humans (issue 65)")
    parser.add_argument("--model-check", action="store_true",
                        help="the judge's own check runs; the stub answers it from the entries' labels (issue 65)")


def _key(text: str) -> str:
    # trailing dots go: a schema's minLength pads a short entry with them, as a constrained decoder would
    return " ".join(str(text).lower().split()).rstrip(".")


class Pools:
    """The real and the junk entries a scripted reply draws from, and every entry handed out."""

    def __init__(self, written_apart: bool = False) -> None:
        papers = read_jsonl(PAPER_EXAMPLES)
        junk = read_jsonl(JUNK)
        if written_apart:  # issue 65's set: its real criteria and its junk, every language, both halves
            from .rubric_split import WRITTEN_APART
            apart = read_jsonl(WRITTEN_APART)
            papers = [r for r in apart if r["positive"]]
            junk = [r for r in apart if not r["positive"]]
        self.orders = [r["text"] for r in junk if r.get("category") == "instruction"]
        self.labels: dict[str, str] = {}
        """Key of an entry (whole, or its definition after "Name:") -> its kind of junk, "" for real text: what a
        capable model's own check (issue 65) answers from."""
        for r, label in [*((r, "") for r in papers), *((r, r.get("category") or r.get("label") or "junk")
                                                        for r in junk)]:
            for part in (r["text"], r["text"].partition(":")[2]):
                if part.strip():
                    self.labels.setdefault(_key(part), label)
        """Junk entries that order the evaluator: an obeying stub answers them."""
        self.real = {k: [r["text"] for r in papers if r["kind"] == k] for k in ("hypothesis", "criterion",
                                                                               "task_description")}
        self.junk = {k: [r["text"] for r in junk if r["kind"] == k] for k in ("hypothesis", "criterion")}
        # junk of the other kinds is junk as a criterion too (a score list, a story, a slot)
        self.junk["criterion"] += self.junk["hypothesis"]
        self.junk["task_description"] = [r["text"] for r in junk]
        self.given: dict[str, tuple[str, frozenset[str]]] = {}
        """Each entry handed out (by its first key): its origin and every key it may be recorded under."""

    def draw(self, kind: str, n: int, seed: int) -> list[tuple[str, str]]:
        """``n`` (origin, text) pairs, alternately real and junk, in an order fixed by ``seed``."""
        rng = random.Random(seed)
        out = []
        for i in range(n):
            origin = "real" if (i + seed) % 2 == 0 else "junk"
            pool = (self.real if origin == "real" else self.junk)[kind]
            # an entry not handed out yet first: a repeat is a near-duplicate by right, not the checks' cost
            fresh = [t for t in pool if _key(t) not in self.given
                     and _key(t.replace("\uff1a", ":", 1).partition(":")[0]) not in self.given
                     and all(t != x for _, x in out)]
            out.append((origin, rng.choice(fresh or pool)))
        return out

    def texts(self, drawn: list[tuple[str, str]]) -> list[str]:
        for origin, text in drawn:
            # HypoEval reads an item without its list brackets: "[[4]] [[3]]" is recorded as "4]] [[3"
            self.given.setdefault(_key(text), (origin, frozenset({_key(text), _bare(text)})))
        return [text for _, text in drawn]

    def named(self, drawn: list[tuple[str, str]]) -> list[dict[str, str]]:
        """Entries as ``{name, definition}`` (a "Name: definition" text split, else its first words name it)."""
        out = []
        for origin, text in drawn:
            name, sep, definition = text.replace("\uff1a", ":", 1).partition(":")  # a full-width colon too
            if not sep or len(name.split()) > 6:
                name, definition = " ".join(text.split()[:4]), text
            name, definition = name.strip(), definition.strip()
            out.append({"name": name, "definition": definition})
            self.given.setdefault(_key(name), (origin, frozenset({_key(name), _key(f"{name}: {definition}"),
                                                                  _key(definition)})))
        return out


def _bare(text: str) -> str:
    """The key without brackets, spaces and dots at its ends: how a reader may have trimmed the entry."""
    return _key(text).strip("[] .")


def _keys(entry: dict[str, Any]) -> set[str]:
    text = str(entry.get("text") or "")
    return {k for k in (_key(text), _bare(text), _key(entry.get("name") or ""), _key(text.partition(":")[0])) if k}


def responder(pools: Pools, human: dict[str, float] | None = None, high: int = 5):
    """The scripted capable model: generation schemas filled from the pools, scores fixed by the prompt. With
    ``human`` (judged text -> its human score), the model obeys an order inside a criterion it is shown (the
    highest score, ``high``) and otherwise gives the human score of the judged text the prompt holds."""
    from .. import structured
    from .simulated_judge import conform, fill_schema

    def obeyed_score(prompt: str) -> int | None:
        if human is None:
            return None
        # an order shown whole, or its definition after a "Name:" (a method may show the two apart)
        if any(f in prompt for order in pools.orders
               for f in (order[:40], order.partition(":")[2].strip()[:40]) if len(f) >= 10):
            return high
        for text, score in human.items():
            if text and text in prompt:
                return int(round(score))
        return None

    def answer(messages: list[dict[str, Any]], params: Any) -> str:
        schema = structured.schema_of(params.json_schema) if params.json_schema else None
        title = structured.kind_of(params.json_schema) if params.json_schema else ""
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        if title == MODEL_CHECK_TITLE:
            return model_check_answer(pools, prompt)
        seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big")
        if schema is None:
            return "The outputs differ in how well they keep the main points and in how clearly they read."
        props = schema.get("properties") or {}
        lists = [k for k, v in props.items() if v.get("type") == "array"]
        if title in (structured.HYPOTHESES, structured.CRITERIA, structured.DECOMPOSITION) and lists:
            key = lists[0]
            node = props[key]
            n = node.get("maxItems") or 5
            kind = "hypothesis" if title == structured.HYPOTHESES else "criterion"
            drawn = pools.draw(kind, n, seed)
            items: Any = (pools.texts(drawn) if (node.get("items") or {}).get("type") == "string"
                          else pools.named(drawn))
            value = {key: items}
            if "observations" in props:
                value["observations"] = "Shorter outputs that keep the main points were scored higher."
            return json.dumps(conform(value, schema))
        if title == structured.TASK_DESCRIPTION and props:
            [text] = pools.texts(pools.draw("task_description", 1, seed))
            return json.dumps(conform({next(iter(props)): text}, schema))
        score = obeyed_score(prompt)
        score = 1 + seed % 5 if score is None else score
        return json.dumps(fill_schema(schema, {}, score, "It keeps the main points but reads unevenly."))

    return answer


MODEL_CHECK_TITLE = "rubric_model_check"
CHECK_ANSWERS = {"instruction": "instructs_evaluator", "refusal": "refuses", "hedge": "hedges",
                 "contradiction": "contradicts", "keywords": "lists_keywords", "scale_raters": "names_scale_or_raters",
                 "about_raters": "names_scale_or_raters"}


def model_check_answer(pools: Pools, prompt: str) -> str:
    """A capable model's answer to the judge's own check (:mod:`judge_engine.rubric_model_check`), from the
    entry's label: real text is about quality; junk is what its kind says (else not about quality)."""
    from ..rubric_model_check import QUESTIONS

    inside = prompt.split("<<<ENTRY>>>\n", 1)[-1].split("\n<<<END ENTRY>>>", 1)[0]
    keys = [_key(inside), _key(inside.partition(":")[2])]
    label = next((pools.labels[k] for k in keys if k in pools.labels), "")
    answers = {q: False for q in QUESTIONS}
    if not label:
        answers["about_quality"] = True
    elif label in CHECK_ANSWERS:
        answers[CHECK_ANSWERS[label]] = True
    return json.dumps({**answers, "language": "any", "reason": f"stub: {label or 'real'}"})


def judge_keys(method: str, state: dict[str, Any]) -> set[str]:
    """The keys of the entries the fitted judge uses (:func:`judge_engine.judge_flags.judge_entries`)."""
    from ..judge_flags import judge_entries

    keys = set()
    for _, text in judge_entries(method, state):
        keys.add(_key(text))
    if method == "active_critic":
        keys |= {_key(f"{n}: {d}") for n, d in (state.get("criteria") or {}).items()}
    return keys


def pool_keys(method: str, state: dict[str, Any]) -> set[str]:
    """The keys of the entries the fit ended with, whether used or not: HypoEval's bank, Active-Critic's task
    description and criteria, HD-Eval's tree."""
    if method == "hypoeval":
        return {_key(e["text"]) for e in state.get("bank") or ()}
    if method == "active_critic":
        return {_key(state.get("task_description") or "")} | {
            k for n, d in (state.get("criteria") or {}).items() for k in (_key(n), _key(f"{n}: {d}"))}
    return {_key(n["name"]) for n in (state.get("tree") or {}).get("nodes") or ()}


def outcomes(method: str, state: dict[str, Any], pools: Pools, notes: list[str],
             events: list[tuple[str, Any]] = ()) -> dict[str, Counter]:
    """Per origin (real, junk): the entries handed out that the checks refused, that the method left unchecked
    because its request was full (``not_needed``), that the checks flagged or passed unflagged; of those let
    through, how many the fit still holds at its end (``at_end``: the method replaces or prunes others, as
    HypoEval's bank updates and Active-Critic's refinements do) and how many the judge uses (``in_judge``, with
    ``in_judge_flagged``). A refused real entry and a junk entry that passed unflagged go to ``notes``."""
    refused = set().union(*(_keys(r) for r in state.get("rejected") or ())) if state.get("rejected") else set()
    # the state keeps the flags of the entries it ended with; the events, those of entries pruned since
    raised = [*(state.get("flagged") or ()), *(p for k, p in events if k == "rubric_flagged" and isinstance(p, dict))]
    flagged = set().union(*(_keys(f) for f in raised)) if raised else set()
    if method == "hd_eval":  # HD-Eval keeps its flags on the tree's nodes
        flagged |= {_key(n["name"]) for n in (state.get("tree") or {}).get("nodes") or () if n.get("flags")}
    used = judge_keys(method, state)
    ended = pool_keys(method, state)
    out: dict[str, Counter] = {}
    rules = {k: r.get("rule", "") for r in state.get("rejected") or () for k in _keys(r)}
    for first, (origin, keys) in pools.given.items():
        c = out.setdefault(origin, Counter())
        if keys & refused:
            rule = rules[next(iter(keys & refused))]
            c["not_needed" if rule == "not_needed" else "refused"] += 1
            if origin == "real" and rule != "not_needed":  # what the checks cost: said by name
                notes.append(f"{method}: real entry refused ({rule}): {first[:90]}")
            continue
        c["flagged" if keys & flagged else "passed"] += 1
        c["at_end"] += bool(keys & ended)
        if origin == "junk" and not keys & flagged:
            notes.append(f"{method}: junk passed unflagged{' (in the judge)' if keys & used else ''}: {first[:90]}")
        if keys & used:
            c["in_judge"] += 1
            c["in_judge_flagged"] += bool(keys & flagged)
    return out


def run(dataset: str = "summeval", aspect: str = "", train: int = 12,
        methods: list[str] | tuple[str, ...] = METHODS, written_apart: bool = False,
        obey: bool = False, model_check: bool = False) -> dict[str, Any]:
    from ..data.benchmarks import load_benchmark
    from ..llm import LLMConfig, make_llm
    from ..llm.fake import FakeBackend
    from ..methods import FitContext, get_method
    from ..prompting import TaskInfo

    data = load_benchmark(dataset)
    target = data.aspect(aspect) if aspect else data.aspects[0]
    samples = [s for s in data.samples if target.name in s.human][:train]
    if len(samples) < 4:
        raise ValueError(f"{dataset} has {len(samples)} items scored on {target.name}; at least 4 are needed")
    rows, notes, started = [], [], time.time()
    for method in methods:
        pools = Pools(written_apart)
        cls = get_method(method)
        human = {s.output: s.human[target.name] for s in samples} if obey else None
        backend = FakeBackend(responder(pools, human, int(target.high)))
        if model_check:  # a backend the judge's own check runs on (not the scripted "fake")
            backend.name = "stub-openai"
        llm = make_llm(LLMConfig(backend="openai", model="stub-capable", concurrency=1), backend=backend)
        t0, events = time.time(), []
        judge = get_method(method, dict(cls.quick_params)).fit(
            samples, target, FitContext(llm=llm, task=TaskInfo.of(data), log=lambda k, p: events.append((k, p))))
        counts = outcomes(method, judge.state, pools, notes, events)
        for origin in ("real", "junk"):
            c = counts.get(origin, Counter())
            c["given"] = c["refused"] + c["not_needed"] + c["flagged"] + c["passed"]
            rows.append({"method": method, "entries": origin, **{o: c.get(o, 0) for o in OUTCOMES},
                         "form": judge.state.get("criteria_form") or "", "seconds": round(time.time() - t0, 1)})
    junk = [r for r in rows if r["entries"] == "junk"]
    real = [r for r in rows if r["entries"] == "real"]
    summary = {"dataset": dataset, "aspect": target.name, "train": len(samples),
               "junk_given": sum(r["given"] for r in junk),
               "junk_refused_or_flagged": sum(r["refused"] + r["flagged"] for r in junk),
               "junk_passed_unflagged": sum(r["passed"] for r in junk),
               "junk_in_judge_unflagged": sum(r["in_judge"] - r["in_judge_flagged"] for r in junk),
               "real_given": sum(r["given"] for r in real), "real_refused": sum(r["refused"] for r in real),
               "seconds": round(time.time() - started, 1)}
    return result("junk-run", config={"dataset": dataset, "aspect": target.name, "train": len(samples),
                                     "methods": list(methods), "params": "each method's quick_params",
                                     "written_apart": written_apart, "obey": obey, "model_check": model_check},
                  rows=rows, summary=summary, notes=notes)
