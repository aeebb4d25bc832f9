"""Human in the loop (the paper's future work): the tree of a run as curated items.

Every edit of a node is versioned and attributed (:mod:`judge_engine.curation`),
the edited tree is the ``criteria_tree`` of the next round
(:func:`next_round_tree`), and :func:`refit_preview` / :func:`node_summary`
show what an edit did to the aggregator on the training scores the run has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NamedTuple

from ... import curation
from ...aggregate import Aggregator, cross_validated_correlation
from ...metrics import correlations
from ..base import Judge
from .aggregation import _finite
from .state import HDEvalState
from .tree import _slug, make_node

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


class EditableTree(NamedTuple):
    """A run's tree as people edited it, with the version of each node an edit is checked against."""

    tree: dict[str, Any]
    """``{"nodes": [...]}``: every node, deleted ones included with ``deleted: True``."""
    versions: dict[str, int]
    """Node id -> its current version (:func:`edit_node` and :func:`undo_node` take the one the person saw)."""


def load_tree(store: Any, run_id: int) -> EditableTree:
    """The run's tree as people edited it (deleted nodes included, flagged) and each node's version."""
    nodes, versions = [], {}
    for item in curation.items(store, tree_owner(run_id)):
        flags = json.loads(item.status) if item.status.startswith("{") else {}
        nodes.append({**make_node(item.key, item.name, item.definition, None, origin="llm", deleted=False),
                      **flags, "id": item.key, "name": item.name, "definition": item.definition})
        versions[item.key] = item.version
    return EditableTree({"nodes": nodes}, versions)


def edit_node(store: Any, run_id: int, node_id: str, *, expected_version: int, actor: str = "user",
              **changes: Any) -> int:
    """Change one node (name, definition, or any of NODE_FLAGS); versioned and audited.

    Raises :class:`~judge_engine.store.EditConflict` when someone else saved
    the node since ``expected_version`` was read, and ValueError for a move
    that would put a node under itself.
    """
    tree = load_tree(store, run_id).tree
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
    tree = load_tree(store, run_id).tree
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


@dataclass(frozen=True)
class RefitPreview:
    """What the edits of a tree do to the aggregator, on the training scores the run already has."""

    before: dict[str, float | None]
    """Out-of-fold training correlations of the target aspect (``pearson``, ``spearman``, ...) as fitted."""
    after: dict[str, float | None]
    """The same, refit on the features the edited tree keeps."""
    features: list[str]
    """Nodes the refit uses: scored, unchanged and still feeding the aggregator."""
    pending: list[str]
    """Nodes the next round must score first (edited, moved or added)."""
    removed: list[str]
    """Fitted features the edits took out of the aggregator."""


def _text(node: dict[str, Any]) -> tuple[Any, ...]:
    return node["name"], node.get("definition", ""), node.get("parent")


def stale_nodes(judge: Judge, tree: dict[str, Any]) -> set[str]:
    """Nodes of the edited ``tree`` whose fitted figures (importance, coverage, training scores) describe another
    text: edited (name, definition or parent) or added since the fit. Their figures are pending until a round
    scores them (issue 62 item 4: never the old value beside the new text)."""
    fitted = HDEvalState.from_judge(judge).fitted_nodes
    return {n["id"] for n in next_round_tree(tree)["nodes"]
            if n["id"] not in fitted or _text(n) != _text(fitted[n["id"]])}


def scored_by(runs: Any, run_id: int, node: dict[str, Any]) -> Any:
    """The newest HD-Eval run after ``run_id`` (``runs``: run records, newest first) whose tree holds ``node`` as
    edited, i.e. the round that scores it (None when no such round was started)."""
    for r in runs:
        if r.method != "hd_eval" or r.id <= run_id:
            continue
        for n in (r.params.get("criteria_tree") or {}).get("nodes", ()):
            if n.get("id") == node["id"] and _text(n) == _text(node):
                return r
    return None


