"""Score a file of any size with a finished judge: chunks in, one verdict line out as soon as it is known.

This is what ``judge-workbench score`` runs, and :meth:`judge_engine.export.ExportedJudge.score_file`
from Python. Memory holds at most three chunks of items and their verdicts, whatever the file's size:
the input is read a chunk at a time (:class:`~judge_engine.items.ItemFile`) and each verdict is
written as one whole line as soon as its chunk is scored, the file flushed once per chunk (JSONL, or CSV
through :mod:`judge_engine.spreadsheet` so no cell runs as a formula).

Running the same command again with the same output file resumes it: the ids already written are
skipped (a line cut by a crash is dropped and its item scored again, from the call cache), and an
output file written by another judge is refused before any request. While one chunk's last answers
come in, the next chunks' requests are already queued (three chunks in flight share the backend's
concurrency), so a server is never left idle between chunks.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import threading
from collections import deque
from contextlib import contextmanager
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TextIO

from . import spreadsheet
from .items import IdSet, ItemFile
from .item_failures import ITEM_FAILURES, FailureWatch, failed_verdict
from .score_pairs import BOOTSTRAP_ITEM_BUDGET, MIN_RESAMPLES, _Pairs, bootstrap_resamples  # noqa: F401  (its API)
from .llm import LLM, LLMError, SendingStopped
from .methods import Judge
from .records import Sample, Verdict

SCORE_CHUNK = 256
"""Items per chunk (at least twice the calls in flight): enough for a server's batching, few enough that a crash
loses at most three chunks of answers (they stay in the call cache, so even those are not paid again)."""

OUTPUT_FORMATS = ("jsonl", "csv")
OUTPUT_COLUMNS = ("id", "aspect", "score", "missing", "missing_reason", "explanation", "criteria")
"""Fields of one verdict line; in CSV ``criteria`` is a JSON object in one cell."""


def verdict_record(v: Verdict) -> dict[str, Any]:
    """One output line of ``score`` (and one row of the Ray stage): None where there is no number."""
    from .records import missing_reason

    return {"id": v.sample_id, "aspect": v.aspect, "score": None if v.missing else v.score, "missing": v.missing,
            "missing_reason": missing_reason(v), "explanation": v.explanation,
            "criteria": {k: (None if x != x else x) for k, x in v.criteria.items()}}


CHUNKS_IN_FLIGHT = 3
"""Chunks scored at once when the backend takes several calls at once. With two, the chunk after next was read and
its prompts built only once the oldest chunk's last answer was in, by which time the next chunk had at most one
window of requests left queued; building a chunk's prompts shares the GIL with hundreds of sending threads, so the
queue ran dry and the requests in flight drained at every chunk's end (issue 48 item 4, docs/benchmarks.md). A
third chunk keeps a chunk and a half of requests queued while the next is built."""

WAKE_S = 0.5
"""How often the thread waiting on the chunks wakes to see a signal. Blocked with no timeout, it did not see a SIGINT
(a Stop) until a chunk finished, while the chunks' threads sent on: the Stop test of tests/test_runs_execute sent 6-8
calls instead of at most 5 in 3 of 90 runs, its main thread still in ``future.result()`` 8 s after the signal."""


def _chunk_result(future: Future, waiting: Callable[[], None] | None = None) -> list[Verdict]:
    while not future.done():
        wait((future,), timeout=WAKE_S)
        if waiting is not None:
            waiting()
    return future.result()


def failure_watch(llm: LLM) -> FailureWatch:
    """A :class:`FailureWatch` for one job on ``llm``: its requests in flight, and its server's timeout and address."""
    config = getattr(llm, "config", None)
    backend = getattr(llm, "backend", None)
    timeout = getattr(backend, "timeout", None)  # the openai backend's; in-process backends have none
    return FailureWatch(in_flight=getattr(config, "concurrency", 1) or 1,
                        timeout=timeout if isinstance(timeout, (int, float)) else None,
                        where=str(getattr(backend, "where", "the server")))


