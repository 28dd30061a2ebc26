"""Property tests of the import door: a malformed history file (wrong types, missing keys, extreme numbers,
huge strings) is refused in one line, or imported with memory bounded by its calls; and no accepted file can
break the History page of another browser session."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.widgets.registry import Registry, get_registry
from engine.errors import HistoryFileError
from engine.record import schema
from tests.dashboard.helpers import DATA

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
SOURCES = ["atomic-counters-racy", "gsi-consistency-racy", "distributed-locking-safe", "idempotency-keys-racy"]


def lines_of(name: str, calls: int = 30) -> list[dict[str, Any]]:
    with open(DATA / f"{name}.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(calls + 1), f)]


BASES = {name: lines_of(name) for name in SOURCES}

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([-1, 0, 2**31, 2**63 - 1, -(2**63), 10**30, 1e308, -1e308, 0.5, 1e-300]),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["x" * 200_000, "![img](http://example.com/x.png)", "<img src=http://example.com/x>", "\n" * 50]),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)
# Raw JSON that Python's json module reads but is no plain number: NaN, infinities, 400-digit integers.
RAW = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity", "huge": "1" * 400}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document a mutation can go (its own root included)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value[:5]):
            found += _paths(item, (*prefix, i))
    return found


@st.composite
def malformed(draw: st.DrawFn) -> bytes:
    """A real export with a few of its values replaced, removed, or made absurd."""
    lines = json.loads(json.dumps(BASES[draw(st.sampled_from(SOURCES))]))
    raw: dict[str, str] = {}
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.integers(0, len(lines) - 1))
        path = draw(st.sampled_from(_paths(lines[row])))
        action = draw(st.sampled_from(["replace", "replace", "delete", "raw"]))
        if not path:
            lines[row] = draw(HOSTILE)
            continue
        parent = lines[row]
        for step in path[:-1]:
            parent = parent[step]
        if action == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "raw":
            marker = f"@@raw{len(raw)}@@"
            raw[json.dumps(marker)] = RAW[draw(st.sampled_from(list(RAW)))]
            parent[path[-1]] = marker
        else:
            parent[path[-1]] = draw(HOSTILE)
    text = "\n".join(json.dumps(line) for line in lines)
    for marker, value in raw.items():
        text = text.replace(marker, value)
    return text.encode()


SMALL_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**53), 2**53),
        st.floats(-1e15, 1e15, allow_nan=False),
        st.text(max_size=30),
        st.sampled_from(["![img](http://example.com/x.png)", "<script>x</script>", "$x$", "**b**"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=6,
)


@st.composite
def extreme(draw: st.DrawFn) -> bytes:
    """A real export whose values are all of an allowed type, but at the edges of their ranges or odd: what the
    import keeps, so what every session's pages must draw."""
    name = draw(st.sampled_from(SOURCES))
    lines = json.loads(json.dumps(BASES[name]))
    summary = lines[0]["meta"]["summary"]
    for inv in summary.get("invariants", []):
        inv["holds"] = draw(st.sampled_from([True, False, None]))
        inv["expected"], inv["observed"] = draw(SMALL_JSON), draw(SMALL_JSON)
        inv["calls"] = draw(st.lists(st.integers(0, 10**9), max_size=4))
        inv["violations"] = draw(st.integers(0, 10**12))
    summary["threads"] = draw(st.integers(1, schema.MAX_CLIENTS))
    summary["client_cpu_cores"] = draw(st.lists(st.floats(0, 1024), max_size=3))
    summary["options"] = draw(st.dictionaries(st.text(min_size=1, max_size=10), st.integers(-5, 10**6), max_size=3))
    for row in lines[1:]:
        if draw(st.booleans()):
            continue
        start = draw(st.sampled_from([0, 1, schema.MAX_SPAN_NS - schema.MAX_LATENCY_NS, row["invoke_ns"]]))
        row["invoke_ns"] = start
        row["complete_ns"] = start + draw(st.sampled_from([0, 1, schema.MAX_LATENCY_NS, 10**6]))
        row["client"] = draw(st.sampled_from([0, schema.MAX_CLIENTS - 1, row["client"]]))
        row["retries"] = draw(st.sampled_from([0, schema.MAX_RETRIES, row.get("retries", 0)]))
        row["detail"] = {**row.get("detail", {}), **draw(odd_detail()), "unknown": draw(SMALL_JSON)}
        row["error"] = draw(st.sampled_from([None, row.get("error"), "x" * schema.MAX_ERROR, "ThrottlingException"]))
    return "\n".join(json.dumps(line) for line in lines).encode()


ODD_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(["![i](http://example.com/i.png)", "x" * 2_048]))
ODD = {
    "a number or null": st.one_of(
        st.none(),
        st.integers(-(2**53), 2**53),
        st.floats(-(2.0**53), 2.0**53, allow_nan=False),
        st.sampled_from([0, -1]),
    ),
    "true or false": st.one_of(st.booleans(), st.sampled_from([0, 1])),
    "text or null": st.one_of(st.none(), ODD_TEXT),
    "a list of error codes": st.lists(st.text(max_size=30), max_size=4),
    "an item (an object) or null": st.one_of(st.none(), st.dictionaries(st.text(max_size=8), SMALL_JSON, max_size=3)),
}


