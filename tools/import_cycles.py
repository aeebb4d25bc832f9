"""Import circles in judge_engine: the module import graph, lazy imports inside functions included, and its
strongly connected components of more than one module.

tests/test_import_layers.py guards a few run-level units against circles between them; this looks at every
module. An edge is an import statement as written (``from . import x`` is an edge to ``x`` when ``x`` is a module, else
to the package, whose names it reads; ``from .a import b`` likewise to ``a.b`` or ``a``); imports under
``if TYPE_CHECKING:`` are left out, as Python never runs them. A package's ``__init__`` importing its own
submodules to re-export them, with the submodules importing each other directly, is no circle; a submodule
reading the partly built package (``from . import name``) is.

    .venv/bin/python tools/import_cycles.py            # every circle, each edge marked (lazy) or (top)
    .venv/bin/python tools/import_cycles.py --quiet    # only the count; exit status 1 when there is a circle
    .venv/bin/python tools/import_cycles.py --root ../main   # another checkout
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "judge_engine"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` (its body, not its else)."""
    return {id(node) for branch in ast.walk(tree)
            if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
            for statement in branch.body for node in ast.walk(statement)}


def imports(path: Path, known: set[str]) -> dict[str, bool]:
    """The judge_engine modules ``path`` imports, each with True when only inside a function (lazy)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _type_checking_nodes(tree)
    lazy_nodes = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                  for node in ast.walk(fn)}
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out: dict[str, bool] = {}
    for node in ast.walk(tree):
        if id(node) in skipped or not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            submodules = [f"{base}.{alias.name}" for alias in node.names]
            # ``from pkg import module`` reads no name of pkg: an edge to pkg only where some name is not a module
            targets = submodules + ([] if all(s in known for s in submodules) else [base])
        else:
            targets = [alias.name for alias in node.names]
        lazy = id(node) in lazy_nodes
        for target in targets:
            if target in known and target != here:
                out[target] = out.get(target, True) and lazy
    return out


def graph() -> dict[str, dict[str, bool]]:
    found = modules()
    return {name: imports(path, set(found)) for name, path in found.items()}


def strongly_connected(edges: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); components of more than one module, largest first."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/import_cycles.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quiet", action="store_true", help="only the count of circles")
    parser.add_argument("--root", type=Path, default=None, help="the checkout to read (default: this one)")
    args = parser.parse_args(argv)
    global ROOT
    ROOT = (args.root or ROOT).resolve()
    edges = graph()
    components = strongly_connected(edges)
    print(f"{len(components)} import circle(s) among {len(edges)} modules")
    if not args.quiet:
        for component in components:
            members = set(component)
            print(f"\n{len(component)} modules:")
            for name in component:
                inside = defaultdict(list)
                for target, lazy in sorted(edges[name].items()):
                    if target in members:
                        inside["lazy" if lazy else "top"].append(target)
                said = "; ".join(f"{kind}: {', '.join(t)}" for kind, t in sorted(inside.items()))
                print(f"  {name} -> {said}")
    return 1 if components else 0


if __name__ == "__main__":
    sys.exit(main())
