"""Scoring with an exported judge on Ray Data (judge_engine.ray_scoring) gives the verdicts `score` gives.

On a local Ray instance with two workers against the stub server: 2,000 items (of 2,005 rows, five of which
both leave out) get the same records as the CLI's `score` (ids, scores, missing flags, criteria, explanations); an earlier run's ids are skipped; bad
input is refused before any request. The first test needs no Ray instance: a record becomes the Sample
`score`'s file reader makes of it."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest

from judge_engine import export
from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.llm import LLMConfig
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect

N_ROWS = 2005
"""Rows of the large file: 2,000 items to score and 5 with an empty output, which both paths leave out."""

# Ray Data's own deprecation notices about its settings, raised when it starts; nothing this code chooses
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")


def make_judge(high: int = 4):
    # the stub answers 1..5: on a 1-4 scale its 5s are out of range, so about a fifth of the verdicts are
    # missing and the missing flags are compared too, not only scores
    return DirectScoring().fit([], Aspect("quality", 1, high, "How good the response is"),
                               FitContext(llm=None, task=TaskInfo(task="dialogue response generation")))


def item(i: int) -> dict:
    """Item i, with the texts a real file has: control characters, padded or absent context, now and
    then an empty output (a row `score` leaves out), and ids that only stay ids as text ("00042")."""
    output = f"Sure, here is answer {i}."
    if i % 7 == 0:
        output += "\u001b[0m"  # an escape sequence pasted from a terminal: removed before the prompt
    if i % 500 == 3:
        output = "   "
    return {"id": f"{i:05d}", "input": f"User: question number {i}?", "output": output,
            "context": None if i % 3 else f"  fact {i}  "}


def write_utf16(path: Path) -> Path:
    path.write_text('{"id": "1", "input": "i", "output": "o"}\n', encoding="utf-16")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_out(directory: Path) -> dict[str, dict]:
    """The records of an output directory (JSON lines or Parquet) by id, criteria parsed back from text."""
    import pyarrow.parquet as pq

    rows = []
    for path in directory.iterdir():
        if path.suffix == ".parquet":
            rows += pq.read_table(path).to_pylist()
        elif path.suffix == ".json":
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {}
    for row in rows:
        assert row["id"] not in out, f"id {row['id']} written twice"
        out[row["id"]] = {**row, "criteria": json.loads(row["criteria"])}
    return out


def chat_requests(stub: StubServer) -> int:
    return stub.stats()["chat_requests"]


def actors_that_scored(ray, since: float) -> set[str]:
    """The Ray workers that ran a batch of the scoring stage since ``since`` (seconds), by Ray's timeline."""
    return {e["tid"] for e in ray.timeline() if "ScoreBatches)).submit" in str(e.get("cat"))
            and float(e.get("ts", 0)) >= since * 1e6}


