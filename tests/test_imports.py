"""No import cycles in engine/ and dashboard/: every import statement counts, those inside functions (lazy) and
under `if TYPE_CHECKING:` included, since each of those still ties the two modules together; so does a package
that finds its modules by scanning itself (engine.patterns, dashboard.views): it imports every one of them."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "dashboard", "bench")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules this module imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {t for t in targets if t in known and t != name}
    if path.name == "__init__.py" and "pkgutil.iter_modules(__path__)" in path.read_text():
        found |= {m for m in known if m.rpartition(".")[0] == name}  # the modules it discovers and imports
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports(name, path, set(found)) for name, path in found.items()}


def test_the_graph_sees_lazy_and_type_only_imports() -> None:
    g = graph()
    assert len(g) > 40 and "dashboard.views.optimistic_locking" in g
    assert "engine.patterns.optimistic_locking" in g["dashboard.views.optimistic_locking"]
    assert "engine.patterns.optimistic_locking" in g["engine.patterns"]  # found by scanning the package
    assert "engine.run.walkthrough" in g["engine.commands.walkthrough"]  # imported inside a function only
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_engine_never_imports_the_dashboard() -> None:
    for name, targets in graph().items():
        if name.startswith("engine"):
            assert not {t for t in targets if t.startswith("dashboard")}, name
