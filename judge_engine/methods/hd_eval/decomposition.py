"""Hierarchical criteria decomposition (HD-Eval §2.1, Eq. 1, App. G.1): the LLM proposes sub-criteria.

Two forms (the ``criteria_form`` parameter). The paper's: named children
with definitions (prompt ``prompts/hd_eval_decompose_named.txt``, schema
:func:`decomposition_schema`). The sentence form, for small models:
sentences that start "A good <output>" under a grammar, each a child whose
name is taken from its sentence (prompt ``prompts/hd_eval_decompose.txt``,
schema :func:`statement_schema`). :func:`parse_decomposition` is the
free-text fallback of both, and a reply with fewer than 2 usable children
gets up to ``DECOMPOSE_DRAWS - 1`` more sampled draws.

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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from ... import structured as st
from ...llm import LLM, GenerationParams, Request
from ...parsing import parse_json_object
from ...prompting import TaskInfo, load_template
from ...rubric_model_check import check_with_model, runs_on
from ...rubric_checks import RubricCheck, check_criterion, check_statement, name_key, statement_name
from ..base import EventSink, Progress, judge_warning, small_model_hint
from .settings import HDEvalSettings
from .tree import add_children, remove_llm_children, root_aspect, tree_index

DECOMPOSE_NAMED_TEMPLATE = load_template("hd_eval_decompose_named")
"""The decomposition prompt of the paper's form: named children with definitions (App. G.1)."""
DECOMPOSE_TEMPLATE = load_template("hd_eval_decompose")
"""The decomposition prompt of the sentence form, for small models: sentences that start with the opener."""
REDECOMPOSE_TEMPERATURE = 0.7
"""A requested re-decomposition samples a new draw instead of replaying the cached greedy one."""
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


class ReadChildren(NamedTuple):
    """The children read from one decomposition reply, and how."""

    children: list[dict[str, str]]
    """At most ``k`` children (name, abbrev, definition; ``statement: True`` when read from a sentence)."""
    read: str
    """``json`` (the structured reply), ``text`` (the free-text fallback) or ``none`` (nothing usable)."""


class CheckedChildren(NamedTuple):
    """Children after the rubric checks: the accepted ones and the refused ones."""

    kept: list[dict[str, Any]]
    """Accepted children, with the checks' ``flags`` when they raised any."""
    refused: list[dict[str, Any]]
    """Refused children: the check's text, rule and reason with the child's name and definition."""


def read_decomposition(text: str, k: int, opener: str = "") -> ReadChildren:
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
            return ReadChildren(_dedupe([_statement_child(c, opener) for c in got.value["children"]], k), "json")
        found = st.find_statements(text, opener)
        if found:
            return ReadChildren(_dedupe([_statement_child(opener + f[len(opener):], opener) for f in found], k),
                                "text")
    got = st.read_json(text, decomposition_schema(k))
    if got.ok:
        items = [{"name": c["name"].strip(), "abbrev": "", "definition": c["definition"].strip()}
                 for c in got.value["children"] if c["name"].strip()]
        return ReadChildren(_dedupe(items, k), "json")
    children = parse_decomposition(text, k)
    return ReadChildren(children, "text" if children else "none")


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
                   opener: str = "", llm: Any = None, emit: Any = None) -> CheckedChildren:
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
    under two scores. With ``llm`` (not the embedded model) the judge's own model reads each child the rules
    accept; ``emit("model_check", ...)`` records each verdict, one it could not give with its reason.
    """
    accepted = list(existing)
    names = {name_key(n): n for n in taken}
    kept: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for child in children:
        text = child_text(child)
        if child.get("statement"):
            check = check_statement(child["definition"], opener=opener, shown=shown, accepted=accepted,
                                    parent=parent, topics=topics, output=topics[0] if topics else "")
        else:
            check = check_criterion(child["name"], child.get("definition") or "", shown=shown, accepted=accepted,
                                    parent=parent, topics=topics, output=topics[0] if topics else "")
        same = names.get(name_key(child["name"]))
        if same is None:
            # the judge's own model reads the child too (issue 65; ``llm`` given, not on the embedded model)
            check = check_with_model(llm, check, kind="criterion", aspect_name=parent[0] if parent else "",
                                     an_output=f"a {((topics[0] if topics else '') or 'response').lower()}",
                                     emit=emit)
        if same is not None and check.ok:
            check = RubricCheck(text, False, "near_duplicate", f"named like the criterion {same[:40]!r} already "
                                "in the tree")
        if check.ok:
            accepted.append(text)
            names[name_key(child["name"])] = child["name"]
            kept.append({**child, "flags": [f.to_dict() for f in check.flags]} if check.flags else child)
        else:
            refused.append({**check.to_dict(), "name": child["name"], "definition": child.get("definition", "")})
    return CheckedChildren(kept, refused)


class _Ask(NamedTuple):
    """What a decomposition of one parent sends: its first draw's request, and how its replies are read."""

    request: Request
    """The first draw's request (the greedy one, or a re-decomposition's first sampled draw)."""
    greedy: GenerationParams
    """The greedy draw's parameters; every draw is :func:`_draw` of them."""
    first: int
    """That draw's index: later draws are ``first + 1``, ... (the same prompt, sampled)."""
    opener: str
    n_ask: int


