"""tools/mutate.py stays usable: every mutant's line is still in the code exactly once, its tests exist, and a
mutant is applied to a copy only (issue 51 item 4). The mutation run itself is too slow for the suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def mutate():
    """The script as a module (tools/ is no package; loaded by path so this checkout's copy is the one tested)."""
    spec = importlib.util.spec_from_file_location("mutate", ROOT / "tools" / "mutate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def test_every_mutant_still_finds_its_line_once_and_names_existing_tests(mutate):
    assert len(mutate.MUTANTS) >= 12 and len({m.name for m in mutate.MUTANTS}) == len(mutate.MUTANTS)
    for m in mutate.MUTANTS:
        text = (ROOT / m.path).read_text(encoding="utf-8")
        assert text.count(m.old) == 1, f"{m.name}: the code moved, update the mutant"
        assert m.new != m.old and m.expect
        for t in m.tests:
            path, _, name = t.partition("::")
            assert (ROOT / path).is_file(), t
            assert not name or f"def {name}(" in (ROOT / path).read_text(encoding="utf-8"), t


def test_a_mutant_is_planted_in_the_copy_and_never_in_the_checkout(mutate, tmp_path):
    m = mutate.MUTANTS[0]
    before = (ROOT / m.path).read_text(encoding="utf-8")
    (tmp_path / m.path).parent.mkdir(parents=True)
    (tmp_path / m.path).write_text(before, encoding="utf-8")
    original = mutate.apply(tmp_path, m)
    assert original == before and m.new in (tmp_path / m.path).read_text(encoding="utf-8")
    assert (ROOT / m.path).read_text(encoding="utf-8") == before
    with pytest.raises(ValueError, match="occurs 0 times"):
        mutate.apply(tmp_path, m)  # already planted: the line to mutate is gone


def test_the_verdict_needs_an_expected_test_to_fail(mutate):
    m = mutate.MUTANTS[0]
    assert mutate.verdict(m, [f"tests.test_paper_rules::{m.expect[0]}"], "") == "killed"
    assert mutate.verdict(m, ["tests.test_other::test_something_else"], "") == "killed (other reason)"
    assert mutate.verdict(m, [], "") == "survived"
    assert mutate.verdict(m, [], "ImportError") == "error"
