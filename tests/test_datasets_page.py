"""AppTest of the Datasets page's aspect-definition editor with two sessions editing the same definition."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from judge_engine.store import Store

APP = Path(__file__).resolve().parents[1] / "app.py"


def _open() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page("pages/datasets.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _save(at: AppTest) -> AppTest:
    next(b for b in at.button if b.label == "Save definitions").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _errors(at: AppTest) -> list[str]:
    return [e.value.replace("\\", "") for e in at.error]


def test_a_stale_definition_edit_is_refused_with_a_message_and_the_other_edit_kept(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    a, b = _open(), _open()  # two sessions open the same definition
    key = "datasets_def_tiny_quality"
    assert a.text_area(key=key).value == b.text_area(key=key).value == "How good it is."

    a.text_area(key=key).set_value("A: how complete and correct the summary is.")
    _save(a)
    assert store.load_dataset("tiny").aspect("quality").definition == "A: how complete and correct the summary is."

    b.text_area(key=key).set_value("B: how short the summary is.")
    _save(b)
    [message] = _errors(b)
    assert "changed by someone else" in message and "A: how complete and correct" in message, message
    assert store.load_dataset("tiny").aspect("quality").definition == "A: how complete and correct the summary is."
    assert b.text_area(key=key).value == "B: how short the summary is.", "the refused text stays in the box"
    assert [e["actor"] for e in store.audit_log(entity="aspect")] == ["user"]

    # B has now been shown A's text: saving again replaces it knowingly
    _save(b)
    assert not _errors(b)
    assert store.load_dataset("tiny").aspect("quality").definition == "B: how short the summary is."
    assert len(store.audit_log(entity="aspect")) == 2


def test_an_untouched_editor_shows_the_text_someone_else_saved(db, tiny_dataset):
    store = Store(db)
    store.save_dataset(tiny_dataset)
    a, b = _open(), _open()
    key = "datasets_def_tiny_quality"
    a.text_area(key=key).set_value("Edited by A.")
    _save(a)
    b.run()  # B typed nothing: its editor now shows A's text, and saving it changes nothing
    assert b.text_area(key=key).value == "Edited by A."
    _save(b)
    assert not _errors(b) and any("No definition changed" in i.value for i in b.info)
    assert store.load_dataset("tiny").aspect("quality").definition == "Edited by A."


# --------------------------------------------------------------------------- upload: dialect and duplicates


def _by_label(widgets, prefix: str):
    matches = [w for w in widgets if w.label.startswith(prefix)]
    assert matches, f"no widget labelled {prefix!r}; have {[w.label for w in widgets]}"
    return matches[0]


def _texts(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def _upload(at: AppTest, filename: str, content: bytes) -> AppTest:
    at.switch_page("pages/datasets.py").run()
    at.file_uploader[0].set_value((filename, content, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


EUROPEAN = "source;output;score\nThe cat sat.;A cat, sitting.;3,5\nDogs bark.;Dogs;4\nRain today.;It rains.;2,5\n"


def test_upload_shows_the_detected_dialect_and_imports_decimal_commas(db):
    at = _upload(_open(), "european.csv", EUROPEAN.encode())
    assert any("Detected separator: semicolon, quote: double quote, decimal mark: comma" in c
               for c in _texts(at.caption)), _texts(at.caption)
    assert _by_label(at.selectbox, "Separator").value == ";"
    assert _by_label(at.selectbox, "Decimal mark").value == ","
    preview = next(d.value for d in at.dataframe if "output" in d.value.columns)
    assert list(preview.columns) == ["source", "output", "score"] and preview["score"].iloc[0] == "3,5"
    assert _by_label(at.multiselect, "Human score").value == ["score"]  # 3,5 reads as a number
    _by_label(at.text_input, "Dataset name").set_value("european").run()
    at.button(key="datasets_import_file").click().run()
    assert not at.exception and not at.error, _texts(at.error)
    scores = [s.human["score"] for s in Store(db).load_dataset("european").samples]
    assert scores == [3.5, 4.0, 2.5]


def test_dialect_override_changes_the_preview_and_refuses_an_impossible_one(db):
    at = _upload(_open(), "european.csv", EUROPEAN.encode())
    _by_label(at.selectbox, "Separator").set_value(",").run()
    # a comma separator with the detected decimal comma: impossible, said plainly, nothing previewed
    assert any("decimal comma needs a separator other than the comma" in e for e in _texts(at.error))
    assert not any("source;output;score" in d.value.columns for d in at.dataframe)
    _by_label(at.selectbox, "Decimal mark").set_value(".").run()
    # read as the user asked: the header is one cell, the first row (with a comma in its text) three
    assert any("row 2: has 3 cells but the header has 1 columns" in e and "separated by a comma" in e
               for e in _texts(at.error)), _texts(at.error)
    assert not at.exception
    _by_label(at.selectbox, "Separator").set_value(";").run()
    preview = next(d.value for d in at.dataframe if "output" in d.value.columns)
    assert list(preview.columns) == ["source", "output", "score"]


DUPLICATES = ("source,output,score\n"
              "Same article.,Same summary.,2\n"
              "Other article.,Other summary.,5\n"
              "Same article.,Same summary.,4\n"
              "Third.,Third summary.,1\n")


def test_duplicates_are_reported_with_rows_and_can_be_merged(db):
    at = _upload(_open(), "dups.csv", DUPLICATES.encode())
    warnings = _texts(at.warning)
    assert any("1 item(s) appear more than once with the same input and output (rows 2, 4)" in w
               for w in warnings), warnings
    choice = _by_label(at.radio, "Duplicate items")
    assert choice.value == "keep" and choice.options == [
        "Keep them as separate samples",
        "Merge each into one sample (scores averaged, each row's score kept as an annotator's)"]
    choice.set_value("merge").run()
    _by_label(at.text_input, "Dataset name").set_value("dups").run()
    at.button(key="datasets_import_file").click().run()
    assert not at.exception and not at.error, _texts(at.error)
    samples = Store(db).load_dataset("dups").samples
    assert len(samples) == 3
    merged = samples[0]
    assert merged.human["score"] == 3.0 and merged.annotators == {"score": [2.0, 4.0]}
    assert any("merged into one sample each" in w for w in _texts(at.warning)), _texts(at.warning)


def test_duplicates_kept_apart_by_default(db):
    at = _upload(_open(), "dups.csv", DUPLICATES.encode())
    _by_label(at.text_input, "Dataset name").set_value("kept").run()
    at.button(key="datasets_import_file").click().run()
    assert not at.exception and not at.error, _texts(at.error)
    assert len(Store(db).load_dataset("kept").samples) == 4
    assert any("kept as separate samples" in w for w in _texts(at.warning)), _texts(at.warning)


def test_column_guesses_never_map_one_column_to_two_roles(db):
    """`src`/`out` used to map src to both input and output: `out` matched no output name, and the required
    output field fell back to the first column."""
    at = _upload(_open(), "short.csv", b"src,out,score\nThe cat sat.,A cat sits.,3\nDogs bark.,Dogs.,4\n")
    assert _by_label(at.selectbox, "Input").value == "src"
    assert _by_label(at.selectbox, "Output").value == "out"
    at = _upload(_open(), "odd.csv", b"a,b,score\nThe cat sat.,A cat sits.,3\nDogs bark.,Dogs.,4\n")
    assert _by_label(at.selectbox, "Input").value != _by_label(at.selectbox, "Output").value
