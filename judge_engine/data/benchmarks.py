"""The seven built-in benchmarks: how each is read from its native format, and where its file is.

:data:`BENCHMARKS` maps a name to its :class:`BenchmarkSpec` (with where it is published,
:mod:`.sources`); :func:`load_benchmark` turns the file into a :class:`~judge_engine.records.Dataset`.
The data folder is ``$JUDGE_WORKBENCH_DATA``, else the clone's ``../shared/data`` when it exists,
else the user data folder (``$XDG_DATA_HOME/judge-workbench/data``), where
``judge-workbench datasets fetch`` puts what it downloads (:mod:`.fetch`).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..records import Aspect, Dataset, Sample
from ._common import (
    DataImportError,
    _aspect_scores,
    _group_numbers,
    _html_to_text,
    _iter_jsonl,
    _load_json,
    _need,
    _parse_scores,
    _short,
    _text,
    _to_float,
)
from .sources import SOURCES, BenchmarkSource

DATA_DIR_ENV = "JUDGE_WORKBENCH_DATA"


# --------------------------------------------------------------------------- benchmark specs


@dataclass(frozen=True)
class BenchmarkSpec:
    """How to read one built-in benchmark and how prompts should talk about it."""

    name: str
    folder: str
    file: str
    task: str
    input_label: str
    output_label: str
    natural_level: str
    aspects: tuple[Aspect, ...]
    context_label: str | None = None
    """How prompts name ``Sample.context`` (e.g. the fact in Topical-Chat), if the data has one."""
    reference_label: str | None = None
    """How prompts name ``Sample.reference``, if the data has one."""
    description: str = ""
    loader: Callable[["BenchmarkSpec", Path], list[Sample]] | None = field(default=None, repr=False)
    source: BenchmarkSource | None = field(default=None, repr=False)
    """Where the file is published, its license, size and sha256 (every built-in has one)."""

    def path(self, data_dir: str | os.PathLike | None = None) -> Path:
        base = Path(data_dir) if data_dir is not None else default_data_dir()
        return base / self.folder / self.file

    @property
    def aspect_names(self) -> list[str]:
        return [a.name for a in self.aspects]


def _a(name: str, low: float, high: float, definition: str) -> Aspect:
    return Aspect(name, float(low), float(high), definition)


# ---- loaders (one per native format) ---------------------------------------------------


def _load_summeval(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    names = spec.aspect_names  # ctc_relevance (a metric, not a human score) is never read
    samples = []
    for article, (row, rec) in enumerate(_iter_jsonl(path)):
        src = _text(_need(rec, "src", file=path, row=row)).strip()
        ref = _text(rec.get("ref_summs", "")).strip() or None
        systems = _need(rec, "sys_summs", file=path, row=row)
        if not isinstance(systems, dict):
            raise DataImportError("expected an object of systems", file=path, row=row, column="sys_summs")
        for system, entry in systems.items():
            col = f"sys_summs.{system}"
            summary = _text(_need(entry, "sys_summ", file=path, row=row)).strip()
            human = _aspect_scores(_need(entry, "scores", file=path, row=row), names,
                                   file=path, row=row, column=f"{col}.scores")
            samples.append(Sample(
                id=f"{article}:{system}", input=src, output=summary, group_id=str(article),
                system_id=str(system), reference=ref, human=human,
                metadata={"article_index": article}))
    return samples


def _load_topical_chat(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    group = _group_numbers()
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        history = _text(_need(rec, "source", file=path, row=row))
        samples.append(Sample(
            id=str(i), input=history.strip(),
            output=_text(_need(rec, "system_output", file=path, row=row)).strip(),
            group_id=group(history), system_id=_text(rec.get("system_id", "")),
            context=_text(rec.get("context", "")).strip() or None,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row)))
    return samples


def _load_sf(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        doc_id = _text(_need(rec, "doc_id", file=path, row=row))
        act = _text(_need(rec, "source", file=path, row=row)).strip()
        samples.append(Sample(
            # doc_id is unique per record in these files, so it is the id. The group is the
            # dialogue act: the same act was realised by several systems (2-10 outputs each),
            # and a split must not put one realisation in train and another in test.
            id=doc_id, input=act,
            output=_text(_need(rec, "system_output", file=path, row=row)).strip(),
            group_id=act, reference=_text(rec.get("reference", "")).strip() or None,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"doc_id": rec["doc_id"]}))
    return samples


def _load_hanna(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    group = _group_numbers()
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        raw_id = _need(rec, "story_id", file=path, row=row)
        try:
            story_id = int(raw_id)
        except (TypeError, ValueError):
            raise DataImportError(f"{_short(raw_id)} is not an integer", file=path, row=row,
                                  column="story_id") from None
        system = story_id // 96  # 96 prompts per system; system 0 = the human-written story
        prompt = _text(_need(rec, "prompt", file=path, row=row))
        samples.append(Sample(
            id=str(story_id), input=prompt.strip(),
            output=_text(_need(rec, "story", file=path, row=row)).strip(),
            group_id=group(prompt), system_id=str(system),
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"story_id": story_id, "human_written": system == 0}))
    return samples


def _load_newsroom(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    _expect_list(data, path)
    position: dict[str, int] = {}
    cleaned: dict[str, str] = {}
    samples = []
    for i, rec in enumerate(data):
        row = i + 1
        doc_id = _text(_need(rec, "doc_id", file=path, row=row))
        k = position.get(doc_id, 0)
        position[doc_id] = k + 1
        source = _text(_need(rec, "source", file=path, row=row))
        if source not in cleaned:
            cleaned[source] = _html_to_text(source)
        samples.append(Sample(
            # The file does not say which system wrote which summary (and the order inside a
            # document is not consistent), so system_id stays empty; id = doc_id:position.
            id=f"{doc_id}:{k}", input=cleaned[source],
            output=html.unescape(_text(_need(rec, "system_output", file=path, row=row))).strip(),
            group_id=doc_id,
            human=_aspect_scores(_need(rec, "scores", file=path, row=row), spec.aspect_names,
                                 file=path, row=row),
            metadata={"doc_id": doc_id, "position": k}))
    return samples


def _load_writingprompt_a(spec: BenchmarkSpec, path: Path) -> list[Sample]:
    data = _load_json(path)
    if not isinstance(data, dict):
        raise DataImportError("expected a JSON object {index: record}", file=path)
    group = _group_numbers()
    samples = []
    for n, (key, raw) in enumerate(data.items(), 1):
        rec = _parse_scores(raw, file=path, row=n, column=str(key))  # a dict or a dict string
        prompt = _text(_need(rec, "prompt", file=path, row=n))
        human, annotators = {}, {}
        for name in spec.aspect_names:
            ratings = _need(rec, name, file=path, row=n)
            if not isinstance(ratings, (list, tuple)) or not ratings:
                ratings = [ratings]
            values = [_to_float(r, file=path, row=n, column=name) for r in ratings]
            annotators[name] = values
            human[name] = sum(values) / len(values)
        samples.append(Sample(
            id=str(key), input=prompt.strip(),
            output=_text(_need(rec, "story", file=path, row=n)).strip(),
            group_id=group(prompt), human=human, annotators=annotators,
            metadata={"human_written": bool(rec.get("human_written", False))}))
    return samples


def _expect_list(data: Any, path: Path) -> None:
    if not isinstance(data, list):
        raise DataImportError(f"expected a JSON list of records, got {type(data).__name__}", file=path)


# ---- the seven built-ins ----------------------------------------------------------------

_SUMMARY_FLUENCY = "How well written each sentence is: grammatical, well formed and easy to read."

BENCHMARKS: dict[str, BenchmarkSpec] = {
    "summeval": BenchmarkSpec(
        name="summeval", folder="summeval", file="summeval_ctc.jsonl",
        task="news summarization (CNN/DailyMail articles)",
        input_label="Article", output_label="Summary", reference_label="Reference summary",
        # SummEval papers (G-Eval, UniEval, ...) report "summary level": correlation inside
        # each article's 16 summaries, averaged over the 100 articles.
        natural_level="group",
        aspects=(
            _a("coherence", 1, 5, "How well the summary's sentences fit together into a "
               "well-organised whole that reads logically from start to end."),
            _a("consistency", 1, 5, "Whether every fact the summary states is supported by the "
               "article, with nothing invented or contradicted."),
            _a("fluency", 1, 5, _SUMMARY_FLUENCY),
            _a("relevance", 1, 5, "How well the summary keeps the article's most important "
               "information and leaves out minor or redundant details."),
        ),
        description="100 CNN/DailyMail articles x 16 systems, 3 expert ratings averaged.",
        loader=_load_summeval, source=SOURCES["summeval"]),
    "topical_chat": BenchmarkSpec(
        name="topical_chat", folder="topical_chat", file="topical_chat.json",
        task="knowledge-grounded dialogue response generation",
        input_label="Dialogue history", output_label="Response", context_label="Fact",
        # USR / UniEval report turn-level correlation: one correlation over all 360 responses.
        natural_level="sample",
        aspects=(
            _a("understandability", 0, 1, "Whether the response can be understood on its own "
               "and makes sense (0 = no, 1 = yes)."),
            _a("naturalness", 1, 3, "How much the response sounds like something a person "
               "would naturally say at this point of the conversation."),
            _a("coherence", 1, 3, "How well the response follows on from the dialogue history "
               "and stays on topic."),
            _a("engagingness", 1, 3, "How interesting the response is and how much it invites "
               "the other person to keep talking."),
            _a("groundedness", 0, 1, "Whether the response makes use of the given fact "
               "(0 = no, 1 = yes)."),
            _a("overall", 1, 5, "The overall quality of the response as the next turn of "
               "this conversation."),
        ),
        description="60 dialogue contexts x 6 responses (4 systems + 2 human), USR annotations.",
        loader=_load_topical_chat, source=SOURCES["topical_chat"]),
    "sfhot": BenchmarkSpec(
        name="sfhot", folder="sfhot", file="sfhot.json",
        task="data-to-text generation: turning a hotel-booking dialogue act into an utterance",
        input_label="Dialogue act", output_label="Utterance", reference_label="Reference",
        # Novikova et al. (2017) and UniEval report one correlation over all utterances.
        natural_level="sample",
        aspects=(
            _a("informativeness", 1, 6, "How fully the utterance conveys all the information "
               "in the dialogue act, without leaving anything out."),
            _a("naturalness", 1, 6, "How likely it is that a native speaker would say this "
               "utterance: fluent and natural-sounding."),
            _a("overall", 1, 6, "The overall quality of the utterance as a way of expressing "
               "the dialogue act."),
        ),
        description="Hotel dialogue acts realised by 3 systems (SF Hotel, Novikova et al. 2017).",
        loader=_load_sf, source=SOURCES["sfhot"]),
    "sfres": BenchmarkSpec(
        name="sfres", folder="sfres", file="sfres.json",
        task="data-to-text generation: turning a restaurant dialogue act into an utterance",
        input_label="Dialogue act", output_label="Utterance", reference_label="Reference",
        natural_level="sample",  # as sfhot
        aspects=(
            _a("informativeness", 1, 6, "How fully the utterance conveys all the information "
               "in the dialogue act, without leaving anything out."),
            _a("naturalness", 1, 6, "How likely it is that a native speaker would say this "
               "utterance: fluent and natural-sounding."),
            _a("overall", 1, 6, "The overall quality of the utterance as a way of expressing "
               "the dialogue act."),
        ),
        description="Restaurant dialogue acts realised by 3 systems (SF Restaurant, Novikova et al. 2017).",
        loader=_load_sf, source=SOURCES["sfres"]),
    "hanna": BenchmarkSpec(
        name="hanna", folder="hanna", file="hanna.json",
        task="story generation from WritingPrompts prompts",
        input_label="Story prompt", output_label="Story",
        # HANNA (Chhun et al., 2022) reports "story level": correlation inside each prompt's
        # 11 stories, averaged over the 96 prompts (system level is also reported there).
        natural_level="group",
        aspects=(
            _a("relevance", 1, 5, "How closely the story matches its prompt."),
            _a("coherence", 1, 5, "How much sense the story makes as a whole, with events and "
               "ideas that connect logically."),
            _a("empathy", 1, 5, "How well the reader can understand the characters' emotions, "
               "whether or not they share them."),
            _a("surprise", 1, 5, "How surprising the story is, especially its ending, in a way "
               "that still makes sense."),
            _a("engagement", 1, 5, "How much the story draws the reader in and makes them "
               "care about what happens."),
            _a("complexity", 1, 5, "How elaborate and rich the story is: its plot, characters "
               "and setting."),
        ),
        description="96 prompts x 11 writers (1 human + 10 systems), 3 ratings averaged.",
        loader=_load_hanna, source=SOURCES["hanna"]),
    "newsroom": BenchmarkSpec(
        name="newsroom", folder="newsroom", file="newsroom.json",
        task="news summarization",
        input_label="Article", output_label="Summary",
        # The released file has no system ids; HypoEval reports one correlation over all
        # summaries, so the natural level is sample (group level, per article, also works).
        natural_level="sample",
        aspects=(
            _a("coherence", 1, 5, "How well the summary's phrases and sentences fit together "
               "and make sense as a whole."),
            _a("fluency", 1, 5, _SUMMARY_FLUENCY),
            _a("informativeness", 1, 5, "How well the summary captures the key points of the "
               "article."),
            _a("relevance", 1, 5, "Whether the details the summary gives agree with the "
               "details in the article."),
        ),
        description="60 Newsroom articles x 7 summaries, 3 ratings averaged.",
        loader=_load_newsroom, source=SOURCES["newsroom"]),
    "writingprompt_a": BenchmarkSpec(
        name="writingprompt_a", folder="writingprompt_a", file="wp_a.json",
        task="story generation from writing prompts",
        input_label="Story prompt", output_label="Story",
        # HypoEval (and Chiang & Lee, 2023) correlate over all 400 stories: sample level.
        natural_level="sample",
        aspects=(
            _a("cohesive", 1, 5, "How well the story's sentences connect into one "
               "well-structured piece of writing."),
            _a("enjoy", 1, 5, "How much a reader would like or enjoy the story."),
            _a("grammar", 1, 5, "How grammatically correct the story's text is."),
            _a("relevant", 1, 5, "How well the story fits its prompt."),
        ),
        description="200 human-written + 200 model-written stories, 3 ratings per aspect.",
        loader=_load_writingprompt_a, source=SOURCES["writingprompt_a"]),
}


def clone_shared_data() -> Path:
    """``../shared/data`` beside the clone this package runs from (for an installed package: a folder nobody has)."""
    return (Path(__file__).resolve().parents[3] / "shared" / "data").resolve()


def data_dir_origin() -> tuple[Path, str]:
    """The data folder and why it is that one: ``$JUDGE_WORKBENCH_DATA`` if set; else the clone's
    ``../shared/data`` when it exists (tests and CI); else the user data folder beside the default database
    (:func:`judge_engine.paths.user_data_dir`), where ``judge-workbench datasets fetch`` stores the benchmarks."""
    env = os.environ.get(DATA_DIR_ENV, "").strip()
    if env:
        return Path(env).expanduser(), f"${DATA_DIR_ENV}"
    shared = clone_shared_data()
    if shared.is_dir():
        return shared, "the clone's ../shared/data"
    from ..paths import user_data_dir  # the same folder as an installed package's default database

    return user_data_dir() / "data", "the user data folder"


def default_data_dir() -> Path:
    """The folder holding the benchmark folders (see :func:`data_dir_origin`)."""
    return data_dir_origin()[0]


class BenchmarkNotDownloaded(DataImportError):
    """A built-in benchmark whose file is not in the data folder; the message names the command that fetches it."""


class BenchmarkDamaged(DataImportError):
    """A built-in benchmark's file that cannot be read and is not the published one; the message says so first,
    names the command that fetches it again, then where reading stopped (``row``, ``column`` as read)."""

    def __str__(self) -> str:
        return self.message  # it names the file itself, before where reading stopped


def _damaged(spec: BenchmarkSpec, path: Path) -> str:
    """Why ``path`` is not ``spec``'s published file ("" when it is, or when nothing is published to compare)."""
    import hashlib

    published = next((f for f in (spec.source.files if spec.source else ()) if f.name == path.name), None)
    if published is None:
        return ""
    content = path.read_bytes()
    if len(content) == published.size and hashlib.sha256(content).hexdigest() == published.sha256:
        return ""
    return (f"{path} is not the published {path.name}: its checksum (sha256) differs ({len(content):,} bytes, "
            f"published {published.size:,}), so it was cut or edited; fetch it again with `judge-workbench datasets "
            f"fetch {spec.name} --replace` (the old file is kept as {path.name}.damaged)")