def _stop_sending(llm: LLM, exc: Exception, watch: FailureWatch) -> Exception:
    """A failure that ends the job (a bad key, a model not served, the watch's stop) stops the client's sending at
    once, from the chunk's thread that saw it: the other chunks in flight had sent up to a window of requests each
    before the job noticed (150 requests after a 401 answered to the first ones, issue 64). The job's end resumes
    sending (:func:`score_stream`). Returns the error to raise: the job's first stop, also in the chunks whose
    requests were dropped by it (not their "stopped")."""
    if isinstance(exc, SendingStopped):
        return watch.stop or exc
    if watch.stop is None:
        watch.stop = exc if isinstance(exc, LLMError) else None
    if callable(getattr(llm, "cancel_queued", None)):
        llm.cancel_queued()
    return watch.stop or exc


def score_items(judge: Judge, samples: Sequence[Sample], *, llm: LLM,
                progress: Callable[[int, int, str], None] | None = None,
                watch: FailureWatch | None = None) -> list[Verdict]:
    """``judge.score`` that survives some items failing (:mod:`judge_engine.item_failures`).

    The chunk is scored as one batch; when one of its requests fails after its retries (refused, a server error,
    a timeout), each item is scored on its own (the answers already in are in the call cache, so nothing is paid
    twice) and a failed item becomes a missing verdict whose reason is the server's own words
    (``metadata["failed"]`` names the kind, ``metadata["refused"]`` holds a refusal's status). ``watch`` sees the
    answers and failures of the whole job and raises when no other item is answered: the settings' or the
    server's fault. Any other failure (a bad key, a server down) is raised as before.
    """
    watch = watch or failure_watch(llm)
    seen: dict[str, int] = {}

    def tick(done: int, total: int, stage: str) -> None:
        watch.answered(done - seen.get(stage, 0))  # answers coming in: the settings work
        seen[stage] = max(seen.get(stage, 0), done)
        if progress:
            progress(done, total, stage)

    try:
        verdicts = judge.score(samples, llm=llm, progress=tick)
        watch.answered(1)  # a judge that reports no progress: its chunk's answers are in
        return verdicts
    except ITEM_FAILURES as exc:
        try:  # a failed request of the batch counts: a server stuck on every request is named one round sooner
            watch.failed(exc)
        except LLMError as stop:
            raise _stop_sending(llm, stop, watch) from None
    except LLMError as exc:
        raise _stop_sending(llm, exc, watch) from None
    aspect = judge.aspect["name"]

    def one(sample: Sample) -> Verdict:
        watch.check()
        try:
            verdict = judge.score([sample], llm=llm)[0]
        except ITEM_FAILURES as exc:
            try:
                watch.failed(exc)
            except LLMError as stop:
                raise _stop_sending(llm, stop, watch) from None
            return failed_verdict(sample, aspect, exc)
        except LLMError as exc:
            raise _stop_sending(llm, exc, watch) from None
        watch.answered(1)
        return verdict

    workers = 1 if getattr(getattr(llm, "backend", None), "serialises_calls", False) else \
        max(1, min(len(samples), getattr(getattr(llm, "config", None), "concurrency", 1)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="item") as pool:
        verdicts = list(pool.map(one, samples))
    if progress:
        progress(len(samples), len(samples), "scoring")
    return verdicts


def judge_fingerprint(judge: Judge) -> str:
    """A short hash of everything that decides a judge's scores, to tell whose verdicts an output file holds."""
    return hashlib.sha256(judge.to_json().encode("utf-8")).hexdigest()[:16]


def output_format(out: str | Path | None, fmt: str | None = None) -> str:
    """``fmt`` if given, else CSV for a ``.csv`` output file and JSONL otherwise."""
    if fmt is not None:
        if fmt not in OUTPUT_FORMATS:
            raise ValueError(f"unknown output format {fmt!r}; use one of {', '.join(OUTPUT_FORMATS)}")
        return fmt
    return "csv" if out is not None and Path(out).suffix.lower() == ".csv" else "jsonl"


def format_line(record: dict[str, Any], fmt: str) -> str:
    """One verdict as a whole line of ``fmt`` (a CSV line may hold quoted line breaks of the explanation)."""
    if fmt == "jsonl":
        return json.dumps(record, ensure_ascii=False) + "\n"
    cells = {**record, "criteria": json.dumps(record["criteria"], ensure_ascii=False)}
    buffer = io.StringIO()
    csv.writer(buffer).writerow([spreadsheet.safe_cell(cells[c]) for c in OUTPUT_COLUMNS])
    return buffer.getvalue()


def header_line(fmt: str) -> str:
    """The first line of a new output file: the column names of a CSV, nothing for JSONL."""
    if fmt != "csv":
        return ""
    buffer = io.StringIO()
    csv.writer(buffer).writerow(OUTPUT_COLUMNS)
    return buffer.getvalue()


def _unquoted(cell: str) -> str:
    """A CSV cell's text as it was before :func:`~judge_engine.spreadsheet.safe_cell` quoted a formula-like one."""
    return cell[1:] if cell.startswith("'") and spreadsheet.is_formula_like(cell[1:]) else cell


def _meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".judge")


