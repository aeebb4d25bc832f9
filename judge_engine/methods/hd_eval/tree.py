"""The criteria tree of HD-Eval (Liu et al., 2024, §2.1, App. C.2): nodes, layers, layer-1 aspects.

The tree is a JSON-native dict ``{"nodes": [node, ...]}``; each node has
``id`` (``aspect`` for layer 1, ``parent-id/slug`` below: the slug of the
name, or of the ``abbrev`` a free-text reply gave), ``name``, ``definition``,
``parent`` (id or None), ``origin`` (``aspect`` | ``llm`` | ``human``),
``edited``, ``in_aggregator`` (False = pruned from the aggregator's input),
``expand`` (a person asks to decompose it), ``redecompose`` (a counter: raise it to ask the LLM for a fresh
decomposition) and ``decomposed`` (its children were already proposed).
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, Sequence

from ... import data
from ...records import Aspect, Sample


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



class TrainingAspects(NamedTuple):
    """The layer-1 aspects of a fit and the training items scored on all of them."""

    train: list[Sample]
    """Training items with a finite human score on every layer-1 aspect (the aggregator's targets)."""
    aspects: list[Aspect]
    """The layer-1 aspect records, the judged aspect among them (:func:`known_aspects`)."""


def layer1_aspects(train: Sequence[Sample], target: Aspect, chosen: Sequence[str] | None,
                   dataset_aspects: Sequence[Aspect] | None = None) -> TrainingAspects:
    """App. C.2: layer 1 is the human aspects, ``chosen`` or else every aspect all training items carry,
    with the judged aspect first when it was not chosen.

    Raises ValueError when fewer than 2 training items are scored on every
    one of them: the aggregator trains on those scores.
    """
    names = list(chosen) if chosen else sorted(
        set.intersection(*(set(s.human) for s in train)) if train else {target.name})
    if target.name not in names:
        names.insert(0, target.name)
    train = [s for s in train if all(_scored(s.human.get(n)) for n in names)]
    if len(train) < 2:
        raise ValueError(f"HD-Eval trains its aggregator on human scores: it needs at least 2 training samples "
                         f"scored on every layer-1 aspect ({', '.join(names)}); got {len(train)}")
    return TrainingAspects(train, known_aspects(target, names, train, dataset_aspects))


def _scored(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
