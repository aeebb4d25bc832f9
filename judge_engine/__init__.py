"""Judge Workbench engine: build LLM judges from human scores and meta-evaluate them.

The public API, re-exported from small modules with one job each:

- records: :class:`Sample`, :class:`Aspect`, :class:`Dataset`, :class:`Split`, :class:`Verdict`, and a
  stored run's :class:`RunRecord` with its :class:`RunSummary`
- the one LLM call path: :class:`LLMConfig`, :func:`make_llm`, :class:`GenerationParams`
- methods: :class:`Method`, :class:`Judge`, :data:`METHODS`, :func:`get_method`, and the
  :class:`FitContext` every ``fit(train, aspect, context)`` receives
- storage and runs: :class:`Store`, :class:`RunSpec`, :func:`create_run`, :func:`execute_run`
- meta-evaluation: :func:`meta_evaluate`
"""

from .llm import GenerationParams, LLMConfig, LLMError, make_llm
from .methods import METHODS, FitContext, Judge, Method, get_method
from .metrics import meta_evaluate
from .records import Aspect, Dataset, RunRecord, RunSummary, Sample, Split, Verdict
from .runs import RunSpec, create_run, execute_run
from .store import Store

__all__ = ["Aspect", "Dataset", "FitContext", "GenerationParams", "Judge", "LLMConfig", "LLMError", "METHODS",
           "Method", "RunRecord", "RunSpec", "RunSummary", "Sample", "Split", "Store", "Verdict", "create_run",
           "execute_run", "get_method", "make_llm", "meta_evaluate"]