FOREIGN_IDS_FROM = 8
"""Items of a file's first chunk, none of them in the output being resumed, that refuse the resume: appending would
write every item a second time under other ids (issue 64 item 6: ids were row numbers before a column named id
was taken by default)."""

RESUME_BATCH = 5000
"""Ids read from an output file between two writes into the on-disk id set: a resume holds this many, not all."""


def _resumed_lines(f: Any, out: Path, consumed: list[int]) -> Iterable[str]:
    """The whole lines of an output file, decoded, counting their bytes into ``consumed[0]``.

    The last line stops the stream when it has no line end (a crash cut it, maybe inside a multi-byte
    character, so it is not decoded); a whole line that is not UTF-8 is refused, naming it."""
    for n, raw in enumerate(f, 1):
        if not raw.endswith(b"\n"):
            return
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{out}, line {n}: not UTF-8, so not a line score wrote; the file was changed by "
                             "something else: choose another --out file, or delete it to start over") from None
        consumed[0] += len(raw)
        yield line


def _read_written_ids(out: Path, fmt: str, done: IdSet) -> int:
    """Stream the ids of the whole records of ``out`` into ``done``; returns the bytes those records take."""
    consumed, good, batch = [0], 0, []
    with open(out, "rb") as f:
        lines = _resumed_lines(f, out, consumed)
        if fmt == "jsonl":
            for n, line in enumerate(lines, 1):
                if line.strip():
                    try:
                        batch.append((str(json.loads(line)["id"]), n))
                    except (ValueError, KeyError, TypeError):
                        raise ValueError(f"{out}, line {n}: not a verdict line of score; choose another --out "
                                         "file, or delete it to start over") from None
                good = consumed[0]
                if len(batch) >= RESUME_BATCH:
                    done.add(batch)
                    batch = []
        else:
            # strict: a quoted cell left open by the cut (its line end removed with the cut line) raises
            reader = csv.reader(lines, strict=True)
            try:
                for n, cells in enumerate(reader):
                    if len(cells) != len(OUTPUT_COLUMNS):
                        break  # the last record, cut before its last cell
                    if n > 0:  # not the header
                        batch.append((_unquoted(cells[0]), n))
                    good = consumed[0]
                    if len(batch) >= RESUME_BATCH:
                        done.add(batch)
                        batch = []
            except csv.Error:
                pass  # a quote left open by the cut
    done.add(batch)
    return good


def _written_format(out: Path) -> str:
    """What an output file written before formats were recorded holds: a CSV starts with score's header."""
    with open(out, "rb") as f:
        first = f.readline()
    return "csv" if first.decode("utf-8", "replace") == header_line("csv") else "jsonl"


def drop_missing(out: Path, fmt: str) -> int:
    """Take the missing verdicts out of ``out`` (for ``--retry-missing``: their items are scored again and written
    at the end); returns how many. The file is rewritten beside and moved over it in one step, so a crash leaves
    either the old file or the new one, never half of each."""
    dropped = 0
    temporary = out.with_name(out.name + ".retry")
    with open(out, encoding="utf-8", newline="") as f, open(temporary, "w", encoding="utf-8", newline="") as new:
        if fmt == "jsonl":
            for line in f:
                if line.strip() and json.loads(line).get("missing") is True:
                    dropped += 1
                else:
                    new.write(line)
        else:
            writer = csv.writer(new)
            for n, cells in enumerate(csv.reader(f)):
                if n > 0 and len(cells) == len(OUTPUT_COLUMNS) and cells[OUTPUT_COLUMNS.index("missing")].lower() == "true":
                    dropped += 1
                else:
                    writer.writerow(cells)
    if dropped:
        temporary.replace(out)
    else:
        temporary.unlink()
    return dropped


