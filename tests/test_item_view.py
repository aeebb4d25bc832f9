"""An item's texts on the Annotate and Compare pages: labelled, and a text cut to fit says so."""

from streamlit.testing.v1 import AppTest


def _draw(input_text: str):
    from judge_engine.records import Aspect, Dataset, Sample
    from pages.ui.item_view import show_item_texts

    dataset = Dataset(name="d", task="t", aspects=(Aspect("q", 1, 5, "q"),),
                      samples=(Sample(id="a", group_id="g", input=input_text, output="short", human={"q": 3.0}),))
    show_item_texts(dataset, dataset.samples[0])


def _run(text: str) -> AppTest:
    at = AppTest.from_function(_draw, args=(text,))
    at.run(timeout=60)
    assert not at.exception
    return at


def test_a_text_cut_to_fit_says_how_much_of_it_is_shown():
    at = _run("x" * 5000)
    labels = [m.value for m in at.markdown]
    assert any("(the first 4,000 of 5,000 characters)" in v for v in labels), labels
    assert len(at.text[0].value) == 4000


def test_a_text_that_fits_is_shown_whole_without_a_note():
    at = _run("a short article")
    assert not any("characters)" in m.value for m in at.markdown)
    assert at.text[0].value == "a short article"
