"""The house's shape, checked: no import cycles in engine/, dashboard/ and bench/ (every import statement counts, those inside functions (lazy) and
under `if TYPE_CHECKING:` included, since each of those still ties the two modules together; so does a package
that finds its modules by scanning itself (engine.patterns, dashboard.views): it imports every one of them); no
module imports another package's private name; the chain of imports that run at import time stays short; and the
folders stay small enough to read, each saying in its docstring what lives there."""

from __future__ import annotations

import ast
from functools import cache
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


def import_time_imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules importing this module runs: its module-level imports (an `if`/`try` block's included),
    not those inside functions or under `if TYPE_CHECKING:`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in known and a.name != name)
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, package)
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
                found.update(t for t in targets if t in known and t != name)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))

    visit(ast.parse(path.read_text(), str(path)).body)
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return base


def longest_chain(graph: dict[str, set[str]]) -> list[str]:
    """The longest path of imports (the graph has no cycle: test_no_import_cycles)."""

    @cache
    def from_(v: str) -> tuple[str, ...]:
        paths: list[tuple[str, ...]] = [(v, *from_(w)) for w in graph[v]]
        return max(paths, key=len, default=(v,))

    chains: list[tuple[str, ...]] = [from_(v) for v in graph]
    return list(max(chains, key=len))


MAX_IMPORT_HOPS = 12  # importing any page or command runs at most this many project imports in a row


def test_the_import_time_chain_is_short() -> None:
    found = modules()
    graph = {name: import_time_imports(name, path, set(found)) for name, path in found.items()}
    assert cycles(graph) == []
    chain = longest_chain(graph)
    assert len(chain) - 1 <= MAX_IMPORT_HOPS, " -> ".join(chain)
    assert longest_chain({"a": {"b"}, "b": {"c"}, "c": set(), "d": {"c"}}) == ["a", "b", "c"]


def test_no_module_imports_another_packages_private_name() -> None:
    found = modules()
    crossings = []
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(node, package)
            if base not in found:
                continue
            owner = base if found[base].name == "__init__.py" else base.rpartition(".")[0]
            crossings += [f"{name}: {base}.{a.name}" for a in node.names if a.name.startswith("_") and owner != package]
    assert crossings == []


def test_folders_stay_small_and_say_what_lives_there() -> None:
    engine_top = [p for p in (ROOT / "engine").glob("*.py")]
    assert len(engine_top) <= 10, sorted(p.name for p in engine_top)
    for package in PACKAGES:
        for init in (ROOT / package).rglob("__init__.py"):
            own = [p for p in init.parent.glob("*.py") if p.name != "__init__.py"]
            assert len(own) <= 15, f"{init.parent} holds {len(own)} modules"
            doc = ast.get_docstring(ast.parse(init.read_text()))
            assert doc and len(doc) > 40 and "TODO" not in doc, f"{init} does not say what lives there"