def tag_output(out: str | Path, judge: Judge, fmt: str) -> None:
    """Tag a new output file with the judge's fingerprint and the format (``<out>.judge``), at its first verdict."""
    try:
        _meta_path(Path(out)).write_text(f"{judge_fingerprint(judge)}\n{fmt}\n", encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot write {out}: {exc.strerror or exc}") from None


def resume_output(out: str | Path, judge: Judge, fmt: str = "jsonl", *, retry_missing: bool = False) -> IdSet:
    """The ids already written to ``out`` by this judge, after cutting off a half-written last record.

    A new output file is tagged with the judge's fingerprint and the output format (a ``<out>.judge`` file beside
    it); an existing one written by another judge, or in the other format, is refused before any request is
    sent, since appending would mix two judges' verdicts, or CSV lines into JSONL, in one file. The ids are read
    as a stream into an on-disk :class:`IdSet`, so resuming after a million lines takes the memory of a few
    thousand.
    """
    out = Path(out)
    meta, mine = _meta_path(out), judge_fingerprint(judge)
    done = IdSet()
    if not out.exists() or out.stat().st_size == 0:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)  # `--out results/x.jsonl` before results/ exists
            if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
                raise PermissionError(13, "Permission denied")
        except OSError as exc:  # a read-only folder, a file where a folder should be: one line, not a traceback
            done.close()
            raise ValueError(f"cannot write {out}: {exc.strerror or exc}") from None
        return done  # tagged at its first verdict (tag_output): a job that stops before one leaves no file
    
    tag = meta.read_text(encoding="utf-8").split() if meta.exists() else []
    theirs = tag[0] if tag else ""
    try:
        if theirs != mine:
            said = f"by judge {theirs}" if theirs else "without a judge tag (not by score)"
            raise ValueError(f"{out} was written {said}, not by this judge ({mine}): choose another --out file, or "
                             "delete it to start over")
        written = tag[1] if len(tag) > 1 else _written_format(out)  # a tag of before formats were recorded
        if written != fmt:
            raise ValueError(f"{out} holds this judge's verdicts as {written.upper()}; this run would append "
                             f"{fmt.upper()} lines to it: run with --format {written}, or choose another --out file")
        length = _read_written_ids(out, fmt, done)
    except BaseException:
        done.close()
        raise
    if length != out.stat().st_size:  # a record cut by a crash: drop it, its item is scored again (from the cache)
        with open(out, "r+b") as f:
            f.truncate(length)
    if retry_missing and drop_missing(out, fmt):  # read again: the missing items' ids are no longer done
        done.close()
        done = IdSet()
        _read_written_ids(out, fmt, done)
    return done


LEFT_OUT_REASONS = (("repeats the header", "repeated header"), ("closes only on line", "quote left open"),
                    ("duplicate id", "repeated id"), ("the id is empty", "empty id"),
                    ("control characters", "id with control characters"), ("not UTF-8", "not UTF-8"),
                    ("output text is empty", "empty output"), ("missing in this record", "a column missing"),
                    ("cells but the header", "wrong number of cells"), ("invalid JSON", "invalid JSON"),
                    ("expected a JSON object", "not a JSON object"), ("is not a number", "human score not a number"),
                    ("not a finite number", "human score not finite"), ("score is empty", "human score empty"))
"""How the summary groups the rows left out (a phrase of the reader's message, the group's name)."""


def left_out_reason(exc: Exception) -> str:
    """The group of a row left out, for the summary's ``rows_left_out_by_reason``."""
    message = str(getattr(exc, "message", exc))
    return next((name for phrase, name in LEFT_OUT_REASONS if phrase in message), message[:60])


