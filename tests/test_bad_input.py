"""Twenty-plus malformed files through the app's import path: one clear message each, nothing stored changes."""

from __future__ import annotations

import hashlib
import json

import pytest

from judge_engine.data import DataImportError
from pages.ui.table_import import ImportColumns, import_table

HEADER = "id,source,output,score\n"
OK_ROWS = "1,an article,a summary,3\n2,an article,another,4\n"

# name, file content (bytes), import options, text the message must contain
CASES = [
    ("empty.csv", b"", {}, "empty"),
    ("blank.jsonl", b"\n \n", {}, "empty"),
    ("header_only.csv", HEADER.encode(), {}, "no data rows"),
    ("latin1.csv", (HEADER + "1,caf\xe9,x,3\n2,a,b,4\n").encode("latin-1"), {}, "UTF-8"),
    ("broken.jsonl", b'{"id": 1, "source": "a", "output": "b", "score": 3}\n{"id": 2, "source": ', {}, "row 2"),
    ("broken.json", b'[{"id": 1,,}]', {}, "invalid JSON"),
    ("scalar_line.jsonl", b'{"id": 1, "source": "a", "output": "b", "score": 3}\n[1, 2]\n', {}, "JSON object"),
    ("missing_col.csv", b"id,source,text,score\n1,a,b,3\n2,a,c,4\n", {}, "column 'output'"),
    ("misnamed_score.csv", (HEADER + OK_ROWS).encode(), {"scores": ("Score",)}, "column 'Score'"),
    ("word_score.csv", (HEADER + OK_ROWS + "3,a,c,good\n").encode(), {}, "row 4, column 'score'"),
    ("nan_score.csv", (HEADER + OK_ROWS + "3,a,c,nan\n").encode(), {}, "not a finite number"),
    ("inf_score.csv", (HEADER + OK_ROWS + "3,a,c,inf\n").encode(), {}, "not a finite number"),
    ("empty_score.csv", (HEADER + OK_ROWS + "3,a,c,\n").encode(), {}, "row 4, column 'score'"),
    ("comma_decimal.csv", (HEADER + OK_ROWS + '3,a,c,"3,5"\n').encode(), {}, "decimal separator"),
    ("out_of_range.csv", (HEADER + OK_ROWS + "3,a,c,9\n").encode(), {"aspect_ranges": {"score": (1, 5)}},
     "outside the range"),
    ("dup_ids.csv", (HEADER + OK_ROWS + "1,a,c,2\n").encode(), {}, "duplicate id"),
    ("empty_id.csv", (HEADER + OK_ROWS + ",a,c,2\n").encode(), {}, "id is empty"),
    ("empty_output.csv", (HEADER + OK_ROWS + "3,a,   ,2\n").encode(), {}, "output text is empty"),
    ("single_row.csv", (HEADER + "1,a,b,3\n").encode(), {}, "single row"),
    ("ragged.csv", (HEADER + OK_ROWS + "3,a\n").encode(), {}, "row 4"),
    ("dup_columns.csv", b"id,source,output,score,score\n1,a,b,3,4\n2,a,c,3,4\n", {}, "two columns"),
    ("missing_key.jsonl", (json.dumps({"id": 1, "source": "a", "output": "b", "score": 3}) + "\n"
                           + json.dumps({"id": 2, "source": "a", "output": "c"}) + "\n").encode(), {},
     "row 2, column 'score'"),
    ("no_scores.csv", (HEADER + OK_ROWS).encode(), {"scores": ()}, "score column"),
    ("spreadsheet.xlsx", b"PK\x03\x04", {}, "unsupported file type"),
    ("bad_range.csv", (HEADER + OK_ROWS).encode(), {"aspect_ranges": {"score": (5, 1)}}, "low < high"),
]


def snapshot(store) -> str:
    """A digest of everything the store holds that a failed import must not change."""
    parts = []
    for table in ("datasets", "samples", "splits", "runs", "scores", "criteria", "audit", "llm_cache"):
        rows = list(store.db.query(f"select * from {table} order by 1"))
        parts.append(json.dumps(rows, sort_keys=True, default=str))
    return hashlib.sha256("".join(parts).encode()).hexdigest()


def test_there_are_at_least_twenty_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("name, content, options, expected", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_gets_one_clear_message_and_nothing_changes(store, tiny_dataset, tmp_path, name, content,
                                                                   options, expected):
    store.save_dataset(tiny_dataset)
    store.update_aspect_definition("tiny", "quality", "Edited by a person.")
    before = snapshot(store)
    path = tmp_path / name
    path.write_bytes(content)
    options = dict(options)
    columns = ImportColumns(input="source", output="output", scores=options.pop("scores", ("score",)), id="id")
    with pytest.raises(DataImportError) as err:
        import_table(store, path, name="mine", columns=columns, **options)
    message = str(err.value)
    assert message.startswith(name) and expected in message, message
    assert "Traceback" not in message and len(message.splitlines()) == 1
    assert snapshot(store) == before and not store.has_dataset("mine")


def test_a_taken_name_is_refused_before_reading_and_keeps_the_stored_dataset(store, tiny_dataset, tmp_path):
    store.save_dataset(tiny_dataset)
    before = snapshot(store)
    path = tmp_path / "fine.csv"
    path.write_text(HEADER + OK_ROWS, encoding="utf-8")
    with pytest.raises(ValueError, match="already exists"):
        import_table(store, path, name="tiny",
                     columns=ImportColumns(input="source", output="output", scores=("score",)))
    assert snapshot(store) == before
