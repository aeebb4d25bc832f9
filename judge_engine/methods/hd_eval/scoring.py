"""Hierarchy-aware scoring (HD-Eval §2.1, App. G.2): every sample scored 1-5 on each criterion, its parent named.

Through the shared :mod:`judge_engine.criteria_scoring` (instructions in
``prompts/hd_eval_score.txt``; the parent is the "aspect" of the prompt;
score first, short output).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...criteria_scoring import CriteriaJob, CriterionScore, CriterionText, score_criteria_jobs
from ...llm import LLM
from ...prompting import TaskInfo, load_template
from ...records import Aspect, Sample
from ..base import Progress
from .settings import HDEvalSettings
from .tree import root_aspect, tree_index

SCORE_TEMPLATE = load_template("hd_eval_score")

ROOT_NAME = "overall quality"
"""Parent named in the prompt of a layer-1 node (ours: the prompts of App. G.2 name a parent; an aspect has none)."""
CRITERION_SCALE = (1, 5)
"""Every criterion is scored 1-5 (paper App. G.2)."""
@dataclass(frozen=True)
class _PromptGroup:
    """Criteria scored under one set of instructions: the parent named in them (the prompt's aspect)."""

    parent: Aspect
    guideline: str
    criteria: list[CriterionText]


def _plain(nodes: dict[str, Any], nid: str) -> CriterionText:
    return CriterionText(nid, nodes[nid]["name"], nodes[nid]["definition"] or nodes[nid]["name"])


def _with_parent(nodes: dict[str, Any], nid: str, settings: HDEvalSettings) -> CriterionText:
    """A node's criterion text carrying what the paper's prompt says before it: its parent, and the expert
    guideline of its aspect."""
    node = nodes[nid]
    parent = nodes[node["parent"]]
    guideline = settings.guideline(root_aspect(nodes, nid))
    own = (node["definition"] or node["name"]).strip()
    whole = (parent["definition"] or parent["name"]).strip().rstrip(".")
    definition = (f"{own if own.endswith(('.', '!', '?')) else own + '.'} It is one part of judging "
                  f"{parent['name']}: {whole}." + (f" Expert guidance for this aspect: {guideline}" if guideline else ""))
    return CriterionText(nid, node["name"], definition)


def _prompt_groups(nodes: dict[str, Any], node_ids: Sequence[str], task: TaskInfo,
                   settings: HDEvalSettings) -> list[_PromptGroup]:
    """The nodes grouped by the instructions they are scored under: by parent (the paper), except that in
    the sample-first layout every node below layer 1 is scored under the root's, its parent in its text."""
    root = Aspect(ROOT_NAME, *map(float, CRITERION_SCALE), f"the overall quality of the {task.output_label.lower()}")
    by_parent: dict[str | None, list[str]] = {}
    for nid in node_ids:
        by_parent.setdefault(nodes[nid].get("parent"), []).append(nid)
    groups = []
    below: list[CriterionText] = []
    for parent_id, children in by_parent.items():
        if parent_id is not None and settings.scoring.layout == "sample_first":
            # The sample-first layout puts the instructions and the aspect before the sample. Naming each parent
            # there made every parent's criteria read the sample again (on the embedded model 2.2 s a call
            # against 0.4 s for a further criterion of the same parent); below layer 1 the parent goes with the
            # criterion, after the sample, and every criterion of an item shares the prompt up to it.
            below += [_with_parent(nodes, nid, settings) for nid in children]
            continue
        p = nodes.get(parent_id) if parent_id is not None else None
        parent = root if p is None else Aspect(p["name"], *map(float, CRITERION_SCALE), p["definition"] or p["name"])
        groups.append(_PromptGroup(parent, settings.guideline(root_aspect(nodes, children[0])),
                                   [_plain(nodes, nid) for nid in children]))
    if below:
        groups.append(_PromptGroup(root, "", below))
    return groups


def hierarchy_aware_scoring(samples: Sequence[Sample], node_ids: Sequence[str], tree: dict[str, Any], *,
                            task: TaskInfo, llm: LLM, settings: HDEvalSettings,
                            progress: Progress | None = None,
                            stage: str = "scoring") -> dict[str, list[CriterionScore]]:
    """App. G.2: score every sample on each node with a prompt naming the node's parent (1-5).

    ``settings`` are the judge's: how a score is asked for and read (:attr:`HDEvalSettings.scoring`) and the
    expert guideline of each node's aspect.

    Grouped by parent (:func:`_prompt_groups`): the parent is the prompt's aspect, the node its
    criterion; every group's calls are sent in one batch (:func:`score_criteria_jobs`). Returns node id -> one :class:`CriterionScore` per sample
    (NaN where the reply and its one follow-up had no score).
    """
    nodes = tree_index(tree)
    groups = _prompt_groups(nodes, node_ids, task, settings)
    total = len(samples) * len(node_ids)

    def step(d: int, t: int) -> None:  # first replies of all groups (per sample, not per node, when joint)
        if progress and t:
            progress(min(total, d * total // t), total, stage)

    # the groups of a layer do not depend on each other: their calls go out in one batch (issue 46)
    jobs = [CriteriaJob(samples, group.criteria, SCORE_TEMPLATE.render(
        parent_name=group.parent.name, output_label_lower=task.output_label.lower(), task=task.task,
        guideline=f" Expert guidance for this aspect: {group.guideline}" if group.guideline else ""), group.parent)
        for group in groups]
    out: dict[str, list[CriterionScore]] = {}
    for group, results in zip(groups, score_criteria_jobs(jobs, task=task, llm=llm, settings=settings.scoring,
                                                           progress=step)):
        for c in group.criteria:
            out[c.key] = [r[c.key] for r in results]
    return out
