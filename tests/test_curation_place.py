"""AppTests that curation keeps its place across saves (issue 23, point 4).

After a Save the page reruns. A person curating a list must come back to the same view (tab), with the item
they just saved still open and no edit popover left open, so the next edit is one click away and the list
stays where they were reading it.
"""

from __future__ import annotations

from streamlit.proto.Block_pb2 import Block as BlockProto
from streamlit.testing.v1 import AppTest

from judge_engine.store import Store
from tests.test_hypoeval_page import finished_run as hypoeval_run
from tests.test_hypoeval_page import open_page as open_hypoeval


def blocks(at: AppTest, kind: str) -> list:
    """Every container of ``kind`` (a BlockProto field: "tab_container", "expandable", "popover") in page order."""
    return [n for n in at._tree if isinstance(getattr(n, "proto", None), BlockProto)
            and n.proto.WhichOneof("type") == kind]


def selected_tab(at: AppTest, labels: list[str]) -> str:
    """Label of the tab the server draws open in the tab set whose labels are ``labels``."""
    for container in blocks(at, "tab_container"):
        tabs = [c.label for c in container.children.values() if getattr(c, "type", "") == "tab"]
        if tabs == labels:
            return tabs[container.proto.tab_container.default_tab_index]
    raise AssertionError(f"no tab set {labels}")


def open_expanders(at: AppTest) -> list[str]:
    return [e.label for e in at.expander if e.proto.expanded]


# --------------------------------------------------------------------------- HypoEval
HYPOEVAL_TABS = ["Results", "Curate and re-score"]


def test_hypoeval_save_stays_on_the_curation_tab_with_the_saved_hypothesis_open(db, tiny_dataset):
    run_id = hypoeval_run(db, tiny_dataset)
    at = open_hypoeval()
    assert selected_tab(at, HYPOEVAL_TABS) == "Results"
    # the person opens the curation tab (what a click on it sends) ...
    at.session_state["_w_hypoeval_view"] = "Curate and re-score"
    at.run()
    assert selected_tab(at, HYPOEVAL_TABS) == "Curate and re-score"
    # ... and saves an edit of the second hypothesis
    store = Store(db)
    row = store.criteria(f"hypoeval:run:{run_id}")[1]
    at.text_area(key=f"hypoeval_text_{row['id']}").set_value(row["definition"] + " Edited.")
    index = [r["id"] for r in store.criteria(f"hypoeval:run:{run_id}")].index(row["id"])
    [b for b in at.button if b.label == "Save"][index].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert store.criteria(f"hypoeval:run:{run_id}")[index]["version"] == 2, "the edit was saved"
    assert selected_tab(at, HYPOEVAL_TABS) == "Curate and re-score"
    opened = open_expanders(at)
    assert len(opened) == 1 and " v2 " in opened[0] and row["definition"][:40] in opened[0], opened
    # the next rerun (any other click) keeps both
    at.run()
    assert selected_tab(at, HYPOEVAL_TABS) == "Curate and re-score" and open_expanders(at) == opened
