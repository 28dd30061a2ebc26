"""One pattern, one view: every engine pattern has its view module (dashboard/views/<same name>.py) and its view
tests, every view names a pattern, and views find invariants by the keys their pattern module exports, never by
the wording shown to people."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dashboard.state.verdicts import invariant, key_of
from dashboard.views import UNKNOWN, aggregates_for, all_views, detail_fields, view_for
from engine.patterns import all_patterns
from engine.patterns.base import Invariant, invariant_key
from tests.dashboard.helpers import DATA, load

ROOT = Path(__file__).resolve().parents[2]
PATTERNS = ROOT / "engine" / "patterns"
# A pattern is a module or a package (its __init__ and siblings); every file of it is read.
PATTERN_FILES = sorted(
    p for p in PATTERNS.rglob("*.py") if p.relative_to(PATTERNS).as_posix() not in {"__init__.py", "base.py"}
)


def pattern_file_id(path: Path) -> str:
    return path.relative_to(PATTERNS).with_suffix("").as_posix()


def module_of(cls: type) -> str:
    return cls.__module__.rsplit(".", 1)[-1]


def test_every_pattern_has_a_view_and_every_view_a_pattern() -> None:
    patterns, views = all_patterns(), all_views()
    assert set(views) == set(patterns), "add dashboard/views/<pattern>.py (or remove a view with no pattern)"
    for name, cls in patterns.items():
        assert view_for(name) is views[name] and view_for(name) is not UNKNOWN
        assert views[name].draw.__module__ == f"dashboard.views.{module_of(cls)}", (
            "a view lives under its pattern's name"
        )


def test_every_view_has_its_tests() -> None:
    for cls in all_patterns().values():
        assert (ROOT / "tests" / "dashboard" / "views" / f"test_{module_of(cls)}.py").exists(), cls.name


def test_a_view_draws_from_the_generic_charts_aggregates_and_its_own() -> None:
    for name, view in all_views().items():
        kinds = aggregates_for(name)
        assert len(set(kinds)) == len(kinds) and set(view.aggregates) <= set(kinds)
    assert set(detail_fields()) >= {"version", "read_version", "read", "token", "stale"}


def _invariant_calls(path: Path) -> list[ast.Call]:
    tree = ast.parse(path.read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Invariant"
    ]


@pytest.mark.parametrize("path", PATTERN_FILES, ids=pattern_file_id)
def test_every_invariant_has_a_key_constant_of_its_module(path: Path) -> None:
    tree = ast.parse(path.read_text())
    constants = {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    for call in _invariant_calls(path):
        key = next((kw.value for kw in call.keywords if kw.arg == "key"), None)
        assert isinstance(key, ast.Name) and key.id in constants, f"{path.name}:{call.lineno}: give it key=<CONSTANT>"


@pytest.mark.parametrize("path", PATTERN_FILES, ids=pattern_file_id)
def test_a_key_constant_is_defined_once(path: Path) -> None:
    names = [
        t.id
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name) and t.id.isupper()
    ]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []  # a later one would silently replace a key


def test_no_invariant_wording_outside_its_pattern() -> None:
    wording: dict[str, Path] = {}
    for path in PATTERN_FILES:
        for call in _invariant_calls(path):
            for kw in call.keywords:
                if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                    wording[str(kw.value.value)] = path
    assert len(wording) > 20
    for source in [p for package in ("engine", "dashboard", "bench") for p in (ROOT / package).rglob("*.py")]:
        text = source.read_text()
        found = [w for w, home in wording.items() if w in text and source != home]
        assert not found, f"{source.relative_to(ROOT)} spells out {found}: use its pattern module's key constant"


@pytest.mark.parametrize("name", sorted(p.stem for p in DATA.glob("*.jsonl")))
def test_files_recorded_before_keys_still_find_their_invariants(name: str) -> None:
    _, summary = load(name)
    invariants = summary["invariants"]
    assert invariants and all("key" not in inv for inv in invariants)  # recorded before invariants had keys
    for inv in invariants:
        assert key_of(inv) == invariant_key(inv["name"]) and invariant(invariants, key_of(inv)) is inv


def test_a_verdict_carries_its_key_into_the_summary() -> None:
    given = Invariant(
        name="Stock never below zero!", key="stock-floor", holds=True, expected=0, observed=0, explanation=""
    )
    derived = Invariant(name="Stock never below zero!", holds=True, expected=0, observed=0, explanation="")
    assert given.as_dict()["key"] == "stock-floor" and derived.as_dict()["key"] == "stock-never-below-zero"
    assert invariant([derived.as_dict(), given.as_dict()], "stock-floor") == given.as_dict()
