"""The run-level modules stack without an import circle (issue 62 item 8).

export, gate, probes, runs, score_files, stress and trust once imported each other in one 17-file circle
(export -> score_files -> export for a verdict's missing reason, probes -> trust for the JSON rule, ...), so no
one of them could be read, tested or loaded alone. Imports inside ``if TYPE_CHECKING:`` are for annotations
and are left out; imports inside functions count, as Python runs them.
"""

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "judge_engine"
LAYERED = ("export", "gate", "probes", "runs", "score_files", "stress", "trust", "records")


def _unit(module: str) -> str | None:
    """The layered unit a module belongs to (a package counts as one unit), or None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "judge_engine" and parts[1] in LAYERED else None


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports, at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {id(node) for branch in ast.walk(tree)
               if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
               for node in ast.walk(branch)}
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            out |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
    return out


def _unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        source = _unit(_module_name(path))
        if source is None:
            continue
        for target in map(_unit, _imported(path)):
            if target is not None and target != source:
                graph[source].add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle in ``graph`` as a path that returns to its start, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_run_level_modules_import_each_other_without_a_circle():
    circle = _cycle(_unit_graph())
    assert circle is None, "import circle: " + " -> ".join(circle)


@pytest.mark.parametrize("graph, expected", [({"a": {"b"}, "b": {"a"}}, True), ({"a": {"b"}, "b": {"c"}}, False),
                                             ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True)])
def test_the_circle_finder_finds_circles_and_only_circles(graph, expected):
    assert (_cycle(graph) is not None) is expected


def test_the_graph_sees_imports_inside_functions():
    # export reaches the gate only inside a method: that edge must be in the graph, or the first test proves little
    assert "gate" in _unit_graph()["export"]


def _runs_module_graph() -> dict[str, set[str]]:
    """The modules of judge_engine.runs and which of them each imports, inside functions included."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in (PACKAGE / "runs").glob("*.py"):
        source = _module_name(path)
        if path.name == "__init__.py":  # the package's lazy names import every module: not a layer of its own
            continue
        for target in _imported(path):
            if target.startswith("judge_engine.runs.") and target.count(".") == 2 and target != source:
                if (PACKAGE / "runs" / f"{target.rsplit('.', 1)[1]}.py").exists():
                    graph[source].add(target)
    return graph


def test_the_modules_of_runs_import_each_other_without_a_circle():
    # estimates, cost and spec imported each other inside functions (the time read the tokens, the tokens the
    # counts, creating a run the cost); the counts, the duration and the tokens are layers of their own now
    circle = _cycle(_runs_module_graph())
    assert circle is None, "import circle inside runs: " + " -> ".join(circle)


def test_the_runs_graph_sees_lazy_imports():
    # model_timing reaches execute only inside a function: the edge must be seen, or the test above proves little
    assert "judge_engine.runs.execute" in _runs_module_graph()["judge_engine.runs.model_timing"]


def _streamlit_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, inside a function) of every import of streamlit (or one of its modules) in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_function = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                   for node in ast.walk(fn)}
    out = []
    for node in ast.walk(tree):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(n == "streamlit" or n.startswith("streamlit.") for n in names):
            out.append((node.lineno, id(node) in in_function))
    return out


def test_the_engine_never_imports_streamlit_and_a_benchmark_only_inside_the_function_that_drives_the_app():
    # ../shared/STYLE.md: nothing under judge_engine/ imports streamlit. A benchmark that times the app's own
    # script runs (bench app --loop) needs streamlit's AppTest, so judge_engine.bench may import it where it
    # drives the app, inside that function: importing the benchmark (bench --help, its other rows) loads none of it
    found = {f"{path.relative_to(ROOT)}:{line}": inside for path in PACKAGE.rglob("*.py")
             for line, inside in _streamlit_imports(path)}
    wrong = sorted(where for where, inside in found.items()
                   if not (inside and where.startswith("judge_engine/bench/")))
    assert not wrong, f"streamlit imported by the engine: {wrong}"


def test_the_streamlit_finder_sees_an_import_at_the_top_and_inside_a_function(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("import streamlit as st\n\ndef f():\n    from streamlit.testing.v1 import AppTest\n")
    assert _streamlit_imports(source) == [(1, False), (4, True)]
