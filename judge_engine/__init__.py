"""Judge Workbench engine: build LLM judges from human scores and meta-evaluate them.

The public API, re-exported from small modules with one job each:

- records: :class:`Sample`, :class:`Aspect`, :class:`Dataset`, :class:`Split`, :class:`Verdict`
- the one LLM call path: :class:`LLMConfig`, :func:`make_llm`, :class:`GenerationParams`
- methods: :class:`Method`, :class:`Judge`, :data:`METHODS`, :func:`get_method`
- storage and runs: :class:`Store`, :class:`RunSpec`, :func:`create_run`, :func:`execute_run`
- meta-evaluation: :func:`meta_evaluate`
"""

from .llm import GenerationParams, LLMConfig, LLMError, make_llm
from .methods import METHODS, Judge, Method, get_method
from .metrics import meta_evaluate
from .records import Aspect, Dataset, Sample, Split, Verdict
from .runs import RunSpec, create_run, execute_run
from .store import Store

__all__ = ["Aspect", "Dataset", "GenerationParams", "Judge", "LLMConfig", "LLMError", "METHODS", "Method",
           "RunSpec", "Sample", "Split", "Store", "Verdict", "create_run", "execute_run", "get_method",
           "make_llm", "meta_evaluate"]