@st.composite
def odd_detail(draw: st.DrawFn) -> dict[str, Any]:
    """Detail fields the pattern views read, each of the kind the engine writes, with odd values."""
    keys = draw(st.lists(st.sampled_from(sorted(schema.DETAIL_KINDS)), max_size=6, unique=True))
    return {key: draw(ODD[schema.DETAIL_KINDS[key][0]]) for key in keys}


def import_and_draw(registry: Registry, data: bytes) -> int | None:
    """Import `data` and bring its view up to date (what the page draws from); the peak memory it took, or None
    when the file was refused (in one line with a fix)."""
    tracemalloc.start()
    try:
        try:
            record = registry.import_history("hostile.jsonl", data)
        except HistoryFileError as e:
            assert e.problem and e.fix and "\n" not in e.problem
            return None
        with record.view():
            pass
        record.invariants()
        record.progress()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(malformed())
def test_a_malformed_import_is_refused_in_one_line_or_kept_in_bounded_memory(data: bytes) -> None:
    registry = Registry(max_runs=4)
    peak = import_and_draw(registry, data)
    if peak is not None:
        # 30 calls: a few MB for pandas frames and the view's bins, whatever values the file holds
        assert peak < 64 * 1024 * 1024 + 4 * len(data), f"{peak / 1e6:.0f} MB for a {len(data)} byte file"


def _history_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/history.py").run()
    return at


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(extreme())
def test_odd_but_well_typed_imports_are_kept_and_drawn_in_bounded_memory(data: bytes) -> None:
    peak = import_and_draw(Registry(max_runs=4), data)
    assert peak is not None and peak < 64 * 1024 * 1024, f"{(peak or 0) / 1e6:.0f} MB"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(extreme(), malformed()))
def test_no_accepted_import_breaks_the_history_page_of_another_session(data: bytes) -> None:
    registry = get_registry()  # the process-wide one every session's pages use
    try:
        record = registry.import_history("hostile.jsonl", data)
    except HistoryFileError:
        return
    try:
        at = _history_page()  # another browser session, opening the History page: the new import shows first
        assert not at.exception, [e.value for e in at.exception]
        assert any(record.id in str(option) for option in at.selectbox(key="history-pick").options)
    finally:
        registry.remove(record.id)


def test_text_from_an_imported_file_is_shown_as_plain_text() -> None:
    lines = json.loads(json.dumps(BASES["atomic-counters-racy"]))
    summary = lines[0]["meta"]["summary"]
    summary["invariants"][0]["name"] = "![tracker](http://example.com/pixel.png) **bold**"
    summary["invariants"][0]["explanation"] = "<img src='http://example.com/x.png'> [link](http://example.com)"
    summary["error"] = "![e](http://example.com/e.png)"
    summary["calls"] = len(lines) - 1  # a whole file: its verdicts are shown (a cut one's would not be)
    registry = get_registry()
    record = registry.import_history("![f](http://example.com/f.png).jsonl", "\n".join(map(json.dumps, lines)).encode())
    try:
        at = _history_page()
        assert not at.exception
        shown = [m.value for m in at.markdown] + [c.value for c in at.caption]
        assert not any("![" in value and "\\!\\[" not in value for value in shown), shown  # never an image
        assert any("pixel.png" in value for value in shown)  # but the text is there, escaped
    finally:
        registry.remove(record.id)


def test_a_file_cut_short_at_a_line_end_is_kept_but_not_judged() -> None:
    """A history cut after its 19th call (or its header alone) still carries the whole run's summary: its PASS
    verdicts judged 960 calls, not the ones on screen, so the run shows as FAILED with the reason, no verdicts."""
    lines = (DATA / "atomic-counters-racy.jsonl").read_bytes().split(b"\n")
    registry = get_registry()
    for cut, calls in ((lines[:20], 19), (lines[:1], 0)):
        record = registry.import_history("cut.jsonl", b"\n".join(cut))
        try:
            assert record.state == "failed" and record.invariants() == [] and len(record.history) == calls
            assert record.error is not None and f"holds {calls:,} of the 960 calls" in str(record.error)
            assert (record.summary() or {})["invariants_in_file"]  # set aside, not lost
            at = _history_page()
            assert not at.exception, [e.value for e in at.exception]
            page = " ".join(m.value for m in at.markdown)
            assert "PASS" not in page and "FAIL]" not in page and "hold**" not in page
            assert any(f"holds {calls:,} of the 960 calls" in e.value for e in at.error)
        finally:
            registry.remove(record.id)
    whole = registry.import_history("whole.jsonl", b"\n".join(lines))
    try:
        assert whole.state == "done" and whole.invariants() and whole.error is None
    finally:
        registry.remove(whole.id)
