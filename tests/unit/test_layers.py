"""The package's layering: no import cycles, core never imports the front ends, and SQL
only in the storage modules (docs/architecture.md, "Rules that hold everywhere")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import curator

ROOT = Path(curator.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, *, top_level_only: bool) -> set[str]:
    """The curator modules `path` imports (`from a import b` counts `a.b` where that is a
    module), at module level only (so not under `if TYPE_CHECKING:`) or anywhere."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("curator")}


def _graph(paths: list[Path], *, top_level_only: bool) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in paths}
    return {
        name: {m for m in _imports(path, top_level_only=top_level_only) if m in modules and m != name}
        for name, path in modules.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in `graph`, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _package_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py"))


def test_curator_logs_has_no_import_cycle_even_through_function_level_imports() -> None:
    graph = _graph(_package_files(ROOT / "logs"), top_level_only=False)
    # the package __init__ re-exports the pipeline; it is the top, not a stage
    graph.pop("curator.logs", None)
    for targets in graph.values():
        targets.discard("curator.logs")
    assert len(graph) > 10
    assert _cycle(graph) is None


def test_no_module_level_import_cycle_in_curator() -> None:
    graph = _graph(_package_files(ROOT), top_level_only=True)
    for name in [n for n in graph if n.count(".") == 1 and (ROOT / n.split(".")[1] / "__init__.py").exists()]:
        graph[name] = {m for m in graph[name] if not m.startswith(name + ".")}  # a package re-exporting its modules
    assert _cycle(graph) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_core_modules_never_import_textual_or_click() -> None:
    front_ends = {ROOT / "cli", ROOT / "tui"}
    offenders = []
    for path in _package_files(ROOT):
        if any(folder in path.parents for folder in front_ends):
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(import|from)\s+(textual|click)\b", text, re.M):
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


STORAGE = {"workspace.py", "migrations.py", "storage", "generate/store.py", "logs/imports.py", "triage/store.py",
           "suggest/store.py", "judgments.py"}
SQL = re.compile(r"\.execute\(|\.executemany\(|\bws\.db\b|\.db\[|\.db\.table\(|\.db\.query\(")


def test_sql_only_in_the_storage_modules() -> None:
    offenders = []
    for path in _package_files(ROOT):
        relative = path.relative_to(ROOT).as_posix()
        if relative in STORAGE or relative.split("/")[0] in STORAGE or relative.startswith("logs/duck"):
            continue  # logs/duck*.py speak DuckDB's SQL to its own in-memory database
        if SQL.search(path.read_text(encoding="utf-8")):
            offenders.append(relative)
    assert offenders == []