def _spec(name: str) -> BenchmarkSpec:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


def benchmark_path(name: str, data_dir: str | os.PathLike | None = None) -> Path:
    """Where the file of benchmark ``name`` is expected."""
    return _spec(name).path(data_dir)


def available_benchmarks(data_dir: str | os.PathLike | None = None) -> list[str]:
    """Names of the built-in benchmarks whose files exist under ``data_dir``."""
    return [name for name, spec in BENCHMARKS.items() if spec.path(data_dir).is_file()]


def load_benchmark(name: str, data_dir: str | os.PathLike | None = None) -> Dataset:
    """Load one built-in benchmark as a :class:`Dataset`.

    Raises ValueError for an unknown name, :class:`BenchmarkNotDownloaded` (a
    :class:`DataImportError` naming the fetch command) if the file is not here and
    :class:`DataImportError` if it is malformed.
    """
    spec = _spec(name)
    path = spec.path(data_dir)
    if not path.is_file():
        raise BenchmarkNotDownloaded(
            f"benchmark {name!r} is not downloaded: its file was not found at {path}. Fetch it with "
            f"`judge-workbench datasets fetch {name}`, or set {DATA_DIR_ENV} to a folder that holds it")
    try:
        samples = spec.loader(spec, path)
    except DataImportError as exc:
        damaged = _damaged(spec, path)
        if damaged:  # the cause first, then its symptom ("invalid JSON on line 12993" of a file cut short)
            raise BenchmarkDamaged(f"{damaged}. Reading it stopped at {exc}", file=exc.file, row=exc.row,
                                   column=exc.column) from None
        raise
    _check_unique_ids(samples, path)
    return Dataset(name=spec.name, task=spec.task, aspects=spec.aspects, samples=tuple(samples),
                   natural_level=spec.natural_level, source=str(path),
                   input_label=spec.input_label, output_label=spec.output_label,
                   context_label=spec.context_label or "Context")


def _check_unique_ids(samples: Sequence[Sample], path) -> None:
    seen = set()
    for n, s in enumerate(samples, 1):
        if s.id in seen:
            raise DataImportError(f"duplicate id {s.id!r}", file=path, row=n)
        seen.add(s.id)