def score_stream(judge: Judge, chunks: Iterable[Sequence[Sample]], *, llm: LLM, write: Callable[[Verdict], None],
                 progress: Callable[[int, int, str], None] | None = None, total: int = 0,
                 flush: Callable[[], None] | None = None,
                 notice: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score each chunk and hand every verdict to ``write``, in input order, as soon as its chunk is done.

    :data:`CHUNKS_IN_FLIGHT` chunks are in flight when the backend takes several calls at once; a backend that answers
    one call at a time (the embedded model) gets the chunks one after the other, so the prompts of one item stay
    consecutive and reuse its KV cache. ``flush`` is called after each chunk's verdicts (all known at the same
    moment: one flush, not one per line). An item whose request kept failing is written missing with the reason
    (:func:`score_items`), once an item after it in the file is answered (or at the end, when any was): when no
    other item is answered the job stops with one :class:`~judge_engine.llm.LLMError` before they are written (a
    re-run tries them again; :mod:`judge_engine.item_failures`). ``notice`` gets one line when the server has
    answered nothing for its request timeout. Returns the counts ``{"items", "missing", "refused",
    "missing_by_reason"}``.
    """
    counts: dict[str, Any] = {"items": 0, "missing": 0, "refused": 0, "missing_by_reason": {}}
    held: list[Verdict] = []  # failed verdicts not yet followed by an answered item
    watch = failure_watch(llm)
    serial = getattr(llm, "config", None) is None or llm.config.concurrency <= 1 or \
        getattr(getattr(llm, "backend", None), "serialises_calls", False)
    in_chunk: dict[int, int] = {}
    told = [0.0]

    def run(index: int, chunk: Sequence[Sample]) -> list[Verdict]:
        def tick(done: int, _total: int, stage: str) -> None:
            in_chunk[index] = done
            if progress:
                progress(counts["items"] + sum(in_chunk.values()), max(total, counts["items"]), stage)
        return score_items(judge, chunk, llm=llm, progress=tick, watch=watch)

    def put(v: Verdict) -> None:
        write(v)
        counts["items"] += 1
        if v.missing:
            counts["missing"] += 1
            reason = missing_group(v)
            counts["missing_by_reason"][reason] = counts["missing_by_reason"].get(reason, 0) + 1
        counts["refused"] += int("refused" in v.metadata)

    def emit(index: int, verdicts: list[Verdict]) -> None:
        in_chunk.pop(index, None)
        for v in verdicts:
            if "failed" in v.metadata:
                held.append(v)
                continue
            for h in held:
                put(h)
            held.clear()
            put(v)
        if flush:
            flush()

    def finish() -> dict[str, Any]:
        if held and counts["items"] == 0 and watch.answers == 0:
            raise watch.all_failed(held[-1], len(held))
        for h in held:  # failed items at the end of the file while others were answered: those items are missing
            put(h)
        if held and flush:
            flush()
        return counts

    def waiting() -> None:
        # one line when the server has answered nothing for a whole request timeout: before the client's retries
        # end, which take (timeout x retries) more, so a stuck server is named within the timeout, not minutes later
        silent = watch.silent_for()
        if notice and watch.timeout and silent >= watch.timeout and watch.last_answer != told[0]:
            told[0] = watch.last_answer
            notice(f"no answer from {watch.where} for {silent:.0f} s (--timeout {watch.timeout:g} s per request, "
                   f"retried {getattr(llm.backend, 'max_retries', 0)} times): still waiting; Ctrl-C stops, "
                   "and the same command resumes")

    numbered = ((i, c) for i, c in enumerate(chunks) if c)
    if serial:
        try:
            for index, chunk in numbered:
                emit(index, run(index, chunk))
        finally:
            if callable(getattr(llm, "resume_sending", None)):
                llm.resume_sending()  # after a stop of _stop_sending: the next job on this client sends again
        return finish()
    pending: deque = deque()
    pool = ThreadPoolExecutor(max_workers=CHUNKS_IN_FLIGHT, thread_name_prefix="chunk")
    try:
        for index, chunk in numbered:
            pending.append((index, pool.submit(run, index, chunk)))
            if len(pending) == CHUNKS_IN_FLIGHT:
                emit(pending[0][0], _chunk_result(pending[0][1], waiting))
                pending.popleft()
        while pending:
            emit(pending[0][0], _chunk_result(pending[0][1], waiting))
            pending.popleft()
    except BaseException as exc:
        _stop_chunks(llm, pool, [f for _, f in pending], interrupted=not isinstance(exc, Exception))
        raise
    pool.shutdown()
    return finish()


STOP_WAIT_S = 1.0
"""How long a Ctrl-C waits for the requests in flight before it leaves them: the answers that come by then are
cached, the rest are asked again by the resume. Waiting for all of them held a Ctrl-C for minutes on a stuck
server (still running 300 s later)."""


def _stop_chunks(llm: LLM, pool: ThreadPoolExecutor, futures: list[Future], *, interrupted: bool) -> None:
    """Stop the chunks still scoring when the job ends early: their queued requests are dropped (a stopped job
    sends nothing more); a failure waits for the calls in flight, whose answers go to the cache before anyone
    resumes, and an interrupt waits at most :data:`STOP_WAIT_S` (the client sends again once they are done)."""
    stoppable = callable(getattr(llm, "cancel_queued", None))
    if stoppable:
        llm.cancel_queued()  # also refuses what a chunk asks for after it, until the chunks are done
    if not interrupted:
        try:
            pool.shutdown(wait=True, cancel_futures=True)
        finally:
            if stoppable:  # no chunk of this job can send now: a resume or the next job on this client sends again
                llm.resume_sending()
        return
    with _no_second_interrupt():
        pool.shutdown(wait=False, cancel_futures=True)
        left = [f for f in futures if not f.done()]
        if left:
            wait(left, timeout=STOP_WAIT_S)
        left = [f for f in left if not f.done()]
    if not stoppable:
        return
    if not left:
        llm.resume_sending()
        return
    remaining = [len(left)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:  # the last chunk left running resumes the client (a notebook goes on with it)
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            llm.resume_sending()

    for f in left:
        f.add_done_callback(one_done)


@contextmanager
def _no_second_interrupt() -> Iterator[None]:
    """While a Ctrl-C is being handled, a second one is ignored (it ended in a traceback); restored after."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def missing_group(v: Verdict) -> str:
    """The group of a missing verdict in the summary's ``missing_by_reason``: the failure's kind, or the reason
    the judge gave (a reply with no score, an empty reply)."""
    from .records import missing_reason

    failed = v.metadata.get("failed")
    return str(failed) if failed else missing_reason(v)[:80]


