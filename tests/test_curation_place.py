"""AppTests that curation keeps its place across saves (issue 23, point 4).

After a Save the page reruns. A person curating a list must come back to the same view (tab), with the item
they just saved still open and no edit popover left open, so the next edit is one click away and the list
stays where they were reading it.
"""

from __future__ import annotations

from streamlit.proto.Block_pb2 import Block as BlockProto
from streamlit.testing.v1 import AppTest

from judge_engine.store import Store
from tests.test_hypoeval_page import APP
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


# --------------------------------------------------------------------------- HD-Eval
def hd_eval_run(db) -> int:
    from judge_engine.llm import LLMConfig, make_llm
    from judge_engine.llm.fake import FakeBackend
    from judge_engine.runs import RunSpec, create_run, execute_run
    from tests.test_hd_eval import _dataset, scripted

    store = Store(db)
    store.save_dataset(_dataset())
    run_id = create_run(store, RunSpec(method="hd_eval", dataset="toy", aspect="clarity", train_size=12, test_size=6,
                                       params={"aggregator": "lr", "max_layers": 2, "pi_repeats": 2}))
    execute_run(store, run_id, llm=make_llm(LLMConfig(), store=store, backend=FakeBackend(scripted)))
    return run_id


def open_hd_eval() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page("pages/hd_eval.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def popover_open(at: AppTest, key: str) -> bool:
    """Whether the server draws the popover with ``key`` open (raises if it is not on the page)."""
    found = [b for b in blocks(at, "popover") if b.proto.popover.id.endswith(f"-{key}")]
    assert len(found) == 1, f"popover {key} not on the page"
    return found[0].proto.popover.open


def test_hd_eval_saving_a_node_closes_its_popover_and_keeps_its_aspect_open(db):
    run_id = hd_eval_run(db)
    at = open_hd_eval()
    style = [e.label for e in at.expander if e.label.startswith("style")]
    assert style and style[0] not in open_expanders(at), "a non-target aspect starts closed"
    # the person opens the style aspect and the Add popover of its first sub-criterion (what the clicks send) ...
    node = "style/p0"
    add_key = f"hd_pop_add_{run_id}_{node}"
    at.session_state[add_key] = True
    at.run()
    assert popover_open(at, add_key)
    # ... and adds a child: the aspect's label changes (one more sub-criterion)
    add = next(i for i, w in enumerate(at.text_input) if w.label == "Name of the new criterion"
               and w.form_id == f"hd_add_{run_id}_{node}")
    at.text_input[add].set_value("Varied sentences")
    next(b for b in at.button if b.label == "Add" and b.form_id == f"hd_add_{run_id}_{node}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Added 'Varied sentences'" in s.value for s in at.success)
    assert not popover_open(at, add_key), "no popover left open over the tree after its save"
    opened = open_expanders(at)
    assert any(label.startswith("style") and label != style[0] for label in opened), opened

    # the Edit popover of a node: open, save, closed; its aspect (the target) stays open
    edit_key = f"hd_pop_edit_{run_id}_clarity/p1"
    at.session_state[edit_key] = True
    at.run()
    assert popover_open(at, edit_key)
    names = [w for w in at.text_input if w.label == "Name" and w.form_id == f"hd_edit_{run_id}_clarity/p1"]
    names[0].set_value("Plain words")
    next(b for b in at.button if b.label == "Save" and b.form_id == f"hd_edit_{run_id}_clarity/p1").click().run()
    assert not at.exception and any("Saved" in s.value for s in at.success)
    assert not popover_open(at, edit_key)
    assert any(label.startswith("clarity") for label in open_expanders(at))
