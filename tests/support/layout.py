"""The package layout in figures: import cycles and the largest modules of a source tree.

    python -m tests.support.layout [ROOT]        (ROOT: a checkout; default this one)

`tests/test_architecture.py` asserts the same graph has no cycle; this prints it, so an older
checkout (`git worktree add /tmp/old <commit>`) can be compared with this one.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("capreg", "indexer", "registry", "mcp_bridge")
# Function-local imports count: one that dodges a cycle is still a cycle.
Graph = dict[str, set[str]]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_files(root: Path = ROOT) -> Iterator[Path]:
    """The packages' modules, generated code left out."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if "proto" not in path.relative_to(root).parts:
                yield path


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Project modules `path` imports, anywhere in it (`from a import b`: `a.b` if a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return {name for name in found if name.split(".")[0] in PACKAGES}


def import_graph(root: Path = ROOT) -> Graph:
    paths = list(source_files(root))
    known = {module_name(p, root) for p in paths}
    return {module_name(p, root): imports_of(p, known) - {module_name(p, root)} for p in paths}


def cycles(graph: Graph) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


# Past this a module holds a second responsibility (STYLE: aim for 50-300 lines).
MAX_MODULE_LINES = 450
HAND_WRITTEN = (*PACKAGES, "bench", "tests", "proto")


def hand_written(root: Path = ROOT) -> Iterator[Path]:
    """Every Python file a person writes: the packages, benchmarks, tests and the proto
    script; generated `*_pb2*` modules and installed dependencies left out."""
    for folder in HAND_WRITTEN:
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root).parts
            if "_pb2" not in path.name and "node_modules" not in parts:
                yield path


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def oversized(root: Path = ROOT) -> list[tuple[int, str]]:
    """Hand-written modules over MAX_MODULE_LINES, largest first."""
    found = [(line_count(p), p.relative_to(root).as_posix()) for p in hand_written(root)]
    return sorted(((n, name) for n, name in found if n > MAX_MODULE_LINES), reverse=True)


def within(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def report(root: Path) -> str:
    graph = import_graph(root)
    sizes = sorted(
        ((line_count(p), p.relative_to(root).as_posix()) for p in source_files(root)),
        reverse=True,
    )
    large = oversized(root)
    found = cycles(graph)
    lines = [
        f"{root}: {len(graph)} modules, {sum(len(t) for t in graph.values())} project imports",
        f"import cycles: {len(found)}",
        *(f"  {' <-> '.join(cycle)}" for cycle in found),
        "largest modules (lines):",
        *(f"  {lines:5d}  {path}" for lines, path in sizes[:5]),
        f"hand-written modules over {MAX_MODULE_LINES} lines (with bench, tests): {len(large)}",
        *(f"  {lines:5d}  {path}" for lines, path in large),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    for root in args or [str(ROOT)]:
        print(report(Path(root).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
