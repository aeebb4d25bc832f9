"""MLflow in: traces with human assessments become a dataset, each human source an annotator.

``judge-workbench datasets import-mlflow --tracking-uri URI --experiment NAME --assessment NAME`` and
:func:`import_mlflow` read every trace of an experiment from a tracking store (a local ``sqlite:///...``
store needs no server), keep the valid feedback of that name given by humans (``source_type`` ``HUMAN``),
and import it as a dataset: the trace's inputs as the item's input and its outputs as the judged output, each
human source (``source_id``) an annotator under their own name, the values mapped to a scale
(:func:`~judge_engine.integrations.labels.value_scale`). Traces without that assessment are counted and named.

Bad input gets one message naming it and nothing is imported: a store that does not answer, an experiment or
assessment that does not exist, values of mixed types. mlflow is imported only here, when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping

from ..environment import environment
from .labels import (LabelImportError, LabelledItem, RawLabel, ValueScale, labelled_dataset, text_of,
                     value_scale)

if TYPE_CHECKING:
    from ..records import Dataset
    from ..store import Store

INSTALL_HINT = "pip install 'judge-workbench[integrations]' (or: pip install mlflow)"
HUMAN = "HUMAN"
SESSION_KEY = "mlflow.trace.session"
"""Trace metadata holding the session: traces of one session are one group (a split never cuts it)."""


def require_mlflow() -> Any:
    """The mlflow module, or a LabelImportError saying how to install it."""
    try:
        import mlflow
    except ImportError:
        raise LabelImportError(f"MLflow is not installed here; {INSTALL_HINT}") from None
    return mlflow


@dataclass(frozen=True)
class MlflowLabels:
    """What an experiment's traces hold for one assessment name."""

    items: tuple[LabelledItem, ...]
    labels: tuple[RawLabel, ...]
    without: tuple[str, ...]
    """Trace ids with no human assessment of that name (left out)."""
    not_human: int
    """Assessments of that name from an LLM judge or code (not labels: left out)."""
    traces: int


@dataclass(frozen=True)
class MlflowImport:
    """An imported dataset and what the import left out."""

    dataset: Dataset
    scale: ValueScale
    without: tuple[str, ...]
    not_human: int
    traces: int

    def summary(self) -> str:
        annotators = self.dataset.samples[0].metadata.get("annotator_names", []) if self.dataset.samples else []
        left = (f"{len(self.without)} trace(s) without a human {self.dataset.aspect_names[0]!r} assessment left "
                f"out: {', '.join(self.without[:10])}{' ...' if len(self.without) > 10 else ''}"
                if self.without else "every trace has the assessment")
        other = f"; {self.not_human} assessment(s) by an LLM judge or code not read as labels" if self.not_human else ""
        return (f"{self.traces} traces -> {len(self.dataset.samples)} items labelled by {len(annotators)} "
                f"annotator(s) ({', '.join(annotators)}); scale: {self.scale.describe()}; {left}{other}.")


