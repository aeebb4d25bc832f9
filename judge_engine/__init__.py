"""Judge Workbench engine: build LLM judges from human scores and meta-evaluate them.

What is public is listed in ``__all__`` (the README's "Python API" shows it at work); every other name may
change between versions. Re-exported from small modules with one job each:

- data: :func:`load_benchmark` (a built-in benchmark), :func:`load_table` (your CSV / JSONL of human-scored
  outputs), :func:`make_split`; records :class:`Sample`, :class:`Aspect`, :class:`Dataset`, :class:`Split`,
  :class:`Verdict`, and a stored run's :class:`RunRecord` with its :class:`RunSummary`
- the one LLM call path: :class:`LLMConfig`, :func:`make_llm`, :class:`GenerationParams`; its errors
  :class:`LLMError` and :class:`EmbeddedModelUnavailable` (the embedded model cannot run here, and the fix)
- methods: :class:`Method`, :class:`Judge`, :data:`METHODS`, :func:`get_method`, and the
  :class:`FitContext` every ``fit(train, aspect, context)`` receives
- storage and runs (the one way to start a run): :class:`Store`, :class:`RunSpec`, :func:`create_run`,
  :func:`execute_run`
- whether to trust it: :func:`meta_evaluate`, :func:`trust_report`
- taking a judge away: :func:`export_judge`, :func:`load_judge` and its :meth:`ExportedJudge.score_table`
"""

__version__ = "0.9.0"
"""The one version string: the package's (pyproject.toml reads it), ``judge-workbench --version`` and the app's
sidebar."""

from .data import load_benchmark, load_table, make_split
from .export import ExportedJudge, export_judge, load_judge
from .llm import EmbeddedModelUnavailable, GenerationParams, LLMConfig, LLMError, make_llm
from .methods import METHODS, FitContext, Judge, Method, get_method
from .metrics import meta_evaluate
from .records import Aspect, Dataset, RunRecord, RunSummary, Sample, Split, Verdict
from .runs import RunSpec, create_run, execute_run
from .store import Store
from .trust import trust_report

__all__ = ["Aspect", "Dataset", "EmbeddedModelUnavailable", "ExportedJudge", "FitContext", "GenerationParams",
           "Judge", "LLMConfig", "LLMError", "METHODS", "Method", "RunRecord", "RunSpec", "RunSummary", "Sample",
           "Split", "Store", "Verdict", "__version__", "create_run", "execute_run", "export_judge", "get_method",
           "load_benchmark", "load_judge", "load_table", "make_llm", "make_split", "meta_evaluate", "trust_report"]
