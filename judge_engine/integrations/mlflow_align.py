"""The four methods as MLflow alignment optimizers: ``judge.align(traces, HDEvalOptimizer(...))``.

MLflow aligns a judge (``make_judge(name=..., instructions=...)``) with the human feedback on traces through
an :class:`mlflow.genai.judges.base.AlignmentOptimizer`. :class:`HypoEvalOptimizer`, :class:`HPSSOptimizer`,
:class:`ActiveCriticOptimizer` and :class:`HDEvalOptimizer` (and :class:`DirectOptimizer`, the baseline) are
such optimizers. ``align`` reads the human assessments named like the judge from the traces (each human source
an annotator, as ``datasets import-mlflow`` reads them), saves them as a workbench dataset whose aspect is
defined by the judge's instructions, and fits the method through the one way to start a run
(:func:`judge_engine.runs.create_run` and :func:`~judge_engine.runs.execute_run`): the run is stored, cached and
shown on the Runs page like any other, its held-out items meta-evaluated. It returns a :class:`WorkbenchJudge`:
an MLflow judge that scores exactly as the fitted judge (its feedback source is the judge's fingerprint).

Importing this module needs an MLflow with the alignment API; without it, one ImportError says so.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

try:
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.genai.judges.base import AlignmentOptimizer, Judge, JudgeField
except ImportError as _missing:  # no mlflow, or one from before judges could be aligned
    raise ImportError("the MLflow alignment optimizers need an MLflow with the alignment API "
                      "(mlflow.genai.judges.base.AlignmentOptimizer; tested with MLflow 3.18): "
                      "pip install 'judge-workbench[integrations]'") from _missing
from pydantic import PrivateAttr

from ..export import ExportedJudge, model_card
from ..llm import LLM, LLMConfig, make_llm
from ..methods import Judge as FittedJudge
from ..runs import RunSpec, create_run, execute_run
from ..store import Store
from .labels import LabelImportError, labelled_dataset, value_scale
from .mlflow_scorer import SOURCE_PREFIX
from .mlflow_traces import trace_labels
from .scoring import ItemJudge


class WorkbenchJudge(Judge):
    """An MLflow judge that scores with a fitted workbench judge (what the optimizers return)."""

    _item_judge: Any = PrivateAttr(default=None)
    _instructions: str = PrivateAttr(default="")
    _run_id: int | None = PrivateAttr(default=None)

    @classmethod
    def wrap(cls, name: str, item_judge: ItemJudge, instructions: str, run_id: int | None = None) -> WorkbenchJudge:
        made = cls(name=name, description=f"Judge Workbench {item_judge.judge.method} judge ({item_judge.fingerprint})")
        made._item_judge, made._instructions, made._run_id = item_judge, instructions, run_id
        return made

    @property
    def run_id(self) -> int | None:
        """The workbench run that fitted this judge (see the Runs page)."""
        return self._run_id

    @property
    def fingerprint(self) -> str:
        return self._item_judge.fingerprint

    @property
    def instructions(self) -> str:
        return self._instructions

    @property
    def feedback_value_type(self) -> Any:
        return float

    def get_input_fields(self) -> list[JudgeField]:
        return [JudgeField(name="inputs", description="what the output answers"),
                JudgeField(name="outputs", description="the judged output")]

    def __call__(self, *, inputs: Any = None, outputs: Any = None, expectations: Any = None, trace: Any = None,
                 session: Any = None) -> Feedback:
        if trace is not None and inputs is None and outputs is None:
            inputs, outputs = trace.data.request, trace.data.response
        got = self._item_judge(inputs, outputs)
        source = AssessmentSource(source_type="LLM_JUDGE", source_id=SOURCE_PREFIX + self.fingerprint)
        metadata = {"judge_fingerprint": self.fingerprint, "method": self._item_judge.judge.method}
        if got.missing:
            return Feedback(name=self.name, value=None, error=f"no score: {got.missing_reason}", source=source,
                            rationale=got.explanation or None, metadata={**metadata, "missing_reason": got.missing_reason})
        return Feedback(name=self.name, value=got.score, source=source, rationale=got.explanation or None,
                        metadata=metadata)


class WorkbenchOptimizer(AlignmentOptimizer):
    """Fit ``method`` on the human feedback of the traces (see the module docstring).

    ``store`` is the workbench database (a :class:`~judge_engine.store.Store` or its path; default the app's),
    ``llm`` the backend (an :class:`LLMConfig` or an LLM made with :func:`make_llm`), ``params`` the method's
    parameters that differ from the paper's, ``test_fraction`` the share of items held out to meta-evaluate the
    fit, ``mapping`` and ``value_range`` the scale categorical or boolean feedback maps to.
    """

    method = ""

    def __init__(self, *, store: Store | str | Path | None = None, llm: LLMConfig | LLM | None = None,
                 params: dict[str, Any] | None = None, test_fraction: float = 0.3, seed: int = 0,
                 mapping: dict[str, float] | None = None, value_range: tuple[float, float] | None = None,
                 task: str = "", actor: str = "mlflow-align"):
        if not 0.0 < test_fraction < 1.0:
            raise ValueError(f"test_fraction must be between 0 and 1, not {test_fraction}")
        self.store = store if isinstance(store, Store) else Store(store)
        self.llm = llm if isinstance(llm, LLM) else make_llm(llm or LLMConfig(), store=self.store)
        self.params, self.test_fraction, self.seed = dict(params or {}), test_fraction, seed
        self.mapping, self.value_range, self.task, self.actor = mapping, value_range, task, actor
        self.run_id: int | None = None

    def align(self, judge: Judge, traces: list[Any]) -> WorkbenchJudge:
        read, _ = trace_labels(list(traces), judge.name)
        if not read.labels:
            raise LabelImportError(f"no trace has a human assessment named {judge.name!r} (the judge's name): "
                                   "nothing to align with")
        scale = value_scale([label.value for label in read.labels], what=f"assessment {judge.name!r}",
                            mapping=self.mapping, value_range=self.value_range)
        digest = hashlib.sha256(json.dumps(sorted((lb.item, lb.annotator, str(lb.value)) for lb in read.labels))
                                .encode("utf-8")).hexdigest()[:8]
        name = f"mlflow {judge.name} {digest}"
        dataset = labelled_dataset(name, judge.name, read.items, read.labels, scale, task=self.task,
                                   source=f"mlflow traces aligned with {judge.name!r}")
        # the MLflow judge's instructions say what the aspect is: the workbench prompts define it with them
        definition = str(getattr(judge, "instructions", "") or "")
        dataset = replace(dataset, aspects=tuple(replace(a, definition=definition) for a in dataset.aspects))
        if not self.store.has_dataset(name):  # the same traces and labels: the dataset made before is reused
            from ..data.importing import import_dataset

            import_dataset(self.store, dataset)
        n = len(dataset.samples)
        test = max(1, math.floor(n * self.test_fraction))
        if n - test < 1:
            raise LabelImportError(f"{n} labelled trace(s) are too few to fit and hold some out")
        spec = RunSpec(method=self.method, dataset=name, aspect=judge.name, params=self.params, train_size=n - test,
                       test_size=test, seed=self.seed, llm=self.llm.config)
        self.run_id = create_run(self.store, spec, actor=self.actor)
        execute_run(self.store, self.run_id, llm=self.llm)
        run = self.store.run(self.run_id)
        if run.judge is None:
            raise RuntimeError(f"run {self.run_id} ended {run.status} without a fitted judge: {run.error or ''}")
        exported = ExportedJudge(FittedJudge.from_dict(run.judge), self.llm.config, model_card(self.store, self.run_id))
        return WorkbenchJudge.wrap(judge.name, ItemJudge(exported, llm=self.llm), judge.instructions, self.run_id)


class DirectOptimizer(WorkbenchOptimizer):
    """Direct scoring (the baseline every paper compares against): nothing learned, the prompt fixed."""

    method = "direct"


class HypoEvalOptimizer(WorkbenchOptimizer):
    """HypoEval: hypotheses about what humans reward, selected by their correlation with the human scores."""

    method = "hypoeval"


class HPSSOptimizer(WorkbenchOptimizer):
    """HPSS: a prompting strategy searched for the best agreement with the human scores."""

    method = "hpss"


class ActiveCriticOptimizer(WorkbenchOptimizer):
    """Active-Critic: the task inferred from the human scores, with criteria and their weights."""

    method = "active_critic"


class HDEvalOptimizer(WorkbenchOptimizer):
    """HD-Eval: hierarchical criteria with a white-box aggregator fitted to the human scores."""

    method = "hd_eval"
