"""Where teams' labels and evaluations already live: MLflow both ways, annotation-tool exports in, eval-framework
scorers out (docs/integrations.md).

- :mod:`.labels` -- the shared part of every import: items, one label per annotator, the scale values map to;
- :mod:`.mlflow_traces` -- traces with human assessments from an MLflow tracking store, as a dataset;
- :mod:`.mlflow_scorer` -- an exported judge as an MLflow scorer (``ExportedJudge.to_mlflow_scorer``);
- :mod:`.annotation_exports` -- Label Studio, Argilla and Langfuse exports, as a dataset;
- :mod:`.eval_frameworks` -- the exported judge as an inspect_ai scorer and a DeepEval metric;
- :mod:`.mlflow_align` -- the four methods as MLflow alignment optimizers;
- :mod:`.memalign_peer` -- MLflow's own alignment (MemAlign) as the ``memalign`` method, a peer baseline, through
  :mod:`.openai_bridge` (an OpenAI-compatible endpoint answering through the workbench's LLM path).

None of the tools is a dependency of the engine: each is imported when its function is called
(``pip install 'judge-workbench[integrations]'``), so importing this package needs none of them.
"""
