"""Static checks of the page scripts that AppTests would only catch page by page."""

import ast
import re
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "pages").glob("*.py")) + \
    [Path(__file__).resolve().parents[1] / "app.py"]
# the scripts Streamlit runs: app.py and the pages it routes to (the modules the pages import live in pages/ui/,
# where Streamlit's magic does not draw their strings)
ROUTED = set(re.findall(r'st\.Page\("pages/(\w+\.py)"', PAGES[-1].read_text(encoding="utf-8")))
SCRIPTS = [p for p in PAGES if p.name in ROUTED or p.name == "app.py"]


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_bare_string_below_the_docstring_of_a_page_script(path):
    # Streamlit's "magic" draws every bare expression of a page script: a docstring-like string after an
    # assignment showed up as a stray headline on the Compare page
    body = ast.parse(path.read_text(encoding="utf-8")).body
    stray = [node.lineno for node in body[1:]
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)]
    assert stray == [], f"{path.name}: bare strings at lines {stray} would be drawn on the page"


def test_the_router_is_set_before_the_sign_in_gate_can_stop_the_run():
    # a run stopped before st.navigation shows Streamlit's automatic listing of pages/, with the modules beside the
    # pages (then common.py) and app itself offered as pages (seen on a fresh `make run` while the app asked for a name)
    body = ast.parse((Path(__file__).resolve().parents[1] / "app.py").read_text(encoding="utf-8")).body

    def line_of(name: str) -> int:
        return next(node.lineno for node in body for call in ast.walk(node)
                    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == name)

    assert line_of("navigation") < line_of("sign_in")


def test_every_file_in_pages_is_a_routed_page():
    # Streamlit lists every .py file directly in pages/ in its sidebar until st.navigation runs (and shows the
    # list whenever a script run stops before it): a shared module there is offered to a visitor as a page
    in_folder = {p.name for p in PAGES[:-1]}
    assert in_folder - ROUTED == set(), "move modules that are not pages into pages/ui/"
    assert ROUTED <= in_folder, "app.py routes to a page that is not in pages/"