def _quick_http() -> Any:
    """A server that does not answer fails in seconds, not after MLflow's default retries (minutes)."""
    return environment({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"})


def _client(tracking_uri: str) -> Any:
    mlflow = require_mlflow()
    uri = tracking_uri.strip()
    if not uri:
        raise LabelImportError("give the tracking URI (e.g. sqlite:///mlruns.db or http://localhost:5000)")
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///"):])
        if not path.is_file():  # MLflow would create an empty store there: nothing to read, and a stray file
            raise LabelImportError(f"the tracking URI {uri!r} does not answer: no MLflow store at {path}")
    from mlflow.tracking import MlflowClient

    del mlflow
    return MlflowClient(tracking_uri=uri)


def _experiment(client: Any, uri: str, name: str) -> Any:
    try:
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            names = [e.name for e in client.search_experiments(max_results=50)]
            raise LabelImportError(f"the tracking store {uri!r} has no experiment named {name!r}; it has: "
                                   f"{', '.join(map(repr, names)) or 'none'}")
    except LabelImportError:
        raise
    except Exception as exc:  # connection refused, not a tracking store, ...: MLflow's own words
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
        raise LabelImportError(f"the tracking URI {uri!r} does not answer ({first})") from None
    return experiment


def _traces(client: Any, experiment_id: str) -> Iterator[Any]:
    token = None
    while True:
        page = client.search_traces(locations=[experiment_id], max_results=500, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _item(trace: Any) -> LabelledItem:
    info = trace.info
    try:
        request, response = trace.data.request, trace.data.response
    except Exception:  # a trace without spans: MLflow's previews
        request, response = None, None
    metadata = getattr(info, "trace_metadata", None) or {}
    return LabelledItem(id=info.trace_id, input=text_of(request if request is not None else info.request_preview),
                        output=text_of(response if response is not None else info.response_preview),
                        group=str(metadata.get(SESSION_KEY) or ""), metadata={"mlflow_trace_id": info.trace_id})


def read_traces(tracking_uri: str, experiment: str, assessment: str) -> MlflowLabels:
    """The traces of ``experiment`` and their human ``assessment`` feedback (the latest valid one per source)."""
    client = _client(tracking_uri)
    with _quick_http():
        found = _experiment(client, tracking_uri, experiment)
        # oldest first: the dataset lists the items in the order they were logged
        traces = sorted(_traces(client, found.experiment_id),
                        key=lambda t: (getattr(t.info, "request_time", 0) or 0, t.info.trace_id))
    if not traces:
        raise LabelImportError(f"the experiment {experiment!r} has no traces")
    read, names = trace_labels(traces, assessment)
    if assessment not in names:
        raise LabelImportError(f"no trace of experiment {experiment!r} has an assessment named {assessment!r}; "
                               f"the names there: {', '.join(map(repr, sorted(names))) or 'none'}")
    if not read.labels:
        raise LabelImportError(f"no {assessment!r} assessment of experiment {experiment!r} is from a human "
                               f"({read.not_human} from an LLM judge or code); nothing to import")
    return read


def trace_labels(traces: list[Any], assessment: str) -> tuple[MlflowLabels, set[str]]:
    """The items of ``traces`` and their human ``assessment`` labels (the latest valid one per source), and
    every assessment name the traces carry."""
    items, labels, without, not_human, names = [], [], [], 0, set()
    for trace in traces:
        latest: dict[str, Any] = {}
        for a in trace.info.assessments or []:
            names.add(a.name)
            if a.name != assessment or getattr(a, "feedback", None) is None or a.valid is False:
                continue
            if str(a.source.source_type).upper() != HUMAN:
                not_human += 1
                continue
            if a.feedback.value is None:  # a feedback that records an error carries no label
                continue
            who = a.source.source_id or "unknown"
            if who not in latest or (a.create_time_ms or 0) >= (latest[who].create_time_ms or 0):
                latest[who] = a
        item = _item(trace)
        items.append(item)
        if not latest:
            without.append(item.id)
        labels.extend(RawLabel(item.id, who, a.feedback.value) for who, a in latest.items())
    return MlflowLabels(tuple(items), tuple(labels), tuple(without), not_human, len(traces)), names


def import_mlflow(store: Store, tracking_uri: str, experiment: str, assessment: str, *, name: str | None = None,
                  mapping: Mapping[str, float] | None = None, value_range: tuple[float, float] | None = None,
                  task: str = "") -> MlflowImport:
    """Import the human ``assessment`` feedback of ``experiment``'s traces as a new dataset (default name: the
    experiment's); LabelImportError or ValueError naming the problem, and then nothing is stored.

    ``mapping`` (category -> number) and ``value_range`` (low, high) change the scale the values map to.
    """
    from ..data.importing import check_new_name, import_dataset

    name = check_new_name(store, name or experiment)
    read = read_traces(tracking_uri, experiment, assessment)
    scale = value_scale([label.value for label in read.labels], what=f"assessment {assessment!r}",
                        mapping=mapping, value_range=value_range)
    dataset = labelled_dataset(name, assessment, read.items, read.labels, scale, task=task,
                               source=f"mlflow {tracking_uri} experiment {experiment!r}")
    import_dataset(store, dataset)
    return MlflowImport(dataset, scale, read.without, read.not_human, read.traces)