def score_file(judge: Judge, source: ItemFile, *, llm: LLM, out: str | Path | None = None, fmt: str | None = None,
               stream: TextIO | None = None, chunk: int | None = None,
               progress: Callable[[int, int, str], None] | None = None,
               bad_row: Callable[[Exception], None] | None = None,
               notice: Callable[[str], None] | None = None, retry_missing: bool = False,
               warn_row: Callable[[Exception], None] | None = None) -> dict[str, Any]:
    """Score every item of ``source`` into ``out`` (resumed if it exists) or ``stream``; returns the summary.

    The summary counts the items scored now, those ``skipped`` as already in ``out``, the rows left out
    (``rows_left_out``, each also given to ``bad_row``) and the verdicts with no score (``missing``, grouped in
    ``missing_by_reason``); with a human score column, the correlation over the whole output file. A resumed
    file's missing verdicts are kept as they are, unless ``retry_missing``: then their items are scored again.
    The rows of the file are ``items + skipped + rows_left_out`` (a quote left open counts each row it holds);
    ``rows_cleaned`` counts the rows scored after control characters were removed from a text (each also given
    to ``warn_row``).
    """
    fmt = output_format(out, fmt)
    if retry_missing and notice and out is not None and Path(out).exists():
        notice(f"--retry-missing: the items written missing in {out} are scored again")
    done = resume_output(out, judge, fmt, retry_missing=retry_missing) if out is not None else IdSet()
    if len(done) and notice:
        notice(f"resuming: {len(done)} items are already in {out}; scoring the rest")
    size = chunk or max(SCORE_CHUNK, 2 * max(1, getattr(getattr(llm, "config", None), "concurrency", 1)))
    left_out = skipped = 0
    left_out_by_reason: dict[str, int] = {}
    human = _Pairs() if source.columns.aspect_cols else None  # on disk: 245 bytes an item in dicts before

    def count_bad(exc: Exception) -> None:
        nonlocal left_out
        rows = int(getattr(exc, "rows", 1))  # a quote left open stands for every row inside it
        left_out += rows
        reason = left_out_reason(exc)
        left_out_by_reason[reason] = left_out_by_reason.get(reason, 0) + rows
        if bad_row:
            bad_row(exc)

    cleaned = [0]

    def count_cleaned(exc: Exception) -> None:
        cleaned[0] += 1
        if warn_row:
            warn_row(exc)

    def todo() -> Iterable[list[Sample]]:
        nonlocal skipped
        aspect = next(iter(source.columns.aspect_cols), None)
        # the first eighth of the first chunk goes alone, so the first requests leave once a few prompts are built:
        # at 256 in flight, a whole chunk's 512 prompts and cache keys took 0.3-0.9 s of a loaded machine before any
        # request left, where the plain openai client's first request left in 0.04-0.1 s (issue 48 item 4)
        lead = max(8, size // 8)
        first = True
        for part in source.chunks(size, count_bad, count_cleaned):
            if human is not None and aspect is not None:
                human.add_human((s.id, s.human[aspect]) for s in part)
            written = done.rows_of([s.id for s in part]) if len(done) else {}
            if first and len(done) and not written and len(part) >= FOREIGN_IDS_FROM and not retry_missing:
                raise ValueError(f"{out} holds {len(done)} verdicts, none of them for this file's first "
                                 f"{len(part)} items (ids {part[0].id!r} to {part[-1].id!r}): it was written with "
                                 "other ids (another file, another --id-col, or row numbers before score took the "
                                 "column named id); choose another --out file, or give the --id-col it was "
                                 "written with")
            first = False
            skipped += len(written)
            left = [s for s in part if s.id not in written]
            if lead and len(left) > lead:
                yield left[:lead]
                left = left[lead:]
            lead = 0 if left else lead
            yield left

    handle: TextIO | None = stream
    fresh = stream is None or fmt == "csv"
    if out is not None:
        fresh = not Path(out).exists() or Path(out).stat().st_size == 0

    def write(v: Verdict) -> None:
        nonlocal handle, fresh
        if handle is None:  # opened at the first verdict: a job stopped before one leaves no empty output
            if fresh:
                tag_output(out, judge, fmt)
            handle = open(out, "a", encoding="utf-8", newline="")
        if fresh:
            handle.write(header_line(fmt))
            fresh = False
        record = verdict_record(v)
        if human is not None and out is None:  # written to a stream: the scores kept for the correlation
            human.add_scores([(record["id"], record["score"])])
        handle.write(format_line(record, fmt))  # one write per record: Ctrl-C leaves whole lines

    chunks = todo()
    try:
        counts = score_stream(judge, chunks, llm=llm, write=write, progress=progress,
                              total=max(0, source.estimated_rows() - len(done)),
                              flush=lambda: handle.flush() if handle is not None else None, notice=notice)
    finally:
        chunks.close()  # an interrupted run: the reader's temporary table is closed here, not by the collector
        done.close()
        if handle is not None and handle is not stream:
            handle.close()
    try:
        summary = _summary(source, counts, skipped, left_out, left_out_by_reason, human, out, fmt)
        return {**summary, "rows_cleaned": cleaned[0]} if cleaned[0] else summary
    finally:
        if human is not None:
            human.close()


def _summary(source: ItemFile, counts: dict[str, int], skipped: int, left_out: int, by_reason: dict[str, int],
             human: "_Pairs | None", out: str | Path | None, fmt: str) -> dict[str, Any]:
    if counts["items"] == 0 and skipped == 0:
        from .data import DataImportError
        if left_out:
            raise DataImportError(f"no row could be read ({left_out} left out)", file=source.path)
        raise DataImportError("the file has no items to score (a header, or blank lines, but no data rows)",
                              file=source.path)
    summary: dict[str, Any] = {"items": counts["items"], "skipped": skipped, "rows_left_out": left_out,
                               "rows_left_out_by_reason": by_reason, "missing": counts["missing"],
                               "missing_by_reason": counts["missing_by_reason"],
                               "refused_by_server": counts["refused"]}
    if human is not None and len(human):
        if out is not None:
            _read_written_scores(out, fmt, human)
        from . import metrics

        people, judged = human.arrays()
        resamples = bootstrap_resamples(len(people))
        summary["correlations"] = metrics.meta_evaluate(people, judged, n_bootstrap=resamples).to_dict()
        summary["correlation_resamples"] = resamples
    return summary


def _read_written_scores(out: str | Path, fmt: str, pairs: "_Pairs") -> None:
    """Every score in an output file (None where missing), this run's and the resumed ones, into ``pairs``."""
    batch: list[tuple[str, Any]] = []
    with open(out, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(f) if fmt == "csv" else (json.loads(line) for line in f if line.strip())
        for r in rows:
            value = r["score"]
            batch.append((_unquoted(str(r["id"])) if fmt == "csv" else str(r["id"]),
                          None if value in (None, "") else float(value)))
            if len(batch) >= RESUME_BATCH:
                pairs.add_scores(batch)
                batch = []
    pairs.add_scores(batch)
