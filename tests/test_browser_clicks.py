"""A double click in the browser starts one run (issue 62, part 2): the Runs page's "Start run" and HypoEval's
"Quick first look", clicked twice 0.1 s and 0.5 s apart in headless Chromium, against the real app.

The backend is the OpenAI-compatible stub (judge_engine.bench.stub_server), chosen through the settings kept in
the database (issue 62, part 3), so no model loads and the two shared cores stay free. What is counted is the
runs the store holds, not what the page says; the page must name the run and show no traceback.
"""

from __future__ import annotations

import re
import time
from typing import Iterator

import pytest

from judge_engine import saved_settings
from judge_engine.bench.stub_server import MODEL, StubServer
from judge_engine.store import Store
from tests import test_browser
from tests.test_browser import App, idle, no_traceback
from tests.test_double_click_pages import looked_at

pytestmark = pytest.mark.browser

GAPS_S = (0.1, 0.5)

# The browser, a page per test and the failure report are test_browser's; this module brings its own app.
browser, page, diagnose = test_browser.browser, test_browser.page, test_browser.diagnose


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


@pytest.fixture(scope="module")
def app(tmp_path_factory, shared_data, stub) -> Iterator[App]:
    folder = tmp_path_factory.mktemp("clicks")
    store = Store(folder / "workbench.db")
    store.save_dataset(looked_at())
    for name, value in (("settings_backend", "openai"), ("settings_base_url", stub.base_url),
                        ("settings_model_openai", MODEL)):
        saved_settings.save(store, saved_settings.DATABASE, name, value)
    server = App(folder / "workbench.db", shared_data, folder / "streamlit.log")
    yield server
    server.stop()


def double_click(page, button, gap_s: float) -> None:
    """Two presses of ``button``, ``gap_s`` apart, as a person's double click. The second is forced: it presses
    the button the page shows then, without waiting for the page to settle after the first (Playwright's own
    click would wait for that, and Streamlit keeps the old button on the page while it reruns)."""
    button.wait_for()
    button.click()
    time.sleep(gap_s)
    button.click(force=True)


def settle(page) -> None:
    """Wait until the page is done with both clicks (Streamlit's status widget gone twice over)."""
    for _ in range(2):
        idle(page)


@pytest.mark.parametrize("gap_s", GAPS_S)
def test_start_run_double_clicked_starts_one_run_named_on_the_page(app, page, diagnose, gap_s):
    store = Store(app.db)
    before = {r.id for r in store.runs()}
    page.goto(f"{app.url}/runs")
    page.get_by_text("LLM requests to score the test items").wait_for()
    idle(page)
    assert MODEL in page.locator("[data-testid=stSidebar]").inner_text(), "the kept settings chose the stub"
    double_click(page, page.get_by_role("button", name="Start run"), gap_s)
    page.get_by_text(re.compile(r"Started run #\d+|was started by this click already")).first.wait_for()
    settle(page)
    new = sorted({r.id for r in store.runs()} - before)
    assert len(new) == 1, f"{len(new)} runs from one double click ({gap_s} s apart): {new}"
    page.get_by_role("heading", name=re.compile(rf"Run #{new[0]}:")).wait_for()
    no_traceback(page)


@pytest.mark.parametrize("gap_s", GAPS_S)
def test_quick_first_look_double_clicked_starts_one_look(app, page, diagnose, gap_s):
    store = Store(app.db)
    before = {r.id for r in store.runs() if r.method == "hypoeval"}
    page.goto(f"{app.url}/hypoeval")
    page.get_by_text("LLM requests to score the test items").wait_for()  # drawn after the button: the form is done
    idle(page)
    button = page.get_by_role("button", name=re.compile(r"^Quick first look"))
    double_click(page, button, gap_s)
    page.get_by_text(re.compile(r"Started run #\d+ \(quick first look\)|was started by this click already")
                     ).first.wait_for()
    settle(page)
    new = sorted({r.id for r in store.runs() if r.method == "hypoeval"} - before)
    assert len(new) == 1, f"{len(new)} HypoEval runs from one double click ({gap_s} s apart): {new}"
    assert page.get_by_text(re.compile(rf"#{new[0]}\b")).count() >= 1, "the page names the run it started"
    no_traceback(page)