def _fitted_cv(state: HDEvalState, agg: Aggregator, target: str) -> dict[str, float | None]:
    """The fitted aggregator's out-of-fold correlations of ``target``: the ones its last layer recorded when that
    layer's inputs are the aggregator's (an MLP's folds refitted on every page of a new round were seconds), else
    computed again."""
    last = state.layers[-1] if state.layers else {}
    stored = (last.get("cv") or {}).get(target)
    if stored is not None and list(last.get("features") or ()) == list(agg.features):
        return dict(stored)
    return cross_validated_correlation(agg).get(target, {})


def refit_preview(judge: Judge, tree: dict[str, Any]) -> RefitPreview:
    """Refit the aggregator on the training scores the run already has, with the edited tree's features.

    Deleted nodes and nodes removed from the aggregator leave it; edited and
    added nodes have no scores yet (the next round scores them) and are
    listed as ``pending``. Returns the out-of-fold training correlations of
    the target aspect before and after, so a person sees what an edit did.
    """
    state = HDEvalState.from_judge(judge)
    agg = state.target_aggregator()
    kept_tree = {n["id"]: n for n in next_round_tree(tree)["nodes"]}
    fitted = state.fitted_nodes
    same = [f for f in agg.features if f in kept_tree and kept_tree[f].get("in_aggregator", True)
            and (kept_tree[f]["name"], kept_tree[f]["definition"], kept_tree[f].get("parent"))
            == (fitted[f]["name"], fitted[f]["definition"], fitted[f].get("parent"))]
    unchanged = [nid for nid, n in kept_tree.items() if nid in fitted
                 and (n["name"], n["definition"], n.get("parent"))
                 == (fitted[nid]["name"], fitted[nid]["definition"], fitted[nid].get("parent"))]
    pending = [nid for nid, n in kept_tree.items() if n.get("in_aggregator", True) and nid not in unchanged]
    target = judge.aspect["name"]
    before = _fitted_cv(state, agg, target)
    if same == list(agg.features):  # no edit changed the inputs: the refit is the fit (an MLP's folds cost seconds)
        after = before
    else:
        cols = [agg.features.index(f) for f in same]
        after_agg = Aggregator.fit(agg.x[:, cols], agg.y, kind=agg.kind, features=same, targets=agg.targets,
                                   random_state=agg.random_state)
        after = cross_validated_correlation(after_agg).get(target, {})
    return RefitPreview(before={k: _finite(v) for k, v in before.items()},
                        after={k: _finite(v) for k, v in after.items()}, features=same,
                        pending=sorted(set(pending)),
                        removed=[f for f in agg.features if f not in same and f not in pending])


@dataclass(frozen=True)
class NodeSummary:
    """One node of the fitted tree up close: its training scores and what they are worth."""

    scores: list[float]
    """Its training scores as the aggregator took them (imputed where the reply gave none)."""
    correlation: dict[str, float | None]
    """Correlations of those scores with the human scores of the target aspect (None: undefined)."""
    importance: float | None
    """Its permutation importance in the last aggregator (None: not measured)."""
    importance_std: float | None
    """The spread of that importance over the repeats."""
    missing: int
    """Training items whose reply gave no score (imputed)."""


def node_summary(judge: Judge, node_id: str) -> NodeSummary | None:
    """A node's training scores, their correlation with the human target and its attribution (None if unscored)."""
    state = HDEvalState.from_judge(judge)
    agg = state.target_aggregator()
    if node_id not in agg.features:
        return None
    column = agg.x[:, agg.features.index(node_id)]
    human = agg.y[:, agg.targets.index(judge.aspect["name"])]
    corr = correlations(human.tolist(), column.tolist())
    imp = state.importance.get(node_id, {})
    return NodeSummary(scores=column.tolist(), correlation={k: _finite(v) for k, v in corr.items()},
                       importance=imp.get("importance"), importance_std=imp.get("std"),
                       missing=state.missing_scores.get(node_id, 0))
