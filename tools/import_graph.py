"""The import graph of the ``waypost`` package, and its cycles (a test keeps there being none).

Every import counts, wherever it is written: at the top, inside a function, or under
``TYPE_CHECKING`` (a type-only import is still a circle a reader has to follow). An edge goes
from a module to the module it imports, or to the module a name is imported from; the implicit
import of a parent package is not an edge. Run it to print the cycles: ``python
tools/import_graph.py``."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Source folder → the package it is (pyproject.toml's package-dir).
FOLDERS = {"commands": "waypost", "reference": "waypost.reference", "adapters": "waypost.adapters",
           "properties": "waypost.properties", "conformance": "waypost.conformance"}


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "node_modules" in path.parts:
                continue
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join((package, *parts))] = path
    return found


def imports(path: Path, known: set[str]) -> Iterator[str]:
    """The modules of the package that the module at ``path`` imports."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in known:
                    yield full
                elif node.module in known:
                    yield node.module


def graph() -> dict[str, set[str]]:
    """Module → the modules it imports (itself excluded)."""
    found = modules()
    known = set(found)
    return {name: set(imports(path, known)) - {name} for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: no recursion limit to meet
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
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

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return sorted(found)


def main() -> int:
    found = cycles(graph())
    for component in found:
        print("cycle:", " ".join(component))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
