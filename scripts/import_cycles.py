"""Print every import cycle among neardup's modules (strongly connected components of the
import graph, lazy imports inside functions included); exit 1 if there is one.

    python scripts/import_cycles.py
"""

from __future__ import annotations

import sys

import grimp


def cycles(package: str = "neardup") -> list[list[str]]:
    # imports under `if TYPE_CHECKING:` are for annotations only: never run, no cycle
    graph = grimp.build_graph(package, include_external_packages=False, exclude_type_checking_imports=True)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        order[v] = low[v] = len(order)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for m in sorted(graph.modules):
        if m not in order:
            visit(m)
    return found


def main() -> int:
    found = cycles()
    for comp in found:
        print(f"cycle of {len(comp)} modules: {', '.join(comp)}")
    print(f"{len(found)} import cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
