"""HD-Eval (Liu et al., 2024): hierarchical criteria decomposition with a white-box aggregator.

The evaluation is decomposed into a tree of criteria whose first layer is
the dataset's human aspects; an LLM proposes finer criteria layer by layer,
scores every sample on every criterion with a prompt naming the criterion's
parent, and a scikit-learn regressor trained on the human scores aggregates
all criterion scores into the aspects' scores. Permutation importance of
that aggregator picks which criteria of the current layer are decomposed
further (Algorithm 1, App. C.1).

Paper sections and the functions here:

* §2.1, Eq. 1, App. G.1 (criteria decomposition) -> :func:`decompose_criteria`
  in one of two forms (the ``criteria_form`` parameter). The paper's:
  named children with definitions (prompt
  ``prompts/hd_eval_decompose_named.txt``, schema
  :func:`decomposition_schema`). The sentence form, for small models:
  sentences that start "A good <output>" under a grammar, each a child
  whose name is taken from its sentence (prompt
  ``prompts/hd_eval_decompose.txt``, schema :func:`statement_schema`).
  :func:`parse_decomposition` is the free-text fallback of both, and a
  reply with fewer than 2 usable children gets up to
  ``DECOMPOSE_DRAWS - 1`` more sampled draws;
* §2.1, App. G.2 (hierarchy-aware prompting) -> :func:`hierarchy_aware_scoring`
  through the shared :mod:`judge_engine.criteria_scoring` (instructions in
  ``prompts/hd_eval_score.txt``; the parent is the "aspect" of the prompt;
  score first, short output);
* §2.2, Eq. 2, App. C.3 (human preference-guided aggregation) ->
  :func:`fit_aggregator` (:mod:`judge_engine.aggregate`, one
  multi-output model per group of aspects sharing a range: footnote 11);
* §2.3, Eq. 3 (attribution pruning) -> :func:`attribution_importance` and
  :func:`prune_by_attribution` (:mod:`judge_engine.explain`); what it kept
  (decomposed further) and pruned per layer is in ``judge.state["pruning"]``
  and, flat, ``judge.state["expanded_nodes"]`` / ``judge.state["pruned_nodes"]``;
* App. C.1, Algorithm 1 (iterative alignment training) -> :meth:`HDEval.fit`.

Honest scores. A criterion score the reply did not give stays NaN; at
prediction the aggregator needs every feature, so a missing criterion is
filled with its training mean (ours; the paper does not say) and counted in
``Verdict.metadata["imputed_criteria"]``; an item with more than
``max_imputed_fraction`` of its criteria imputed gets no score (missing,
"k of n criteria imputed"). Fit-time problems (a decomposition with no
children, training cells imputed, criteria dropped, an aggregator that does
not agree with the humans out of fold) are ``judge.state["warnings"]``.

Why a sentence form at all: a very small model (the embedded 135M one) asked
for free names tends to name a child after its parent, another aspect or
the schema's own keys, which gives the aggregator nothing new; a grammar that
makes every child complete "A good summary ..." leaves it only the facet to
write, and that it writes usably. A capable model needs no such frame, so
``criteria_form="auto"`` uses the sentence form on the embedded model only
(:func:`judge_engine.methods.base.resolve_criteria_form`).

Generated sub-criteria go through :mod:`judge_engine.rubric_checks` (a
sentence by :func:`judge_engine.rubric_checks.check_statement`, a named
child's name and definition together as a criterion): a child copied from a training
text, a near-duplicate of a sibling or of a node already in the tree, an
empty, repetitive or over-long one, one whose name names nothing ("A",
"...", "The answer"), whose definition only repeats its name, or which only
restates its parent, or one naming no quality is not added to the tree (a child naming no quality word passes when it names the judged
output or a word of its parent: a facet of a quality). A copy is measured
against the training texts and the prompt's own texts. It
is kept in ``judge.state["rejected"]`` (text, rule, reason,
stage, name, definition and the ``parent`` id), counted in the run summary
and shown on the page, where a person can restore it as a child node. When
the checks leave fewer than 2 children, another draw is sampled, and a node
left with none gets the ``no_children`` warning.

Human in the loop (the paper's future work): the tree is the optional
``criteria_tree`` parameter. A person-edited tree (accepted, edited, added,
moved, deleted nodes; nodes removed from the aggregator; nodes marked to
expand or re-decompose) is the starting point of the next run: nodes already
decomposed are not decomposed again, and the cache answers every scoring
call whose node text, definition, parent and sample are unchanged.

The tree is a JSON-native dict ``{"nodes": [node, ...]}``; each node has
``id`` (``aspect`` for layer 1, ``parent-id/slug`` below: the slug of the
name, or of the ``abbrev`` a free-text reply gave), ``name``, ``definition``,
``parent`` (id or None), ``origin`` (``aspect`` | ``llm`` | ``human``),
``edited``, ``in_aggregator`` (False = pruned from the aggregator's input),
``expand`` (a person asks to decompose it), ``redecompose`` (a counter: raise it to ask the LLM for a fresh
decomposition) and ``decomposed`` (its children were already proposed).

References
----------
Liu, Y., Yang, T., Huang, S., Zhang, Z., Huang, H., Wei, F., Deng, W., Sun, F.
and Zhang, Q. (2024). HD-Eval: Aligning Large Language Model Evaluators
Through Hierarchical Criteria Decomposition. ACL. arXiv:2402.15754.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np

from .. import curation, data
from .. import structured as st
from ..aggregate import AGGREGATORS, Aggregator, cross_validated_correlation
from ..criteria_scoring import (LAYOUT_LABELS, LAYOUTS, CriterionScore, CriterionText, ScoringSettings,
                                estimate_criteria_calls, score_criteria, source_counts)
from ..explain import permutation_importance_oof
from ..llm import LLM, GenerationParams
from ..metrics import MIN_SELECTION_COVERAGE, correlations
from ..parsing import parse_json_object
from ..prompting import TaskInfo, load_template
from ..records import Aspect, Sample, Verdict
from ..rubric_checks import RubricCheck, check_criterion, check_statement, name_key, statement_name
from .base import (CRITERIA_FORM_LABELS, CRITERIA_FORMS, EventSink, FitContext, Interval, Judge, Method, Options,
                   Progress, judge_warning, register, resolve_criteria_form, small_model_hint)

DECOMPOSE_NAMED_TEMPLATE = load_template("hd_eval_decompose_named")
"""The decomposition prompt of the paper's form: named children with definitions (App. G.1)."""
DECOMPOSE_TEMPLATE = load_template("hd_eval_decompose")
"""The decomposition prompt of the sentence form, for small models: sentences that start with the opener."""
SCORE_TEMPLATE = load_template("hd_eval_score")

ROOT_NAME = "overall quality"
"""Parent named in the prompt of a layer-1 node (ours: the prompts of App. G.2 name a parent; an aspect has none)."""
CRITERION_SCALE = (1, 5)
"""Every criterion is scored 1-5 (paper App. G.2)."""
REDECOMPOSE_TEMPERATURE = 0.7
"""A requested re-decomposition samples a new draw instead of replaying the cached greedy one."""
DEFAULT_N_ASPECTS = max(len(b.aspects) for b in data.BENCHMARKS.values())
"""Aspects assumed by :meth:`HDEval.estimate_calls` when neither ``n_aspects`` nor ``aspects`` says how many:
the most any built-in benchmark has (6: Topical-Chat, HANNA), so the estimate is an upper bound on those;
a custom dataset with more aspects must pass ``n_aspects``."""
MIN_CHILDREN = 2
"""Fewest usable children a decomposition wants (and the named fallback schema's ``minItems``): fewer gets
another draw (:data:`DECOMPOSE_DRAWS`)."""
ASK_CHILDREN = 4
"""Sentences a decomposition in the sentence form asks for when ``k`` is smaller: the first ``k`` usable ones
are kept. A small model under a grammar and greedy decoding, made to write exactly as many sentences as are
needed, tends to fill a slot with a repeat (refused as a near-duplicate); spare slots leave room for that."""
DECOMPOSE_DRAWS = 3
"""Calls one decomposition may make: the greedy reply, then sampled draws of the same prompt
(``REDECOMPOSE_TEMPERATURE``) while fewer than 2 children are usable; the usable children of every draw are
pooled. A fresh draw, not a follow-up turn naming the refused children: a follow-up keeps the refused reply in
the context, and a small model tends to say it again, where a sampled draw of the clean prompt differs."""


