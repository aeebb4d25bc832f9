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

# Each public name is imported from its module when first asked for (PEP 562), not here: ``judge-workbench
# --version`` and ``--help`` and every worker start import this package, and importing all of it pulls in
# pandas, scipy and sklearn (2 s on the shared 2-core machine, issue 46 item 6).
_PUBLIC = {
    "load_benchmark": ".data", "load_table": ".data", "make_split": ".data",
    "ExportedJudge": ".export", "export_judge": ".export", "load_judge": ".export",
    "EmbeddedModelUnavailable": ".llm", "GenerationParams": ".llm", "LLMConfig": ".llm", "LLMError": ".llm",
    "make_llm": ".llm",
    "METHODS": ".methods", "FitContext": ".methods", "Judge": ".methods", "Method": ".methods",
    "get_method": ".methods",
    "meta_evaluate": ".metrics",
    "Aspect": ".records", "Dataset": ".records", "RunRecord": ".records", "RunSummary": ".records",
    "Sample": ".records", "Split": ".records", "Verdict": ".records",
    "RunSpec": ".runs", "create_run": ".runs", "execute_run": ".runs",
    "Store": ".store",
    "trust_report": ".trust",
}


def __getattr__(name: str):
    import importlib

    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name], __name__), name)
        globals()[name] = value  # asked once: later lookups do not come here
        return value
    try:  # ``judge_engine.runs`` and the like, for code that reaches a submodule through the package
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = ["Aspect", "Dataset", "EmbeddedModelUnavailable", "ExportedJudge", "FitContext", "GenerationParams",
           "Judge", "LLMConfig", "LLMError", "METHODS", "Method", "RunRecord", "RunSpec", "RunSummary", "Sample",
           "Split", "Store", "Verdict", "__version__", "create_run", "execute_run", "export_judge", "get_method",
           "load_benchmark", "load_judge", "load_table", "make_llm", "make_split", "meta_evaluate", "trust_report"]
