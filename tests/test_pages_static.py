"""Static checks of the page scripts that AppTests would only catch page by page."""

import ast
from pathlib import Path

import pytest

PAGES = sorted((Path(__file__).resolve().parents[1] / "pages").glob("*.py")) + \
    [Path(__file__).resolve().parents[1] / "app.py"]
SCRIPTS = [p for p in PAGES if p.name != "common.py"]  # common.py is imported, never run as a script


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_no_bare_string_below_the_docstring_of_a_page_script(path):
    # Streamlit's "magic" draws every bare expression of a page script: a docstring-like string after an
    # assignment showed up as a stray headline on the Compare page
    body = ast.parse(path.read_text(encoding="utf-8")).body
    stray = [node.lineno for node in body[1:]
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)]
    assert stray == [], f"{path.name}: bare strings at lines {stray} would be drawn on the page"