# ---- the tree ------------------------------------------------------------------------------------

def make_node(node_id: str, name: str, definition: str, parent: str | None, *, origin: str,
              **extra: Any) -> dict[str, Any]:
    """A tree node with every field present (JSON-native)."""
    node = {"id": node_id, "name": name, "definition": definition, "parent": parent, "origin": origin,
            "edited": False, "in_aggregator": True, "expand": False, "redecompose": 0, "decomposed": False}
    node.update(extra)
    return node


def node_layer(nodes: dict[str, dict[str, Any]], node_id: str) -> int:
    """Depth of a node: 1 for an aspect, its parent's layer + 1 below."""
    layer, seen = 1, {node_id}
    parent = nodes[node_id].get("parent")
    while parent is not None and parent in nodes:
        if parent in seen:
            raise ValueError(f"criteria tree has a cycle through {parent!r}")
        seen.add(parent)
        layer += 1
        parent = nodes[parent].get("parent")
    return layer


def root_aspect(nodes: dict[str, dict[str, Any]], node_id: str) -> str:
    """The layer-1 ancestor (aspect) of a node."""
    while nodes[node_id].get("parent") is not None:
        node_id = nodes[node_id]["parent"]
    return node_id


def tree_index(tree: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Nodes by id, each with its ``layer``; checks parents exist."""
    nodes = {n["id"]: dict(n) for n in tree.get("nodes", [])}
    for n in nodes.values():
        if n.get("parent") is not None and n["parent"] not in nodes:
            raise ValueError(f"node {n['id']!r} has an unknown parent {n['parent']!r}")
    for nid, n in nodes.items():
        n["layer"] = node_layer(nodes, nid)
    return nodes


def initial_tree(aspects: Sequence[Aspect], given: dict[str, Any] | None) -> dict[str, Any]:
    """Layer 1 = the human aspects (App. C.2); a given (person-edited) tree is used as is.

    Aspects missing from a given tree are added as layer-1 nodes.
    """
    nodes = [dict(n) for n in (given or {}).get("nodes", [])]
    have = {n["id"] for n in nodes}
    for a in aspects:
        if a.name not in have:
            nodes.insert(len([n for n in nodes if n.get("parent") is None]),
                         make_node(a.name, a.name, a.definition or a.name, None, origin="aspect"))
    defaults = make_node("", "", "", None, origin="llm")
    return {"nodes": [{**defaults, **n} for n in nodes]}


SLUG_CHARS = 24
"""Longest node-id part taken from a name; whole words only, so an id reads as words."""


def _slug(text: str) -> str:
    words = [w for w in re.split(r"[^\w]+", text.lower()) if w]
    slug = ""
    for word in words:
        longer = f"{slug}-{word}" if slug else word
        if len(longer) > SLUG_CHARS:
            break
        slug = longer
    return slug or (words[0][:SLUG_CHARS] if words else "criterion")


def parse_decomposition(text: str, k: int) -> list[dict[str, str]]:
    """Children proposed in a decomposition reply: at most ``k``, names de-duplicated.

    Reads the JSON list asked for; failing that, lines such as
    ``1. Name: definition`` or ``- Name - definition``. Returns [] when
    nothing usable is found (the caller records it).
    """
    obj = parse_json_object(text)
    items: list[dict[str, str]] = []
    if isinstance(obj, dict):
        obj = next((v for v in obj.values() if isinstance(v, list)), [obj])
    if isinstance(obj, list):
        for it in obj:
            if isinstance(it, dict) and str(it.get("name", "")).strip():
                items.append({"name": str(it["name"]).strip(), "abbrev": str(it.get("abbrev", "")).strip(),
                              "definition": str(it.get("definition", "")).strip()})
    if not items:
        for line in (text or "").splitlines():
            m = re.match(r"^\s*(?:\d+[.)]|[-*•])\s*\**([^:*\n]{2,60}?)\**\s*[:\u2013-]\s+(.{8,})$", line)
            if m:
                items.append({"name": m.group(1).strip(), "abbrev": "", "definition": m.group(2).strip()})
    return _dedupe(items, k)


def _dedupe(items: Sequence[dict[str, str]], k: int) -> list[dict[str, str]]:
    """At most ``k`` children, the first of each name (case-insensitive)."""
    out, seen = [], set()
    for it in items:
        key = it["name"].lower()
        if key in seen:
            continue
        seen.add(key)
        out.append(it)
    return out[:k]


def decomposition_schema(k: int) -> dict[str, Any]:
    """The reply schema of a decomposition in the paper's form: named children with definitions,
    ``{"children": [{name, definition}, ...]}``, 2 to ``k`` items (App. G.1: the LLM drafts the criteria and
    their definitions together). Also what a reply that ignored :func:`statement_schema` may still hold (read
    by :func:`read_decomposition`)."""
    return st.named_items_schema(st.DECOMPOSITION, "children", min_items=min(MIN_CHILDREN, k), max_items=k)


def statement_schema(k: int, opener: str) -> dict[str, Any]:
    """The reply schema of a decomposition in the sentence form: ``{"children": ["<opener> ...", ...]}``,
    exactly ``k`` sentences.

    For small models (see the module docstring): the grammar leaves the
    model only the facet to write after the opener
    (:func:`judge_engine.structured.statement_list_schema`). Each child's
    name is taken from its sentence
    (:func:`judge_engine.rubric_checks.statement_name`) and its definition is
    the sentence.
    """
    return st.statement_list_schema(st.DECOMPOSITION, "children", opener=opener, min_items=k, max_items=k)


def _statement_child(sentence: str, opener: str) -> dict[str, Any]:
    text = " ".join(sentence.split())
    return {"name": statement_name(text, opener), "abbrev": "", "definition": text, "statement": True}


def read_decomposition(text: str, k: int, opener: str = "") -> tuple[list[dict[str, str]], str]:
    """Children of a decomposition reply and how they were read: ``json``, ``text`` (fallback) or ``none``.

    With an ``opener``, the sentences of :func:`statement_schema` come first,
    then sentences starting with the opener anywhere in a free-text reply;
    named children (JSON or "1. Name: definition" lines) are the last
    fallback, for a server that ignored the schema. A child read from a
    sentence carries ``statement: True`` (checked by
    :func:`judge_engine.rubric_checks.check_statement`).
    """
    if opener:
        got = st.read_json(text, statement_schema(k, opener))
        if got.ok:
            return _dedupe([_statement_child(c, opener) for c in got.value["children"]], k), "json"
        found = st.find_statements(text, opener)
        if found:
            return _dedupe([_statement_child(opener + f[len(opener):], opener) for f in found], k), "text"
    got = st.read_json(text, decomposition_schema(k))
    if got.ok:
        items = [{"name": c["name"].strip(), "abbrev": "", "definition": c["definition"].strip()}
                 for c in got.value["children"] if c["name"].strip()]
        return _dedupe(items, k), "json"
    children = parse_decomposition(text, k)
    return children, "text" if children else "none"


@dataclass(frozen=True)
class Decomposition:
    """What one decomposition (its greedy reply and any further draws) proposed."""

    children: tuple[dict[str, str], ...]
    """Parsed children (name, abbrev, definition), at most ``k``."""
    raw: str
    """The replies, one after the other."""
    read: str
    """``json`` (the structured reply), ``text`` (the free-text fallback) or ``none`` (nothing usable), of the
    first reply that gave a usable child."""
    follow_up: bool = False
    """True when the first reply had fewer than 2 usable children and more draws were sampled."""
    rejected: tuple[dict[str, Any], ...] = ()
    """Children the rubric checks refused (:func:`check_children`), from either reply."""


def child_text(child: dict[str, Any]) -> str:
    """A child's name and definition as one text, the way the rubric checks read it."""
    return f"{child['name']}: {child.get('definition') or child['name']}"


def check_children(children: Sequence[dict[str, str]], *, shown: Sequence[str] = (), existing: Sequence[str] = (),
                   topics: Sequence[str] = (), parent: Sequence[str] = (), taken: Sequence[str] = (),
                   opener: str = "") -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The children the rubric checks accept (with their ``flags`` when any), and the refused ones.

    A named child (the paper's form) is checked by
    :func:`judge_engine.rubric_checks.check_criterion` with ``parent`` (the
    parent's name and definition: a child must add a word to them) and
    ``topics`` (the judged output's label and the parent: a facet that names
    them needs no word of the quality vocabulary); a child read from a
    sentence (``statement``) by :func:`judge_engine.rubric_checks.check_statement`
    with ``opener``. Texts a copy is measured against are ``shown``;
    ``existing`` node texts and siblings accepted before are what a
    ``near_duplicate`` is measured against. A child named like a node already
    in the tree (``taken``) or like a sibling accepted before it is a
    ``near_duplicate`` too: the aggregator would get one criterion twice
    under two scores.
    """
    accepted = list(existing)
    names = {name_key(n): n for n in taken}
    kept: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for child in children:
        text = child_text(child)
        if child.get("statement"):
            check = check_statement(child["definition"], opener=opener, shown=shown, accepted=accepted,
                                    parent=parent, topics=topics)
        else:
            check = check_criterion(child["name"], child.get("definition") or "", shown=shown, accepted=accepted,
                                    parent=parent, topics=topics)
        same = names.get(name_key(child["name"]))
        if same is not None and check.ok:
            check = RubricCheck(text, False, "near_duplicate", f"named like the criterion {same[:40]!r} already "
                                "in the tree")
        if check.ok:
            accepted.append(text)
            names[name_key(child["name"])] = child["name"]
            kept.append({**child, "flags": [f.to_dict() for f in check.flags]} if check.flags else child)
        else:
            refused.append({**check.to_dict(), "name": child["name"], "definition": child.get("definition", "")})
    return kept, refused


def decompose_criteria(parent: dict[str, Any], *, task: TaskInfo, k: int, llm: LLM,
                       guideline: str = "", max_tokens: int = 512, shown: Sequence[str] = (),
                       existing: Sequence[str] = (), taken: Sequence[str] = (),
                       form: str = "paper") -> Decomposition:
    """Eq. 1: the LLM proposes up to ``k`` sub-criteria of ``parent``.

    ``form`` is a resolved ``criteria_form``: ``paper`` asks for 2 to ``k``
    named children with definitions (:func:`decomposition_schema`, checked
    as named criteria); ``sentence`` asks for ``max(k, ASK_CHILDREN)``
    sentences that start with the task's opener (:func:`statement_schema`,
    checked as statements). One greedy call per parent (ours; the template
    of App. G.1 may list several), plus sampled draws of the same prompt
    while fewer than 2 children are usable (at most
    :data:`DECOMPOSE_DRAWS` calls); the first ``k`` usable children of
    all draws are kept. Usable means read and accepted by
    :func:`check_children` against ``shown`` (texts a copy is measured
    against, e.g. the training texts) plus the guideline, ``existing`` (the
    texts of the nodes already in the tree, the parent's among them) and ``taken``
    (their names); refused children are in ``Decomposition.rejected`` with
    the parent's id. A parent whose ``redecompose`` counter is raised starts
    from a sampled draw.
    """
    min_k = min(MIN_CHILDREN, k)
    slots = dict(task=task.task, parent_name=parent["name"], parent_definition=parent["definition"] or parent["name"],
                 guideline=f"Guidance from an expert on this aspect: {guideline}\n" if guideline else "",
                 output_label_lower=task.output_label.lower())
    if form == "sentence":
        opener, n_ask = task.statement_opener, max(k, ASK_CHILDREN)
        schema = statement_schema(n_ask, opener)
        prompt = DECOMPOSE_TEMPLATE.render(**slots, k=n_ask, opener=opener)
    else:
        opener, n_ask = "", k  # no opener: children are read and checked as named criteria
        schema = decomposition_schema(k)
        prompt = DECOMPOSE_NAMED_TEMPLATE.render(**slots, min_k=min_k, k=k)
    again = int(parent.get("redecompose") or 0)
    # the rubric presence penalty: without it a small model writes its first child again in the second slot
    params = GenerationParams(max_tokens=max_tokens, temperature=0.0, json_schema=st.as_param(schema),
                              presence_penalty=st.RUBRIC_PRESENCE_PENALTY)
    messages = [{"role": "user", "content": prompt}]
    # a child that copies the guideline copies the prompt; one that is nearly the parent's or another aspect's
    # definition (both among the ``existing`` node texts) is a near-duplicate, not a copy of a judged text
    shown = [*shown, guideline]
    # what a facet may name instead of a quality word: the judged output and its parent
    topics = (task.output_label, parent["name"], parent["definition"] or "")
    own = (parent["name"], parent["definition"] or "")
    children: list[dict[str, str]] = []
    rejected: list[dict[str, Any]] = []
    replies: list[str] = []
    how = "none"
    # a re-decomposition starts past every draw an earlier one may have made: a cached draw would replay its children
    first = again * DECOMPOSE_DRAWS
    for draw in range(first, first + DECOMPOSE_DRAWS):
        sampled = params.with_(temperature=REDECOMPOSE_TEMPERATURE, sample_index=draw) if draw else params
        reply = llm.complete(messages, sampled).text
        replies.append(reply)
        found, read = read_decomposition(reply, n_ask, opener)
        # each draw's children are checked against the tree and the usable children of the draws before it
        more, refused = check_children(found, shown=shown, existing=[*existing, *map(child_text, children)],
                                       topics=topics, parent=own, taken=[*taken, *(c["name"] for c in children)],
                                       opener=opener)
        said = {r["text"] for r in rejected}  # the same refused child said twice is one rejection
        stage = "decomposition" if draw == first else f"decomposition (draw {draw - first + 1})"
        rejected += [{**r, "stage": stage, "parent": parent.get("id")} for r in refused if r["text"] not in said]
        if how == "none" and (more or read != "none"):
            how = read  # the first reply that was read
        children = [*children, *more][:k]
        if len(children) >= min_k:
            break
    return Decomposition(tuple(children), "\n--- next draw ---\n".join(replies), how, len(replies) > 1,
                         tuple(rejected))


def add_children(tree: dict[str, Any], parent_id: str, children: Sequence[dict[str, str]]) -> list[str]:
    """Append LLM-proposed children under ``parent_id``; returns their new ids."""
    ids = {n["id"] for n in tree["nodes"]}
    new = []
    for c in children:
        base = f"{parent_id}/{_slug(c.get('abbrev') or c['name'])}"
        nid, i = base, 2
        while nid in ids:
            nid, i = f"{base}-{i}", i + 1
        ids.add(nid)
        flags = {"flags": c["flags"]} if c.get("flags") else {}
        tree["nodes"].append(make_node(nid, c["name"], c.get("definition") or c["name"], parent_id, origin="llm",
                                       **flags))
        new.append(nid)
    for n in tree["nodes"]:
        if n["id"] == parent_id:
            n["decomposed"] = True
    return new


def flagged_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The generated nodes used with rubric-check flags (:mod:`judge_engine.rubric_checks`), for the run summary."""
    return [{"text": child_text(n), "name": n["name"], "flags": n["flags"], "stage": "decomposition",
             "parent": n.get("parent")} for n in tree["nodes"] if n.get("flags")]


def remove_llm_children(tree: dict[str, Any], parent_id: str) -> list[str]:
    """Drop the unedited LLM children of a node (and their subtrees) before a re-decomposition."""
    nodes = tree_index(tree)
    doomed = {nid for nid, n in nodes.items()
              if n.get("parent") == parent_id and n["origin"] == "llm" and not n.get("edited")}
    changed = True
    while changed:
        more = {nid for nid, n in nodes.items() if n.get("parent") in doomed and nid not in doomed}
        changed = bool(more)
        doomed |= more
    tree["nodes"] = [n for n in tree["nodes"] if n["id"] not in doomed]
    return sorted(doomed)


def guideline_for(guidelines: dict[str, str] | None, aspect: str) -> str:
    return str((guidelines or {}).get(aspect, "")).strip()


def scoring_settings(params: dict[str, Any]) -> ScoringSettings:
    """How an HD-Eval judge scores its nodes, from its parameters: score first (App. G.2), one call per node."""
    return ScoringSettings(layout=params["layout"], reasoning=False, max_tokens=params["score_max_tokens"],
                           weighted=params["weighted"])


def hierarchy_aware_scoring(samples: Sequence[Sample], node_ids: Sequence[str], tree: dict[str, Any], *,
                            task: TaskInfo, llm: LLM, settings: ScoringSettings,
                            guidelines: dict[str, str] | None = None,
                            progress: Progress | None = None,
                            stage: str = "scoring") -> dict[str, list[CriterionScore]]:
    """App. G.2: score every sample on each node with a prompt naming the node's parent (1-5).

    ``settings`` is :func:`scoring_settings` of the judge's parameters.

    Grouped by parent: the parent is the prompt's aspect, the node its
    criterion. Returns node id -> one :class:`CriterionScore` per sample
    (NaN where the reply and its one follow-up had no score).
    """
    nodes = tree_index(tree)
    by_parent: dict[str | None, list[str]] = {}
    for nid in node_ids:
        by_parent.setdefault(nodes[nid].get("parent"), []).append(nid)
    total = len(samples) * len(node_ids)
    done = 0
    out: dict[str, list[CriterionScore]] = {}
    for parent_id, children in by_parent.items():
        if parent_id is None:
            parent = Aspect(ROOT_NAME, *map(float, CRITERION_SCALE), f"the overall quality of the "
                                                                      f"{task.output_label.lower()}")
        else:
            p = nodes[parent_id]
            parent = Aspect(p["name"], *map(float, CRITERION_SCALE), p["definition"] or p["name"])
        guideline = guideline_for(guidelines, root_aspect(nodes, children[0]))
        instructions = SCORE_TEMPLATE.render(
            parent_name=parent.name, output_label_lower=task.output_label.lower(), task=task.task,
            guideline=f" Expert guidance for this aspect: {guideline}" if guideline else "")
        criteria = [CriterionText(nid, nodes[nid]["name"], nodes[nid]["definition"] or nodes[nid]["name"])
                    for nid in children]

        def step(d: int, t: int, base=done) -> None:
            if progress:
                progress(base + min(d, t), total, stage)

        results = score_criteria(samples, criteria, instructions=instructions, aspect=parent, task=task, llm=llm,
                                 settings=settings, progress=step)
        for nid in children:
            out[nid] = [r[nid] for r in results]
        done += len(samples) * len(children)
    return out


def aspect_groups(aspects: Sequence[Aspect]) -> list[list[Aspect]]:
    """Aspects sharing a human range; each group gets its own aggregator (footnote 11)."""
    groups: dict[tuple[float, float], list[Aspect]] = {}
    for a in aspects:
        groups.setdefault((a.low, a.high), []).append(a)
    return list(groups.values())


def fit_aggregator(samples: Sequence[Sample], scores: dict[str, list[float]],
                                  features: Sequence[str], aspects: Sequence[Aspect], *, kind: str,
                                  random_state: int) -> list[Aggregator]:
    """Eq. 2: one multi-output regressor per aspect group, from all criterion scores to the human scores."""
    x = np.array([[scores[f][i] for f in features] for i in range(len(samples))], dtype=float)
    x = x.reshape(len(samples), len(features))
    aggs = []
    for group in aspect_groups(aspects):
        y = [[s.human[a.name] for a in group] for s in samples]
        aggs.append(Aggregator.fit(x, y, kind=kind, features=list(features), targets=[a.name for a in group],
                                   random_state=random_state))
    return aggs


def attribution_importance(aggs: Sequence[Aggregator], *, n_repeats: int) -> dict[str, dict[str, float]]:
    """Permutation importance of each criterion (out of fold), pooled over the aspect groups.

    Each group's importance (an MSE increase) is divided by the variance of
    its human scores, so groups on different ranges weigh alike.
    """
    pooled: dict[str, list[tuple[float, float]]] = {}
    for agg in aggs:
        frame = permutation_importance_oof(agg, n_repeats=n_repeats)
        var = float(np.mean(np.var(agg.y, axis=0))) or 1.0
        for feature, row in frame.iterrows():
            pooled.setdefault(str(feature), []).append((row["importance"] / var, row["std"] / var))
    return {f: {"importance": float(np.mean([v[0] for v in vals])), "std": float(np.mean([v[1] for v in vals]))}
            for f, vals in pooled.items()}


def prune_by_attribution(candidates: Sequence[str], importance: dict[str, dict[str, float]],
                         k_expand: int) -> list[str]:
    """Eq. 3: the ``k_expand`` most important candidates (current layer only) are decomposed next.

    The others are "pruned" in the paper's sense: not decomposed, but they
    stay inputs of the aggregator. Ties keep the tree order.
    """
    ranked = sorted(candidates, key=lambda c: -importance.get(c, {}).get("importance", -math.inf))
    return ranked[:k_expand]


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _clean_corr(corr: dict[str, dict[str, float]]) -> dict[str, dict[str, float | None]]:
    return {t: {k: _finite(v) for k, v in c.items()} for t, c in corr.items()}


def known_aspects(target: Aspect, names: Sequence[str], samples: Sequence[Sample],
                  dataset_aspects: Sequence[Aspect] | None = None) -> list[Aspect]:
    """Records for the layer-1 aspects: the target as given, the others from the dataset's own aspect records
    (passed by the run), else from the built-in benchmark that defines the target the same way, else named
    only with the range their training scores span."""
    if dataset_aspects:
        catalogue = {a.name: a for a in dataset_aspects}
    else:
        spec = next((b for b in data.BENCHMARKS.values()
                     if any(a.name == target.name and a.definition == target.definition for a in b.aspects)), None)
        catalogue = {a.name: a for a in spec.aspects} if spec else {}
    out = []
    for name in names:
        if name == target.name:
            out.append(target)
        elif name in catalogue:
            out.append(catalogue[name])
        else:
            values = [s.human[name] for s in samples if name in s.human]
            out.append(Aspect(name, float(math.floor(min(values))), float(math.ceil(max(values))), ""))
    return out


@register
class HDEval(Method):
    """HD-Eval: a criteria tree scored 1-5 by the LLM and aggregated by a white-box regressor.

    Parameters
    ----------
    aggregator : {"nn", "lr", "dt", "rf"}, default="nn"
        Aggregator trained on the human scores: shallow ReLU MLP (the paper's
        main HD-Eval-NN), linear regression, decision tree or random forest
        (paper §3.1, App. C.3).
    max_layers : int, default=3
        Maximum depth L of the criteria tree (paper §3.1: L = 3).
    k_child : int, default=4
        Maximum children per decomposed criterion (paper §3.1, App. C.2: 4).
    k_expand : int, default=3
        Criteria of the current layer chosen by permutation importance for
        decomposition from layer 3 on (not stated in App. C.2; 3 matches the 12
        layer-3 criteria of the Topical-Chat tree, App. H Table 10).
    aspects : tuple of str or None, default=None
        Layer-1 aspects (also the aggregator's targets). None = every aspect
        the training samples carry, as in the paper (App. C.2).
    criteria_tree : dict or None, default=None
        A criteria tree to start from (e.g. one a person edited after an
        earlier run); None = decompose from the aspects as the paper does.
    guidelines : dict or None, default=None
        Optional expert guideline text per aspect, added to the decomposition
        and scoring prompts of that aspect's subtree.
    layout : {"paper", "sample_first"}, default="paper"
        Scoring prompt order: the paper's (instructions and criterion, then
        the sample) or sample first for backend prefix caching.
    criteria_form : {"auto", "paper", "sentence"}, default="auto"
        How a decomposition asks for sub-criteria: ``paper``, named
        sub-criteria with definitions (§2.1, App. G.1); ``sentence``, for
        small models, each sub-criterion one sentence that starts "A good
        <output>" under a grammar, named from its sentence (ours); ``auto``,
        the sentence form on the embedded model and the paper's on every
        other backend (:func:`~judge_engine.methods.base.resolve_criteria_form`).
        The form used is ``judge.state["criteria_form"]``.
    weighted : bool, default=False
        Probability-weighted 1-5 score from logprobs instead of the sampled
        number (off in the paper; helps the tiny embedded model).
    score_max_tokens : int, default=32
        Reply budget of a criterion score (paper App. C.3: 32 tokens, score first).
    decompose_max_tokens : int, default=512
        Reply budget of a decomposition.
    pi_repeats : int, default=10
        Permutation-importance repeats per fold, 5 folds out of fold (not stated in the paper).
    max_imputed_fraction : float, default=0.5
        At prediction, a criterion the reply gave no score for is filled with
        its training mean (ours; the paper does not say; counted per item in
        ``Verdict.metadata["imputed_criteria"]``). An item with more than this
        share of its criteria imputed gets no score (missing, "k of n criteria
        imputed"): the prediction would then mostly restate training means.
        0 = any missing criterion makes the item missing; an item with every
        criterion missing is always missing.
    random_state : int, default=0
        Seed of the aggregator, the folds and the permutations.
    """

    name = "hd_eval"
    title = "HD-Eval"
    _parameter_constraints = {
        "aggregator": Options(AGGREGATORS),
        "max_layers": Interval(int, 1, 5), "k_child": Interval(int, 1, 10), "k_expand": Interval(int, 1, 50),
        "layout": Options(LAYOUTS), "criteria_form": Options(CRITERIA_FORMS), "weighted": Options((True, False)),
        "score_max_tokens": Interval(int, 1, 1024), "decompose_max_tokens": Interval(int, 32, 4096),
        "pi_repeats": Interval(int, 1, 100), "random_state": Interval(int, 0, None),
        "max_imputed_fraction": Interval(float, 0.0, 1.0)}

    _parameter_labels = {
        "aggregator": "Aggregator model", "max_layers": "Layers of the tree", "k_child": "Children per node",
        "k_expand": "Nodes expanded per layer", "aspects": "Layer-1 aspects", "criteria_tree": "Edited tree",
        "guidelines": "Expert guidelines", "layout": "Prompt layout", "criteria_form": "How sub-criteria are asked for",
        "weighted": "Probability-weighted scores", "score_max_tokens": "Score reply limit (tokens)",
        "decompose_max_tokens": "Decomposition reply limit", "pi_repeats": "Permutation repeats",
        "random_state": "Random seed of the method",
        "max_imputed_fraction": "Most imputed scores per criterion"}
    _choice_labels = {"aggregator": {"nn": "MLP (paper's main)", "lr": "linear regression", "dt": "decision tree",
                                     "rf": "random forest"},
                      "layout": LAYOUT_LABELS, "criteria_form": CRITERIA_FORM_LABELS}
    quick_params: ClassVar[dict[str, Any]] = {"max_layers": 2, "k_child": 3, "pi_repeats": 3}
    def __init__(self, *, aggregator: str = "nn", max_layers: int = 3, k_child: int = 4, k_expand: int = 3,
                 aspects: tuple[str, ...] | None = None, criteria_tree: dict | None = None,
                 guidelines: dict | None = None, layout: str = "paper", criteria_form: str = "auto",
                 weighted: bool = False, score_max_tokens: int = 32, decompose_max_tokens: int = 512,
                 pi_repeats: int = 10, random_state: int = 0, max_imputed_fraction: float = 0.5):
        self.aggregator = aggregator
        self.max_layers = max_layers
        self.k_child = k_child
        self.k_expand = k_expand
        self.aspects = aspects
        self.criteria_tree = criteria_tree
        self.guidelines = guidelines
        self.layout = layout
        self.criteria_form = criteria_form
        self.weighted = weighted
        self.score_max_tokens = score_max_tokens
        self.decompose_max_tokens = decompose_max_tokens
        self.pi_repeats = pi_repeats
        self.random_state = random_state
        self.max_imputed_fraction = max_imputed_fraction

    def _validate_params(self) -> None:
        super()._validate_params()
        for name in ("criteria_tree", "guidelines"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, dict):
                raise ValueError(f"{name}={value!r} must be a dict or None")
        if self.criteria_tree is not None:
            tree_index(self.criteria_tree)

    # ---- Algorithm 1 ----------------------------------------------------------------------
    def fit(self, train: Sequence[Sample], aspect: Aspect, context: FitContext) -> Judge:
        """``context.aspects``: the dataset's aspect records (definitions, ranges) for the layer-1 aspects."""
        self._validate_params()
        llm, task, progress = context.llm, context.task, context.progress
        settings = scoring_settings(self.get_params())
        emit = context.log or (lambda kind, payload: None)
        names = list(self.aspects) if self.aspects else sorted(
            set.intersection(*(set(s.human) for s in train)) if train else {aspect.name})
        if aspect.name not in names:
            names.insert(0, aspect.name)
        train = [s for s in train if all(_finite(s.human.get(n)) is not None for n in names)]
        if len(train) < 2:
            raise ValueError(f"HD-Eval trains its aggregator on human scores: it needs at least 2 training samples "
                             f"scored on every layer-1 aspect ({', '.join(names)}); got {len(train)}")
        aspects = known_aspects(aspect, names, train, context.aspects)
        tree = initial_tree(aspects, self.criteria_tree)
        form = resolve_criteria_form(self.criteria_form, llm)
        emit("tree_started", {"aspects": names, "nodes": len(tree["nodes"]), "given": self.criteria_tree is not None,
                              "criteria_form": form})

        scores: dict[str, list[CriterionScore]] = {}
        importance: dict[str, dict[str, float]] = {}
        layers: list[dict[str, Any]] = []
        failures: dict[str, int] = {}
        coverage: dict[str, float] = {}
        pruning: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        decomposition_reads: dict[str, int] = {}
        rejected: list[dict[str, Any]] = []
        # the decomposition prompt shows no judged text; a child copied from one would come from the training texts
        shown = [t for s in train for t in (s.input, s.output, s.context or "") if t]
        aggs: list[Aggregator] = []
        for layer in range(1, self.max_layers + 1):
            if layer >= 2:
                self._grow_layer(tree, layer, importance, task=task, llm=llm,
                                 emit=emit, progress=progress, coverage=coverage, pruning=pruning,
                                 warnings=warnings, reads=decomposition_reads, shown=shown, rejected=rejected,
                                 form=form)
            nodes = tree_index(tree)
            features = [nid for nid, n in nodes.items() if n["layer"] <= layer and n.get("in_aggregator", True)]
            if layer > 1 and not any(nodes[f]["layer"] == layer for f in features):
                emit("layer_empty", {"layer": layer})
                break
            new = [f for f in features if f not in scores]
            scores.update(hierarchy_aware_scoring(
                train, new, tree, task=task, llm=llm, settings=settings, guidelines=self.guidelines,
                progress=progress, stage=f"layer {layer}: scoring {len(new)} criteria"))
            for f in new:
                failures[f] = sum(1 for c in scores[f] if c.missing)
                coverage[f] = 1.0 - failures[f] / len(train)
            emit("layer_scored", {"layer": layer, "criteria": new, "missing": {f: failures[f] for f in new},
                                  "reads": source_counts([c for f in new for c in scores[f]])})
            values = {f: [c.score for c in scores[f]] for f in features}
            aggs = fit_aggregator(train, values, features, aspects, kind=self.aggregator,
                                                 random_state=self.random_state)
            importance = attribution_importance(aggs, n_repeats=self.pi_repeats)
            cv = {}
            for agg in aggs:
                cv.update(_clean_corr(cross_validated_correlation(agg)))
            layers.append({"layer": layer, "features": features, "cv": cv})
            emit("aggregator_fitted", {"layer": layer, "features": len(features), "cv_target": cv.get(aspect.name),
                                       "importance": {f: round(v["importance"], 6) for f, v in importance.items()}})
        target_group = next(i for i, agg in enumerate(aggs) if aspect.name in agg.targets)
        final = aggs[target_group]
        used = list(final.features)
        n_missing = sum(failures.get(f, 0) for f in used)
        reads = source_counts([c for f in scores for c in scores[f]])
        emit("fit_done", {"nodes": len(tree["nodes"]), "features": len(used), "missing_scores": n_missing,
                          "cells": len(train) * len(used), "reads": reads, "decomposition_reads": decomposition_reads})
        warnings.extend(self._fit_warnings(final, used, failures, scores, len(train), layers, aspect.name))
        expanded = [nid for rec in pruning if rec["reason"] == "permutation importance" for nid in rec["expanded"]]
        pruned = [nid for rec in pruning if rec["reason"] == "permutation importance" for nid in rec["pruned"]]
        return Judge(method=self.name, params=self.get_params(), aspect=aspect.to_dict(), task=task.to_dict(),
                     state={"tree": tree, "aspects": [a.to_dict() for a in aspects], "criteria_form": form,
                            "aggregators": [a.to_state() for a in aggs], "target_group": target_group,
                            "features": used, "train_ids": [s.id for s in train],
                            "importance": importance, "layers": layers, "missing_scores": failures,
                            "coverage": {f: round(c, 4) for f, c in coverage.items()},
                            "pruning": pruning, "expanded_nodes": expanded, "pruned_nodes": pruned,
                            "reads": reads, "decomposition_reads": decomposition_reads, "warnings": warnings,
                            "rejected": rejected, "flagged": flagged_nodes(tree)})

    @staticmethod
    def _fit_warnings(final: Aggregator, used: Sequence[str], failures: dict[str, int],
                      scores: dict[str, list[CriterionScore]], n_train: int, layers: Sequence[dict[str, Any]],
                      target: str) -> list[dict[str, Any]]:
        """What the run summary must say about the fitted judge (besides per-node ``no_children``)."""
        out = []
        imputed = sum(failures.get(f, 0) for f in used)
        if imputed:
            out.append(judge_warning(
                "imputed_criteria", f"{imputed} of {n_train * len(used)} training criterion scores were missing "
                "and filled with the criterion's training mean for the aggregator", imputed))
        if final.dropped:
            out.append(judge_warning(
                "criteria_dropped", "no training item has a score for " + ", ".join(final.dropped)
                + "; these criteria are not inputs of the aggregator", len(final.dropped)))
        alternatives = sum(1 for f in scores for c in scores[f] if c.from_alternatives)
        if alternatives:
            out.append(judge_warning(
                "scores_from_alternatives", f"{alternatives} training criterion scores were read from the "
                "alternatives of a reply that gave no number", alternatives))
        cv = (layers[-1]["cv"].get(target) or {}).get("pearson") if layers else None
        if cv is None or not cv > 0:
            out.append(judge_warning(
                "not_aligned", f"the aggregator's out-of-fold training Pearson for {target!r} is "
                + ("undefined (too few items or constant predictions)" if cv is None else f"{cv:.2f}")
                + ": it does not agree with the humans on the training items"))
        return out

    def _grow_layer(self, tree: dict[str, Any], layer: int, importance: dict[str, dict[str, float]], *,
                    task: TaskInfo, llm: LLM, emit: EventSink, progress: Progress | None,
                    coverage: dict[str, float], pruning: list[dict[str, Any]], warnings: list[dict[str, Any]],
                    reads: dict[str, int], shown: Sequence[str] = (),
                    rejected: list[dict[str, Any]] | None = None, form: str = "paper") -> None:
        """Lines 2-6 of Algorithm 1: choose C_D^layer and decompose each chosen node.

        Coverage-aware choice: a criterion scored on fewer than
        :data:`~judge_engine.metrics.MIN_SELECTION_COVERAGE` of the training
        items is not eligible for decomposition by importance (its importance
        is measured mostly on imputed means); if fewer than ``k_expand`` are
        eligible, fewer are decomposed. The sign of a criterion's correlation
        does not matter here: the aggregator learns its weight, so an
        anti-correlated criterion can be informative. What was kept and pruned
        is appended to ``pruning``. Children the rubric checks refuse (a copy
        of a training text in ``shown``, a near-duplicate of a sibling or an
        existing node, empty, repetitive, over-long, no quality named) are not
        added; they are appended to ``rejected``. ``form`` is the resolved
        ``criteria_form`` every decomposition asks in.
        """
        nodes = tree_index(tree)
        candidates = [nid for nid, n in nodes.items() if n["layer"] == layer - 1]
        marked = [c for c in candidates if nodes[c].get("expand") or nodes[c].get("redecompose")]
        ineligible: list[str] = []
        if layer == 2:
            chosen = candidates  # App. C.2: every human aspect is decomposed
            reason = "all layer-1 aspects"
        elif marked:
            chosen = marked
            reason = "marked by a person"
        elif any(n["layer"] == layer for n in nodes.values()):
            chosen = [c for c in candidates if nodes[c].get("decomposed")]
            reason = "kept from the given tree"
        else:
            active = [c for c in candidates if nodes[c].get("in_aggregator", True)]
            ineligible = [c for c in active if coverage.get(c, 0.0) < MIN_SELECTION_COVERAGE]
            chosen = prune_by_attribution([c for c in active if c not in ineligible], importance, self.k_expand)
            reason = "permutation importance"
            if active and not chosen:
                warnings.append(judge_warning(
                    "no_expansion", f"layer {layer}: no layer-{layer - 1} criterion was scored on at least "
                    f"{MIN_SELECTION_COVERAGE:.0%} of the training items, so none was decomposed further",
                    len(ineligible)))
        record = {"layer": layer, "reason": reason, "expanded": list(chosen),
                  "pruned": [c for c in candidates if c not in chosen], "ineligible": ineligible,
                  "candidates": {c: {"importance": _finite(importance.get(c, {}).get("importance")),
                                     "coverage": _finite(coverage.get(c)),
                                     "in_aggregator": bool(nodes[c].get("in_aggregator", True))}
                                 for c in candidates}}
        pruning.append(record)
        emit("expansion_chosen", {"layer": layer, "chosen": chosen, "reason": reason, "pruned": record["pruned"],
                                  "ineligible": ineligible, "candidates": record["candidates"],
                                  "min_coverage": MIN_SELECTION_COVERAGE})
        for i, nid in enumerate(chosen):
            node = nodes[nid]
            if node.get("decomposed") and not node.get("redecompose"):
                continue
            if progress:
                progress(i, len(chosen), f"layer {layer}: decomposing")
            if node.get("redecompose"):
                removed = remove_llm_children(tree, nid)
                emit("children_replaced", {"parent": nid, "removed": removed})
            guideline = guideline_for(self.guidelines, root_aspect(nodes, nid))
            dec = decompose_criteria(node, task=task, k=self.k_child, llm=llm,
                                     guideline=guideline, max_tokens=self.decompose_max_tokens, shown=shown,
                                     existing=[child_text(n) for n in tree["nodes"]],
                                     taken=[n["name"] for n in tree["nodes"]], form=form)
            reads[dec.read] = reads.get(dec.read, 0) + 1
            for refused in dec.rejected:
                emit("rubric_rejected", refused)
            if rejected is not None:
                rejected.extend(dec.rejected)
            ids = add_children(tree, nid, dec.children)
            for n in tree["nodes"]:
                if n["id"] == nid:
                    n["expand"], n["redecompose"] = False, 0
            if not ids:
                warnings.append(judge_warning(
                    "no_children", f"the decomposition of {node['name']!r} ({nid}) gave no usable children "
                    f"(after {DECOMPOSE_DRAWS} draws" + (f"; {len(dec.rejected)} refused by the rubric checks"
                                                  if dec.rejected else "") + "); it stays a leaf"
                    + small_model_hint(form)))
            emit("decomposed", {"layer": layer, "parent": nid, "children": ids, "parsed": bool(dec.children),
                                "read": dec.read, "follow_up": dec.follow_up, "raw": dec.raw[:2000],
                                "rejected": len(dec.rejected)})

    def estimate_calls(self, n_train: int, n_test: int, *, n_aspects: int | None = None) -> dict[str, int]:
        """Upper bound on the LLM calls of a fit and of scoring (before cache hits).

        Decomposition calls (each with its :data:`DECOMPOSE_DRAWS` possible
        draws, in either ``criteria_form``) plus one call per (sample, criterion), each counted with its
        possible follow-up turn (a score reply without a score), so the real
        count is at most this and about half of it when replies parse.

        The number of layer-1 aspects: ``n_aspects`` when given (a run knows
        its dataset's aspects), else the ``aspects`` parameter, else
        :data:`DEFAULT_N_ASPECTS` (the most of any built-in benchmark; a custom
        dataset with more aspects must pass ``n_aspects``). With a given tree,
        its nodes count as they stand, aspects not in it are added, and every
        decomposition the fit may do adds ``k_child`` nodes: layer 2 for every
        undecomposed (or re-decomposed) aspect, deeper layers for the nodes a
        person marked, else ``k_expand`` nodes chosen by importance. With
        ``n_aspects`` and a tree, the tree's layer-1 nodes are taken to be
        among those aspects (a tree from an earlier run on the same dataset).
        """
        k, top = self.k_child, self.max_layers
        nodes = tree_index(self.criteria_tree) if self.criteria_tree else {}
        tree_l1 = {nid for nid, n in nodes.items() if n["layer"] == 1}
        if n_aspects is not None:
            added = max(0, int(n_aspects) - len(tree_l1))
        elif self.aspects:
            added = len(set(self.aspects) - tree_l1)
        else:
            added = max(0, DEFAULT_N_ASPECTS - len(tree_l1))
        active = [0] * (top + 2)   # existing nodes that are aggregator inputs, by layer
        exists = [0] * (top + 2)   # existing nodes, by layer
        for n in nodes.values():
            if n["layer"] <= top + 1:
                exists[n["layer"]] += 1
                active[n["layer"]] += bool(n.get("in_aggregator", True))
        active[1] += added
        exists[1] += added
        new = [0] * (top + 2)
        decompositions = 0
        for layer in range(2, top + 1):
            parents = [n for n in nodes.values() if n["layer"] == layer - 1]
            marked = [n for n in parents if n.get("expand") or n.get("redecompose")]
            if layer == 2:
                d = added + sum(1 for n in parents if not n.get("decomposed") or n.get("redecompose"))
            elif marked:
                d = sum(1 for n in marked if not n.get("decomposed") or n.get("redecompose"))
            elif exists[layer]:
                d = 0
            else:
                d = min(self.k_expand, active[layer - 1] + new[layer - 1])
            new[layer] = d * k
            decompositions += d
        m = sum(active[1:top + 1]) + sum(new)
        return {"fit": DECOMPOSE_DRAWS * decompositions + estimate_criteria_calls(n_train, m, follow_ups=True),
                "score": estimate_criteria_calls(n_test, m, follow_ups=True)}

    @classmethod
    def score_with(cls, judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                   progress: Progress | None = None) -> list[Verdict]:
        p, state, aspect = judge.params, judge.state, judge.aspect_record
        agg = Aggregator.from_state(state["aggregators"][state["target_group"]])
        limit = float(p.get("max_imputed_fraction", 0.5))
        scores = hierarchy_aware_scoring(samples, agg.features, state["tree"], task=judge.task_info, llm=llm,
                                         settings=scoring_settings(p), guidelines=p.get("guidelines"),
                                         progress=progress)
        return [cls._verdict(sample, {f: scores[f][i] for f in agg.features}, agg, aspect, limit)
                for i, sample in enumerate(samples)]

    @staticmethod
    def _verdict(sample: Sample, cells: dict[str, CriterionScore], agg: Aggregator, aspect: Aspect,
                 max_imputed_fraction: float) -> Verdict:
        """One item's verdict: the aggregator's prediction, or missing when too many criteria were imputed."""
        row = {f: c.score for f, c in cells.items()}
        missing = [f for f, v in row.items() if math.isnan(v)]
        n = len(agg.features)
        sources = source_counts(list(cells.values()))
        alternatives = sources.get("logprobs_first_position", 0)
        meta: dict[str, Any] = {"missing_criteria": missing, "imputed_criteria": len(missing), "n_criteria": n,
                                "criteria_sources": sources, "alternatives_criteria": alternatives}
        raw = "\n".join(f"{f}: {c.raw}" for f, c in cells.items())
        if not n or len(missing) == n or len(missing) > max_imputed_fraction * n:
            # no prediction: it would mostly (or wholly) restate training means, never a made-up number
            meta["source"] = "missing"
            meta["missing_reason"] = (f"{len(missing)} of {n} criteria imputed (at most "
                                      f"{max_imputed_fraction:.0%} allowed)" if n else "no criterion to score")
            return Verdict(sample_id=sample.id, aspect=aspect.name, score=math.nan, criteria=row, raw=raw[:4000],
                           metadata=meta)
        pred = agg.predict_rows([row])[0]
        meta["predictions"] = {t: round(v, 6) for t, v in pred.items()}
        read = {k: v for k, v in sources.items() if k != "missing"}
        # flagged when any criterion was read from alternatives; else the way most criteria were read
        meta["source"] = "logprobs_first_position" if alternatives else max(read, key=read.get)
        score = float(min(max(pred[aspect.name], aspect.low), aspect.high))
        return Verdict(sample_id=sample.id, aspect=aspect.name, score=score, criteria=row, raw=raw[:4000],
                       metadata=meta)


# ---- human in the loop: the tree of a run as curated items ----------------------------------------
# Every node of a run's tree is one curated item of the run (see judge_engine.curation): name and
# definition in their fields, everything else about the node (parent, provenance, flags, deletion) as
# JSON in ``status``, so each edit keeps the node's full previous state in its history and in the audit
# log, and undo restores it.

NODE_FLAGS = ("parent", "origin", "edited", "in_aggregator", "expand", "redecompose", "decomposed", "deleted")


def tree_owner(run_id: int) -> str:
    return curation.owner("hd_eval", run_id)


def _status(node: dict[str, Any]) -> str:
    defaults = make_node("", "", "", None, origin="llm", deleted=False)
    return json.dumps({k: node.get(k, defaults[k]) for k in NODE_FLAGS}, sort_keys=True)


def seed_tree(store: Any, run_id: int, tree: dict[str, Any]) -> bool:
    """Store the run's fitted tree as editable items once; False if they already exist."""
    return curation.seed(store, tree_owner(run_id), [
        {"key": node["id"], "name": node["name"], "definition": node.get("definition", ""),
         "status": _status(node), "parent": node.get("parent")} for node in tree["nodes"]])


def load_tree(store: Any, run_id: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The run's tree as people edited it (deleted nodes included, flagged) and each node's version."""
    nodes, versions = [], {}
    for item in curation.items(store, tree_owner(run_id)):
        flags = json.loads(item.status) if item.status.startswith("{") else {}
        nodes.append({**make_node(item.key, item.name, item.definition, None, origin="llm", deleted=False),
                      **flags, "id": item.key, "name": item.name, "definition": item.definition})
        versions[item.key] = item.version
    return {"nodes": nodes}, versions


def edit_node(store: Any, run_id: int, node_id: str, *, expected_version: int, actor: str = "user",
              **changes: Any) -> int:
    """Change one node (name, definition, or any of NODE_FLAGS); versioned and audited.

    Raises :class:`~judge_engine.store.EditConflict` when someone else saved
    the node since ``expected_version`` was read, and ValueError for a move
    that would put a node under itself.
    """
    tree, _ = load_tree(store, run_id)
    nodes = {n["id"]: n for n in tree["nodes"]}
    node = dict(nodes[node_id])
    if "parent" in changes and changes["parent"] is not None:
        ancestor = changes["parent"]
        while ancestor is not None:
            if ancestor == node_id:
                raise ValueError(f"cannot move {node['name']!r} under itself or its own descendant")
            ancestor = nodes[ancestor].get("parent")
        if node.get("parent") is None:
            raise ValueError("a layer-1 node is a human aspect; it cannot be moved")
    if ("name" in changes or "definition" in changes) and node.get("origin") != "human":
        changes.setdefault("edited", True)
    node.update(changes)
    return curation.save(store, tree_owner(run_id), node_id, expected_version=expected_version, actor=actor,
                         name=node["name"], definition=node.get("definition", ""), status=_status(node),
                         parent=node.get("parent"))


def add_node(store: Any, run_id: int, parent_id: str, name: str, definition: str, *, actor: str = "user") -> str:
    """A person adds a child under ``parent_id``; returns its id."""
    tree, _ = load_tree(store, run_id)
    ids = {n["id"] for n in tree["nodes"]}
    base = f"{parent_id}/{_slug(name)}"
    nid, i = base, 2
    while nid in ids:
        nid, i = f"{base}-{i}", i + 1
    node = make_node(nid, name.strip(), definition.strip(), parent_id, origin="human", deleted=False)
    curation.add(store, tree_owner(run_id), nid, name=node["name"], definition=node["definition"],
                 status=_status(node), parent=parent_id, actor=actor)
    return nid


def undo_node(store: Any, run_id: int, node_id: str, *, expected_version: int, actor: str = "user") -> int:
    """Restore the node's previous version (a new version; the undo itself is audited)."""
    return curation.undo(store, tree_owner(run_id), node_id, expected_version=expected_version, actor=actor)


def next_round_tree(tree: dict[str, Any]) -> dict[str, Any]:
    """The ``criteria_tree`` parameter of the next run: deleted nodes and their subtrees left out."""
    nodes = {n["id"]: n for n in tree["nodes"]}
    gone = {nid for nid, n in nodes.items() if n.get("deleted")}
    changed = True
    while changed:
        more = {nid for nid, n in nodes.items() if n.get("parent") in gone and nid not in gone}
        changed, gone = bool(more), gone | more
    return {"nodes": [{k: v for k, v in n.items() if k != "deleted"} for n in tree["nodes"] if n["id"] not in gone]}


def refit_preview(judge: Judge, tree: dict[str, Any]) -> dict[str, Any]:
    """Refit the aggregator on the training scores the run already has, with the edited tree's features.

    Deleted nodes and nodes removed from the aggregator leave it; edited and
    added nodes have no scores yet (the next round scores them) and are
    listed as ``pending``. Returns the out-of-fold training correlations of
    the target aspect before and after, so a person sees what an edit did.
    """
    state = judge.state
    agg = Aggregator.from_state(state["aggregators"][state["target_group"]])
    kept_tree = {n["id"]: n for n in next_round_tree(tree)["nodes"]}
    fitted = {n["id"]: n for n in state["tree"]["nodes"]}
    same = [f for f in agg.features if f in kept_tree and kept_tree[f].get("in_aggregator", True)
            and (kept_tree[f]["name"], kept_tree[f]["definition"], kept_tree[f].get("parent"))
            == (fitted[f]["name"], fitted[f]["definition"], fitted[f].get("parent"))]
    unchanged = [nid for nid, n in kept_tree.items() if nid in fitted
                 and (n["name"], n["definition"], n.get("parent"))
                 == (fitted[nid]["name"], fitted[nid]["definition"], fitted[nid].get("parent"))]
    pending = [nid for nid, n in kept_tree.items() if n.get("in_aggregator", True) and nid not in unchanged]
    target = judge.aspect["name"]
    before = cross_validated_correlation(agg).get(target, {})
    cols = [agg.features.index(f) for f in same]
    after_agg = Aggregator.fit(agg.x[:, cols], agg.y, kind=agg.kind, features=same, targets=agg.targets,
                               random_state=agg.random_state)
    after = cross_validated_correlation(after_agg).get(target, {})
    return {"before": {k: _finite(v) for k, v in before.items()}, "after": {k: _finite(v) for k, v in after.items()},
            "features": same, "pending": sorted(set(pending)),
            "removed": [f for f in agg.features if f not in same and f not in pending]}


def node_summary(judge: Judge, node_id: str) -> dict[str, Any] | None:
    """A node's training scores, their correlation with the human target and its attribution (None if unscored)."""
    state = judge.state
    agg = Aggregator.from_state(state["aggregators"][state["target_group"]])
    if node_id not in agg.features:
        return None
    column = agg.x[:, agg.features.index(node_id)]
    human = agg.y[:, agg.targets.index(judge.aspect["name"])]
    corr = correlations(human.tolist(), column.tolist())
    imp = state.get("importance", {}).get(node_id, {})
    return {"scores": column.tolist(), "correlation": {k: _finite(v) for k, v in corr.items()},
            "importance": imp.get("importance"), "importance_std": imp.get("std"),
            "missing": (state.get("missing_scores") or {}).get(node_id, 0)}