def cached_calls(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return conn.execute("select count(*) from llm_cache").fetchone()[0]


def test_a_record_becomes_the_sample_score_reads_from_the_same_line(tmp_path):
    from judge_engine.data import RowColumns
    from judge_engine.items import ItemFile
    from judge_engine.ray_scoring import record_sample

    records = [item(i) for i in range(40)] + [
        {"id": 17, "input": None, "output": 3.5, "context": "   "},  # numbers and nulls, as score reads them
        {"id": "  x1 ", "input": {"turns": ["hi", "there"]}, "output": "ok\x00", "context": "c"},
        {"id": "  ", "input": "i", "output": "o", "context": None},  # empty id: left out
        {"id": "x2", "input": "i", "context": None},  # no output at all: left out
    ]
    path = write_jsonl(tmp_path / "items.jsonl", records)
    left_out: list = []
    read = [s for chunk in ItemFile(path, id_col="id", context_col="context").chunks(16, left_out.append)
            for s in chunk]
    columns = RowColumns(input_col="input", output_col="output", id_col="id", context_col="context")
    made, refused = [], 0
    for record in records:
        try:
            made.append(record_sample(record, columns))
        except ValueError:
            refused += 1
    assert refused == len(left_out) == 3  # item 3's blank output, the empty id, the absent output
    assert made == read and any(s.output == "ok" for s in made) and any("\u001b" in r["output"] for r in records)


def test_an_earlier_output_counts_its_whole_lines_and_only_for_the_same_judge(tmp_path):
    from judge_engine.ray_scoring import JUDGE_MARK, done_ids

    judge = make_judge()
    cut = tmp_path / "cut"
    cut.mkdir()
    (cut / JUDGE_MARK).write_text(export.judge_fingerprint(judge) + "\n")
    (cut / "a_000000.json").write_text('{"id":"00001","score":2.0}\n{"id":"00002","score":null}\n{"id":"000')
    (cut / "a_000001.json").write_text('{"id":"00004","score":1.0}\n')
    with pytest.warns(UserWarning, match="cut off"):
        assert done_ids(cut, judge) == {"00001", "00002", "00004"}
    with pytest.raises(ValueError, match="not by this judge"):
        done_ids([cut], make_judge(high=5))
    (tmp_path / "bare").mkdir()
    with pytest.raises(ValueError, match="not written by score_files"):
        done_ids(tmp_path / "bare", judge)


def test_a_stopped_output_directory_is_repaired_and_resumed_by_the_same_judge_only(tmp_path):
    from judge_engine.ray_output import JUDGE_MARK, resume_output

    judge, said = make_judge(), []
    out = tmp_path / "out"
    assert resume_output(out, judge, "jsonl") == frozenset()  # new: nothing done, nothing written yet
    out.mkdir()
    (out / JUDGE_MARK).write_text(export.judge_fingerprint(judge) + "\njsonl\n")
    (out / "a_000000.json").write_text('{"id":"1","missing":false}\n{"id":"2","missing":true}\n')
    (out / "a_000001.json").write_bytes('{"id":"3","missing":false}\n{"id":"4","expl":"caf\u00e9'.encode()[:-1])
    (out / "b_000000.parquet").write_bytes(b"PAR1 cut")
    with pytest.warns(UserWarning) as caught:
        assert resume_output(out, judge, "jsonl", notice=said.append) == {"1", "2", "3"}
    assert any("cut by the stop" in str(w.message) for w in caught) and any("_cut-" in str(w.message) for w in caught)
    assert (out / "a_000001.json").read_bytes() == b'{"id":"3","missing":false}\n'  # the cut line only
    assert (out / "_cut-b_000000.parquet").exists() and not (out / "b_000000.parquet").exists()  # set aside, kept
    assert said == ["resuming: 3 items are already in " + str(out) + "; scoring the rest"]
    assert resume_output(out, judge, "jsonl", retry_missing=True) == {"1", "3"}
    assert (out / "a_000000.json").read_text() == '{"id":"1","missing":false}\n'
    with pytest.raises(ValueError, match="as jsonl; this run would add parquet"):
        resume_output(out, judge, "parquet")
    with pytest.raises(ValueError, match="not by this judge"):
        resume_output(out, make_judge(high=5), "jsonl")
    assert (out / "a_000000.json").read_text() == '{"id":"1","missing":false}\n', "a refused resume changes nothing"


@pytest.fixture(scope="module")
def stub():
    with StubServer() as server:
        yield server


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module: two CPUs (two workers), a small object store, no dashboard."""
    import ray  # the ray extra: requirements-dev.lock installs it, so a missing one fails here, never skips
    import ray.data

    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_DEDUP_LOGS", "0")  # each worker's "skipped:" lines shown as they are
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2, logging_level="warning")
        ray.data.DataContext.get_current().enable_progress_bars = False
        try:
            yield ray
        finally:
            ray.shutdown()


def stub_llm(stub: StubServer) -> LLMConfig:
    return LLMConfig(backend="openai", model=MODEL, base_url=stub.base_url, concurrency=16)


@pytest.mark.server
def test_two_thousand_items_on_two_workers_get_the_verdicts_score_gives(tmp_path, stub, local_ray, capsys):
    from judge_engine.__main__ import main
    from judge_engine.ray_scoring import score_files

    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    items = write_jsonl(tmp_path / "items.jsonl", [item(i) for i in range(N_ROWS)])
    start = time.perf_counter()
    assert main(["score", str(judge_path), str(items), "--out", str(tmp_path / "cli.jsonl"), "--backend", "openai",
                 "--model", MODEL, "--base-url", stub.base_url, "--id-col", "id", "--context-col", "context",
                 "--db", str(tmp_path / "cli-cache.db"), "--quiet"]) == 0
    cli_seconds = time.perf_counter() - start
    by_cli = {}
    for line in (tmp_path / "cli.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_cli[record["id"]] = record

    before, start = chat_requests(stub), time.perf_counter()
    out = score_files(items, judge_path, tmp_path / "ray-out", llm=stub_llm(stub), context_col="context",
                      workers=2, cache_dir=tmp_path / "worker-caches")["out"]
    seconds = time.perf_counter() - start
    by_ray = read_out(out)

    assert len(by_cli) == 2000 and set(by_ray) == set(by_cli)
    agree = sum(by_ray[i] == by_cli[i] for i in by_cli)
    missing = sum(r["missing"] for r in by_cli.values())
    with capsys.disabled():
        print(f"\nRay, 2 workers: {len(by_ray)} items in {seconds:.1f}s (score: {cli_seconds:.1f}s); {agree} of "
              f"{len(by_cli)} records the same as score's; {missing} missing in both")
    assert agree == len(by_cli), [(sorted(by_cli[i].items()), sorted(by_ray[i].items())) for i in by_cli if by_ray[i] != by_cli[i]][:2]
    assert 0 < missing < len(by_cli) and all(r["score"] is None for r in by_ray.values() if r["missing"])
    assert chat_requests(stub) - before == len(by_cli), "one request per item: none skipped, none sent twice"
    caches = sorted((tmp_path / "worker-caches").glob("worker-*.db"))
    assert len(caches) == 1, f"the workers of one host share its cache file: {caches}"
    assert cached_calls(caches[0]) == len(by_cli)
    assert (out / "_JUDGE").read_text().split() == [export.judge_fingerprint(make_judge()), "jsonl"]


@pytest.mark.server
def test_a_cut_run_is_finished_into_a_new_directory_skipping_the_ids_it_wrote(tmp_path, stub, local_ray):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from judge_engine.ray_scoring import score_files

    judge = make_judge()
    judge_path = tmp_path / "judge.json"
    judge_path.write_text(judge.to_json(), encoding="utf-8")
    rows = [item(i) for i in range(10, 40)]  # none of them left out
    first_part = tmp_path / "first"
    first_part.mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:12]), first_part / "part-0.parquet")
    everything = tmp_path / "all"  # a directory of two Parquet files
    everything.mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:15]), everything / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[15:]), everything / "part-1.parquet")
    options = {"llm": stub_llm(stub), "context_col": "context", "fmt": "parquet", "workers": 1}  # few items

    cut = score_files(first_part, judge_path, tmp_path / "run-1", **options)["out"]  # as if stopped after 12 items
    before = chat_requests(stub)
    rest = score_files(everything, judge_path, tmp_path / "run-2", skip_ids_from=cut, **options)["out"]
    first, second = read_out(cut), read_out(rest)
    assert set(first) == {r["id"] for r in rows[:12]} and set(second) == {r["id"] for r in rows[12:]}
    assert chat_requests(stub) - before == len(rows) - 12, "the 12 ids of the cut run were not asked again"
    # the same job again into its own directory goes on where it stopped: the 18 others are added, from the cache
    resumed = score_files(everything, judge_path, cut, **options)
    assert (resumed["items"], resumed["skipped"]) == (len(rows) - 12, 12) and set(read_out(cut)) == set(first) | set(second)
    with pytest.raises(ValueError, match="as parquet; this run would add jsonl"):
        score_files(everything, judge_path, cut, **{**options, "fmt": "jsonl"})

    other = tmp_path / "other-judge.json"
    other.write_text(make_judge(high=5).to_json(), encoding="utf-8")
    before = chat_requests(stub)
    with pytest.raises(ValueError, match="not by this judge"):
        score_files(everything, other, tmp_path / "run-3", skip_ids_from=[cut, rest], **options)
    with pytest.raises(ValueError, match="not by this judge"):
        score_files(everything, other, cut, **options)
    assert chat_requests(stub) == before, "refused before any request"


@pytest.mark.server
def test_bad_input_is_refused_before_any_request(tmp_path, stub, local_ray):
    from judge_engine.ray_scoring import score_files

    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    items = write_jsonl(tmp_path / "items.jsonl", [item(i) for i in range(1, 6)])
    before = chat_requests(stub)
    with pytest.raises(ValueError, match=r"column 'fact': no such column \(mapped as context\); the first record's "
                                         r"keys: 'id', 'input', 'output', 'context'"):  # score's own words
        score_files(items, judge_path, tmp_path / "out", llm=stub_llm(stub), context_col="fact")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist([item(i) for i in range(1, 6)]), table)
    with pytest.raises(ValueError, match=r"context_col='fact'.*their columns: id, input, output, context"):
        score_files(table, judge_path, tmp_path / "out", llm=stub_llm(stub), context_col="fact")
    card = {"format": export.CARD_FORMAT, "version": export.CARD_VERSION + 1, "judge": make_judge().to_dict()}
    with pytest.raises(ValueError, match="version"):
        score_files(items, card, tmp_path / "out", llm=stub_llm(stub))
    with pytest.raises(ValueError, match="Ray reads items from"):
        score_files(write_jsonl(tmp_path / "items.txt", []), judge_path, tmp_path / "out", llm=stub_llm(stub))
    with pytest.raises(ValueError, match="UTF-16"):
        score_files(write_utf16(tmp_path / "wide.jsonl"), judge_path, tmp_path / "out", llm=stub_llm(stub))
    assert chat_requests(stub) - before == 0
    assert not (tmp_path / "out").exists(), "nothing written for a run that never started"


@pytest.mark.server
def test_one_parquet_file_is_split_so_that_both_workers_get_items(tmp_path, stub, local_ray):
    # a single Parquet file was one block, so one actor ("received 1 input(s)"): workers=2 ran as one
    import pyarrow as pa
    import pyarrow.parquet as pq

    from judge_engine.ray_scoring import score_files

    items = tmp_path / "items.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": f"{i:05d}", "input": f"q {i}", "output": f"answer {i}"}
                                         for i in range(400)]), items)
    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    since = time.time()
    out = score_files(items, judge_path, tmp_path / "out", llm=stub_llm(stub), workers=2, fmt="parquet",
                      cache_dir=tmp_path / "cache")["out"]
    files = [p for p in out.iterdir() if p.suffix == ".parquet"]
    assert len(files) >= 2, "one block per output file: the input was not split"
    assert len(read_out(out)) == 400
    # split is not enough: the first actor up took all four blocks (up to 4 in flight each) while the other started,
    # and sent all the calls (run as a user, 600 items: 600 and 0); Ray's timeline names the actor of each batch
    assert len(actors_that_scored(local_ray, since)) == 2
    assert cached_calls(tmp_path / "cache" / f"worker-{socket.gethostname()}.db") == 400


@pytest.mark.server
def test_an_item_the_server_fails_on_is_missing_with_the_same_reason_on_ray_as_in_score(tmp_path, local_ray):
    # before: one bad item failed the whole Ray job (after 779 paid calls, 0 output files)
    from judge_engine.__main__ import main
    from judge_engine.ray_scoring import score_files

    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    rows = [{"id": f"b{i:04d}", "input": f"question {i}", "output": f"answer {i}"} for i in range(300)]
    rows[123]["output"] = "CRASH the tokenizer"
    items = write_jsonl(tmp_path / "items.jsonl", rows)
    with StubServer(fail_containing="CRASH") as failing:
        assert main(["score", str(judge_path), str(items), "--out", str(tmp_path / "cli.jsonl"), "--backend",
                     "openai", "--model", MODEL, "--base-url", failing.base_url, "--retries", "0",
                     "--db", str(tmp_path / "cli-cache.db"), "--quiet"]) == 0
        by_cli = {r["id"]: r for r in map(json.loads, (tmp_path / "cli.jsonl").read_text().splitlines())}
        llm = LLMConfig(backend="openai", model=MODEL, base_url=failing.base_url, concurrency=16, max_retries=0)
        by_ray = read_out(score_files(items, judge_path, tmp_path / "ray-out", llm=llm, workers=2)["out"])
    assert set(by_ray) == set(by_cli) == {r["id"] for r in rows}
    bad = by_ray["b0123"]
    assert bad["missing"] and "server error (500)" in bad["missing_reason"] and "tokenizer crashed" in bad["missing_reason"]
    assert all(by_ray[i] == by_cli[i] for i in by_cli), [i for i in by_cli if by_ray[i] != by_cli[i]][:3]


@pytest.mark.server
def test_more_workers_than_the_cluster_places_are_capped_with_one_line(tmp_path, stub, local_ray, capfd):
    # before: workers=4 on 2 CPUs held both CPUs in actors, the read task waited for one: 0 rows for 5 minutes
    from judge_engine.ray_scoring import score_files

    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": f"w{i}", "input": "q", "output": f"a {i}"} for i in range(40)])
    out = score_files(items, judge_path, tmp_path / "out", llm=stub_llm(stub), workers=4)["out"]
    assert len(read_out(out)) == 40
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("workers: ")]
    assert len(said) == 1 and "2 instead of 4" in said[0], said


def damaged_items(path: Path) -> Path:
    """60 lines, 56 to score: an item the stub always answers 500, one it refuses with a 400 (over its context), a line that is
    not JSON, an empty id, a repeated id and a line that is not UTF-8."""
    lines = [json.dumps({"id": f"d{i:03d}", "input": f"question {i}", "output": f"answer {i}"}).encode()
             for i in range(60)]
    lines[11] = json.dumps({"id": "d011", "input": "q", "output": "CRASH the tokenizer"}).encode()
    lines[23] = json.dumps({"id": "d023", "input": "q", "output": "long " * 2000}).encode()
    lines[30] = b'{"id": "d030", "input": "q", "output": not json}'
    lines[41] = json.dumps({"id": "", "input": "q", "output": "a"}).encode()
    lines[42] = lines[40]
    lines[50] = b'{"id": "d050", "input": "q", "output": "caf\xe9"}'
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def score_cli(judge_path: Path, items: Path, out: Path, stub: StubServer, capfd, *extra: str) -> tuple[dict, list, dict]:
    """``score`` on ``items``: its records by id, the rows it named and its summary."""
    from judge_engine.__main__ import main

    capfd.readouterr()
    assert main(["score", str(judge_path), str(items), "--out", str(out), "--backend", "openai", "--model", MODEL,
                 "--base-url", stub.base_url, "--retries", "0", "--db", str(out.with_suffix(".db")), "--quiet",
                 *extra]) == 0
    err = capfd.readouterr().err
    named = [line for line in err.splitlines() if line.startswith(("skipped: ", "warning: "))]
    records = {r["id"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    return records, named, json.loads(err[err.rindex("\n{\n") + 1:])


def score_ray(judge_path: Path, items: Path, out: Path, stub: StubServer, capfd, **extra) -> tuple[dict, list, dict]:
    """``score_files`` on ``items``: its records by id, the rows it named and its summary."""
    from judge_engine.ray_scoring import score_files

    capfd.readouterr()
    llm = LLMConfig(backend="openai", model=MODEL, base_url=stub.base_url, concurrency=8, max_retries=0)
    result = score_files(items, judge_path, out, llm=llm, workers=2, batch_size=16,
                         cache_dir=out.with_name(out.name + "-cache"), **extra)
    named = [line for line in capfd.readouterr().err.splitlines() if line.startswith(("skipped: ", "warning: "))]
    return read_out(out), named, result


@pytest.mark.server
def test_bad_items_and_bad_lines_come_out_of_ray_as_out_of_score(tmp_path, local_ray, capfd):
    # before: one line that was not JSON failed the whole Ray read, and so did a 400 on one item (0 output files)
    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    items = damaged_items(tmp_path / "items.jsonl")
    with StubServer(fail_containing="CRASH", refuse_longer_than=5000) as failing:
        by_cli, cli_named, cli_summary = score_cli(judge_path, items, tmp_path / "cli.jsonl", failing, capfd)
        by_ray, ray_named, ray_summary = score_ray(judge_path, items, tmp_path / "ray-out", failing, capfd)
    assert len(by_cli) == 56 and set(by_ray) == set(by_cli)
    assert [i for i in by_cli if by_ray[i] != by_cli[i]] == []
    for bad, said in (("d011", "server error (500)"), ("d023", "maximum context length")):
        assert by_ray[bad]["missing"] and said in by_ray[bad]["missing_reason"], by_ray[bad]
    # the same rows named in the same words (a repeated id is named at its chunk's end, so the order follows the chunks)
    assert sorted(ray_named) == sorted(cli_named) and len(cli_named) == 4, cli_named
    assert any("row 31" in line and "invalid JSON" in line for line in ray_named)
    for key in ("items", "skipped", "rows_left_out", "rows_left_out_by_reason", "missing"):
        assert ray_summary[key] == cli_summary[key], key

    # the server mended (at the same address, so the answers cached are found): --retry-missing scores the missing
    # items again in both, and pays only for the two that failed (the out-of-range ones are answered from the cache)
    with StubServer(port=failing.port) as healthy:
        before = chat_requests(healthy)
        by_cli, _, cli_summary = score_cli(judge_path, items, tmp_path / "cli.jsonl", healthy, capfd, "--retry-missing")
        cli_requests, before = chat_requests(healthy) - before, chat_requests(healthy)
        by_ray, _, ray_summary = score_ray(judge_path, items, tmp_path / "ray-out", healthy, capfd, retry_missing=True)
        ray_requests = chat_requests(healthy) - before
    assert not by_ray["d011"]["missing"] and set(by_ray) == set(by_cli)
    assert [i for i in by_cli if by_ray[i] != by_cli[i]] == []
    assert ray_requests == 2 and cli_requests == 2, (ray_requests, cli_requests)
    for key in ("items", "skipped", "missing"):
        assert ray_summary[key] == cli_summary[key], key


KILLED_DRIVER = """
import sys
import ray
from judge_engine.llm import LLMConfig
from judge_engine.ray_scoring import score_files
ray.init(address=sys.argv[1], logging_level="warning")
score_files(sys.argv[2], sys.argv[3], sys.argv[4], workers=2, batch_size=16, cache_dir=sys.argv[6],
            llm=LLMConfig(backend="openai", model="stub-model", base_url=sys.argv[5], concurrency=4))
"""


def settled(stub: StubServer, quiet_s: float = 3.0, limit_s: float = 120.0) -> int:
    """The stub's request count once nothing more arrives for ``quiet_s`` (a killed job's actors are gone)."""
    last, since, start = chat_requests(stub), time.monotonic(), time.monotonic()
    while time.monotonic() - since < quiet_s and time.monotonic() - start < limit_s:
        time.sleep(0.5)
        now = chat_requests(stub)
        if now != last:
            last, since = now, time.monotonic()
    return last


@pytest.mark.server
def test_a_killed_ray_job_run_again_goes_on_where_it_stopped_and_pays_each_item_once(tmp_path, local_ray):
    import os
    import signal
    import subprocess
    import sys

    from judge_engine.ray_scoring import score_files

    n = 400
    judge_path = tmp_path / "judge.json"
    judge_path.write_text(make_judge().to_json(), encoding="utf-8")
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": f"k{i:04d}", "input": f"q {i}", "output": f"answer {i}"}
                                                   for i in range(n)])
    out, cache = tmp_path / "out", tmp_path / "cache"
    db = cache / f"worker-{socket.gethostname()}.db"
    with StubServer(hang_containing="*", hang_seconds=0.05) as stub:  # slow enough to be stopped mid-run
        driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, local_ray.get_runtime_context().gcs_address,
                                   str(items), str(judge_path), str(out), stub.base_url, str(cache)],
                                  cwd=Path(__file__).parents[1], stderr=subprocess.DEVNULL)
        try:
            while driver.poll() is None and not any(p.stat().st_size for p in out.glob("*.json")):
                time.sleep(0.02)  # until the first verdicts are written
            os.kill(driver.pid, signal.SIGKILL)  # the driver, as a cancelled job or a lost head node
        finally:
            driver.wait()
        paid_before = settled(stub)
        cached, written = cached_calls(db), len(read_out(out))
        assert 0 < written and cached < n, "stopped mid-run, after some verdicts were written"
        start = time.perf_counter()
        resumed = score_files(items, judge_path, out, llm=stub_llm(stub), workers=2, batch_size=16, cache_dir=cache)
        seconds = time.perf_counter() - start
        paid_again = chat_requests(stub) - paid_before
        everything = read_out(out)  # each id once
        whole = read_out(score_files(items, judge_path, tmp_path / "uncut", llm=stub_llm(stub), workers=2,
                                     batch_size=16, cache_dir=cache)["out"])
        assert chat_requests(stub) - paid_before == paid_again, "the uninterrupted run found every answer cached"
    print(f"\nkilled after {paid_before} requests: {written} verdicts written, {cached} answers cached; the re-run "
          f"asked {paid_again} (of {n}), skipped {resumed['skipped']}, in {seconds:.1f} s")
    assert everything == whole and len(whole) == n
    assert resumed["skipped"] == written and resumed["items"] == n - written
    assert paid_again == n - cached, "every answer of the stopped run was found, every other item asked once"