def _ask(parent: dict[str, Any], *, task: TaskInfo, k: int, guideline: str, max_tokens: int, form: str) -> _Ask:
    """The request of a decomposition's first draw: it depends on the parent alone, not on its siblings, so
    the first draws of a layer can be sent together (:func:`decompose_layer`)."""
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
    # the rubric presence penalty: without it a small model writes its first child again in the second slot;
    # max_tokens is the ceiling; the request asks for what the schema's longest reply needs (sized_max_tokens)
    params = GenerationParams(max_tokens=st.sized_max_tokens(max_tokens, schema), temperature=0.0,
                              json_schema=st.as_param(schema), presence_penalty=st.RUBRIC_PRESENCE_PENALTY)
    # a re-decomposition starts past every draw an earlier one may have made: a cached draw would replay its children
    first = int(parent.get("redecompose") or 0) * DECOMPOSE_DRAWS
    return _Ask(Request(({"role": "user", "content": prompt},), _draw(params, first)), params, first, opener, n_ask)


def _draw(params: GenerationParams, draw: int) -> GenerationParams:
    """Draw 0 is the greedy request; every other draw samples the same prompt."""
    return params.with_(temperature=REDECOMPOSE_TEMPERATURE, sample_index=draw) if draw else params


def decompose_criteria(parent: dict[str, Any], *, task: TaskInfo, k: int, llm: LLM,
                       guideline: str = "", max_tokens: int = 512, shown: Sequence[str] = (),
                       existing: Sequence[str] = (), taken: Sequence[str] = (),
                       form: str = "paper", first_reply: str | None = None, emit: Any = None) -> Decomposition:
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
    ask = _ask(parent, task=task, k=k, guideline=guideline, max_tokens=max_tokens, form=form)
    opener, n_ask, first = ask.opener, ask.n_ask, ask.first
    messages = list(ask.request.messages)
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
    for draw in range(first, first + DECOMPOSE_DRAWS):
        # the first draw's reply may have been asked for already, with its siblings' (decompose_layer)
        reply = first_reply if draw == first and first_reply is not None else \
            llm.complete(messages, _draw(ask.greedy, draw)).text
        replies.append(reply)
        found = read_decomposition(reply, n_ask, opener)
        # each draw's children are checked against the tree and the usable children of the draws before it
        checked = check_children(found.children, shown=shown, existing=[*existing, *map(child_text, children)],
                                 topics=topics, parent=own, taken=[*taken, *(c["name"] for c in children)],
                                 opener=opener, llm=llm,
                                 emit=(lambda kind, payload: emit(kind, {**payload, "parent": parent.get("id")}))
                                 if emit else None)
        said = {r["text"] for r in rejected}  # the same refused child said twice is one rejection
        stage = "decomposition" if draw == first else f"decomposition (draw {draw - first + 1})"
        rejected += [{**r, "stage": stage, "parent": parent.get("id")} for r in checked.refused
                     if r["text"] not in said]
        if how == "none" and (checked.kept or found.read != "none"):
            how = found.read  # the first reply that was read
        children = [*children, *checked.kept][:k]
        if len(children) >= min_k:
            break
    return Decomposition(tuple(children), "\n--- next draw ---\n".join(replies), how, len(replies) > 1,
                         tuple(rejected))


