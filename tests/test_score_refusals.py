"""`score` against a server that refuses requests: one item refused is that item missing with the server's reason,
every item refused (a bad key, a wrong model, every prompt refused) stops the job with one line.

Against the stub server (judge_engine.bench.stub_server) in a child process, through the CLI as a user runs it.
Before, a 400 once the structured-reply format was settled ended in `IndexError: tuple index out of range`
(openai_backend.py) with a traceback, and every re-run stopped at the same chunk."""

from __future__ import annotations

import json

import pytest

from judge_engine.__main__ import main
from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.methods.base import FitContext
from judge_engine.methods.direct import DirectScoring
from judge_engine.prompting import TaskInfo
from judge_engine.records import Aspect

LONG = 3000
"""Characters of prompt over which the stub answers 400 (its 'context')."""

pytestmark = pytest.mark.server


def _judge(tmp_path):
    path = tmp_path / "judge.json"
    judge = DirectScoring().fit([], Aspect("quality", 1, 4, "How good the reply is."),
                                FitContext(llm=None, task=TaskInfo(task="dialogue")))
    path.write_text(judge.to_json(), encoding="utf-8")
    return path


def _items(tmp_path, n, long_every=0):
    path = tmp_path / "items.jsonl"
    rows = [{"id": f"i{k:03d}", "input": f"source {k}",
             "output": ("very long reply " * 400 if long_every and k % long_every == 7 else f"reply {k}")}
            for k in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


def _score(tmp_path, stub, items, out, concurrency=8):
    return main(["score", str(_judge(tmp_path)), str(items), "--out", str(out), "--backend", "openai", "--model", MODEL,
                 "--base-url", stub.base_url, "--id-col", "id", "--db", str(tmp_path / "cache.db"), "--quiet",
                 "--concurrency", str(concurrency)])


def _errors(capsys) -> list[str]:
    """Standard error's lines without the expected cost ``score`` prints before its first call (cli.md)."""
    return [x for x in capsys.readouterr().err.strip().splitlines()
            if not x.startswith("score: expected before any cache hit")]


def test_a_prompt_over_the_context_is_that_item_missing_with_the_servers_reason_and_the_job_goes_on(tmp_path,
                                                                                                    capsys):
    items, rows = _items(tmp_path, 600, long_every=50)  # 12 long items, spread over three chunks
    long_ids = {r["id"] for r in rows if len(r["output"]) > 100}
    out = tmp_path / "scores.jsonl"
    with StubServer(refuse_longer_than=LONG) as stub:
        assert _score(tmp_path, stub, items, out) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "IndexError" not in err
    summary = json.loads(err[err.index("{"):])
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [w["id"] for w in written] == [r["id"] for r in rows], "every item written once, in input order"
    refused = {w["id"]: w for w in written if w["missing"] and "refused" in w["missing_reason"]}
    assert set(refused) == long_ids and len(long_ids) == 12
    assert all("maximum context length" in w["missing_reason"] and "(400)" in w["missing_reason"]
               for w in refused.values())
    assert all(w["score"] is None for w in refused.values())
    assert summary["refused_by_server"] == 12 and summary["items"] == 600 and summary["missing"] >= 12
    assert sum(1 for w in written if w["score"] is not None) == 600 - summary["missing"]


@pytest.mark.parametrize("status, said", [(401, "rejected the API key"), (404, "was not found")])
def test_a_bad_key_or_a_wrong_model_stops_the_job_with_one_line_and_writes_nothing(tmp_path, capsys, status, said):
    items, _ = _items(tmp_path, 40)
    out = tmp_path / "scores.jsonl"
    with StubServer(status_for_all=status) as stub:
        assert _score(tmp_path, stub, items, out) == 2
    err = _errors(capsys)
    assert len(err) == 1 and err[0].startswith("error: ") and said in err[0], err
    assert not out.exists() or out.read_text(encoding="utf-8") == ""


def test_every_prompt_refused_stops_after_a_run_of_them_and_a_rerun_tries_them_again(tmp_path, capsys):
    from judge_engine.score_files import REFUSED_IN_A_ROW

    items, _ = _items(tmp_path, 100)
    out = tmp_path / "scores.jsonl"
    with StubServer(refuse_longer_than=10) as stub:  # every prompt is longer: a setting, not an item
        assert _score(tmp_path, stub, items, out) == 2
    err = _errors(capsys)
    assert len(err) == 1 and f"refused {REFUSED_IN_A_ROW} items in a row" in err[0], err
    assert not out.exists() or out.read_text(encoding="utf-8") == "", "no refused item written: a re-run tries them"
    with StubServer() as stub:  # the setting fixed: the same command scores everything
        assert _score(tmp_path, stub, items, out) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 100


def test_the_summary_counts_every_429_the_server_sent_the_clients_own_retries_included(tmp_path, capsys):
    # rate_limited.times counted 1 where the stub had answered 555 requests with 429 (the client's retries unseen)
    items, _ = _items(tmp_path, 300)
    out = tmp_path / "scores.jsonl"
    with StubServer(rate_limit_every=4) as stub:
        assert _score(tmp_path, stub, items, out) == 0
        stats = stub.stats()
    err = capsys.readouterr().err
    summary = json.loads(err[err.index("{"):])
    sent_429 = stats["chat_requests"] - stats["answered"]
    assert sent_429 >= 75 and summary["rate_limited"]["answers_429"] == sent_429
    assert len(out.read_text(encoding="utf-8").splitlines()) == 300