def flagged_nodes(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """The generated nodes used with rubric-check flags (:mod:`judge_engine.rubric_checks`), for the run summary."""
    return [{"text": child_text(n), "name": n["name"], "flags": n["flags"], "stage": "decomposition",
             "parent": n.get("parent")} for n in tree["nodes"] if n.get("flags")]




@dataclass(frozen=True)
class LayerDecomposition:
    """What decomposing the chosen criteria of one layer gave, besides the children added to the tree."""

    reads: dict[str, int]
    """Decompositions by how their reply was read (``json``, ``text``, ``none``)."""
    rejected: tuple[dict[str, Any], ...]
    """Children the rubric checks refused, each with its ``parent`` id and stage."""
    warnings: tuple[dict[str, Any], ...]
    """``no_children`` for every chosen criterion left a leaf."""


def decompose_layer(tree: dict[str, Any], chosen: Sequence[str], layer: int, settings: HDEvalSettings, *,
                    task: TaskInfo, llm: LLM, form: str, shown: Sequence[str] = (), emit: EventSink,
                    progress: Progress | None = None) -> LayerDecomposition:
    """Lines 2-6 of Algorithm 1: decompose each chosen criterion (Eq. 1) and add its children to ``tree``.

    A criterion already decomposed is skipped unless a person asked for a
    fresh decomposition (``redecompose``), which first drops its unedited
    LLM children. Children the rubric checks refuse (a copy of a training
    text in ``shown``, a near-duplicate of a sibling or an existing node,
    empty, repetitive, over-long, no quality named) are not added. ``form``
    is the resolved ``criteria_form`` every decomposition asks in.
    """
    nodes = tree_index(tree)
    reads: dict[str, int] = {}
    rejected: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    todo = [nid for nid in chosen if not nodes[nid].get("decomposed") or nodes[nid].get("redecompose")]
    # every first draw depends on its parent alone, so they go out in one batch (issue 46); what follows reads
    # them one parent after another as before, since each parent's children are checked against those
    # accepted before them, and a further draw (fewer than 2 usable children) depends on that
    # the judge's own model reads each child the rules accept (not on the embedded model): its requests count
    # in the stage's progress as they are made, beside the decompositions, and each verdict is an event
    done, read = [0], [0]  # decompositions begun, check requests made
    stage = f"layer {layer}: decomposing" + (" (the judge's own model reads each child)" if runs_on(llm) else "")

    def record(kind: str, payload: dict[str, Any]) -> None:
        read[0] += 1
        emit(kind, payload)
        if progress:
            progress(done[0] + read[0], len(chosen) + read[0], stage)

    if progress and todo:
        progress(0, len(chosen), stage)
    asks = {nid: _ask(nodes[nid], task=task, k=settings.k_child, guideline=settings.guideline(root_aspect(nodes, nid)),
                      max_tokens=settings.decompose_max_tokens, form=form) for nid in todo}
    firsts = dict(zip(todo, (c.text for c in llm.complete_many([asks[nid].request for nid in todo])))) if todo else {}
    for i, nid in enumerate(chosen):
        node = nodes[nid]
        if nid not in firsts:
            continue
        done[0] = i
        if progress:
            progress(i + read[0], len(chosen) + read[0], stage)
        if node.get("redecompose"):
            removed = remove_llm_children(tree, nid)
            emit("children_replaced", {"parent": nid, "removed": removed})
        dec = decompose_criteria(node, task=task, k=settings.k_child, llm=llm,
                                 guideline=settings.guideline(root_aspect(nodes, nid)),
                                 max_tokens=settings.decompose_max_tokens, shown=shown,
                                 existing=[child_text(n) for n in tree["nodes"]],
                                 taken=[n["name"] for n in tree["nodes"]], form=form, first_reply=firsts[nid],
                                 emit=record)
        reads[dec.read] = reads.get(dec.read, 0) + 1
        for refused in dec.rejected:
            emit("rubric_rejected", refused)
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
    return LayerDecomposition(reads, tuple(rejected), tuple(warnings))
