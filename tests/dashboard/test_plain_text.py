"""A link's values and an imported file's text are shown as typed, never rendered: each one is put through every
parameter of the Run, Compare and Sweep pages' links and every text field of an imported history, and no element
the pages draw as Markdown (messages, captions, titles, labels, help texts, radio options) holds it unescaped:
no image (a fetch off the machine), no link, no heading, no colour, no HTML."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.text.plain import plain
from dashboard.widgets.registry import get_registry
from tests.dashboard.helpers import DATA

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
HOSTILE = "# h ![x](http://evil.ex/i) :red[c] <img> www.evil.ex &lt;"  # fits every field
# What the hostile text would make if rendered: an image, a link, a colour, HTML, a bare URL, an entity; a heading
# where it starts a line.
RENDERED = ("![", "](", ":red[", "<img", "http:", "www.evil", "&lt;")
HEADING = re.compile(r"(?m)^\s*# h")
# Elements whose text Streamlit draws as Markdown; code, plain text, tables and typed values are drawn as text.
MARKDOWN_VALUES = {
    "markdown",
    "caption",
    "title",
    "header",
    "subheader",
    "error",
    "warning",
    "info",
    "success",
    "toast",
}
ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")

RUN_PARAMS = [
    "pattern",
    "variant",
    "threads",
    "ops",
    "duration",
    "lost",
    "latency",
    "attempts",
    "seed",
    "processes",
    "limit",
    "retry",
    "k.accounts",
    "k.not_a_knob",
    "profile",
    HOSTILE,
]
SWEEP_PARAMS = ["pattern", "threads", "ops", "repeats", "profile", HOSTILE]
SCENE_PARAMS = ["pattern", "variant", "profile", "type", "step", HOSTILE]
OTHER_PARAMS = ["run", "group", "sweep", "presenter"]


def _texts(node: Any) -> Iterator[str]:
    """Every string of `node` and its children that Streamlit renders as Markdown."""
    kind = getattr(node, "type", "")
    if kind in MARKDOWN_VALUES and isinstance(getattr(node, "value", None), str):
        yield node.value
    for attr in ("label", "help", "placeholder"):
        value = getattr(node, attr, None)
        if isinstance(value, str):
            yield value
    if kind == "radio":
        yield from (str(o) for o in node.options)
    children = getattr(node, "children", None)
    for child in children.values() if isinstance(children, dict) else children or ():
        yield from _texts(child)


def rendered(at: AppTest) -> list[str]:
    """The Markdown texts of the page that still render the hostile text (escapes taken out first)."""
    shown = [t for t in _texts(at._tree) if "evil" in t]
    return [t for t in shown if _renders(ESCAPED.sub("", t))]


def _renders(text: str) -> bool:
    return any(r in text for r in RENDERED) or HEADING.search(text) is not None


def page(path: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()  # the default page, before the link is opened
    at.query_params.clear()
    at.query_params.update(params)
    at.switch_page(path).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_escaping_helper_leaves_no_markdown_of_a_hostile_value() -> None:
    assert not _renders(ESCAPED.sub("", plain(HOSTILE)))
    assert ESCAPED.sub(lambda m: m.group()[1], plain(HOSTILE)) == HOSTILE  # shown as typed


@pytest.mark.parametrize(
    ("path", "names"),
    [
        ("app_pages/run.py", RUN_PARAMS + OTHER_PARAMS),
        ("app_pages/compare.py", RUN_PARAMS + OTHER_PARAMS),
        ("app_pages/sweep.py", SWEEP_PARAMS + OTHER_PARAMS),
        ("app_pages/history.py", ["run"]),
        ("app_pages/scenes.py", [*SCENE_PARAMS, "presenter"]),
    ],
)
def test_a_hostile_value_in_any_link_parameter_is_shown_as_plain_text(path: str, names: list[str]) -> None:
    for name in names:
        params = {name: HOSTILE} if name != HOSTILE else {name: "1"}
        if name.startswith("k.") or name in ("variant", "processes"):
            params["pattern"] = "atomic-counters"  # a pattern the knob belongs to (or not)
        with only_what_it_starts():
            at = page(path, {**params, "autostart": "1"})
        assert not rendered(at), (name, rendered(at))
        ignored = name in OTHER_PARAMS or (name == "variant" and "compare" in path)  # Compare runs every variant
        if not ignored and path != "app_pages/history.py":
            assert any("Not started" in w.value for w in at.warning), name  # refused, so not autostarted


@contextmanager
def only_what_it_starts() -> Iterator[None]:
    """A link with an ignored parameter and autostart=1 starts a real run (or sweep) with the defaults: stopped and
    forgotten after its page was checked, so the next page is not drawn beside runs this test left going."""
    registry = get_registry()
    runs = {r.id for r in registry.records()}
    sweeps = {s.id for s in registry.sweeps()}
    try:
        yield
    finally:
        for sweep in registry.sweeps():
            if sweep.id not in sweeps:
                sweep.stop()
        for record in registry.records():
            if record.id not in runs:
                registry.remove(record.id)


def hostile_import() -> bytes:
    lines = [json.loads(line) for line in (DATA / "atomic-counters-racy.jsonl").read_text().splitlines() if line]
    meta = lines[0]["meta"]
    summary = meta["summary"]
    for field in ("variant", "error", "state_reason", "title"):
        summary[field] = HOSTILE
    # Where an aws-like run's knobs came from: free text in the file, shown wherever the run says SIMULATED.
    summary["profile"] = {"name": "aws-like", "simulated": True, "calibrated_from": HOSTILE}
    summary["conflicts_by_cause"] = {"condition_refused": 3}  # the causes' caption says SIMULATED with the note
    summary["invariants"][0]["name"] = HOSTILE
    summary["invariants"][0]["explanation"] = HOSTILE
    summary["invariants"][0]["expected"] = HOSTILE
    summary["invariants"][0]["observed"] = HOSTILE
    for call in lines[1:4]:
        call["error"] = HOSTILE
        call["key"] = HOSTILE
    return "\n".join(map(json.dumps, lines)).encode()


def test_text_from_an_imported_file_is_shown_as_plain_text_everywhere() -> None:
    registry = get_registry()
    record = registry.import_history(f"{HOSTILE}.jsonl", hostile_import())
    try:
        at = page("app_pages/history.py", {})
        assert not rendered(at), rendered(at)
        assert any("evil" in t for t in _texts(at._tree))  # the text is there, escaped
        for key in [toggle.key for toggle in at.toggle]:  # the call log, a replay, a card's why: every view of the run
            shown = [toggle for toggle in at.toggle if toggle.key == key]
            if not shown:
                continue  # a view another toggle replaced (a replay redraws the cards)
            toggle = shown[0]
            toggle.set_value(True).run()
            assert not at.exception, [e.value for e in at.exception]
            assert not rendered(at), (toggle.label, rendered(at))
        for presenter in ("0", "1"):  # the Run page showing it, as a link to it does, also laid out for a projector
            at = page("app_pages/run.py", {"run": record.id, "presenter": presenter})
            # The toggle took its value on the first page drawn, before the link: set as the link asks.
            at.toggle(key="presenter").set_value(presenter == "1").run()
            assert not at.exception, [e.value for e in at.exception]
            assert not rendered(at), (presenter, rendered(at))
            assert any("evil" in t for t in _texts(at._tree))
    finally:
        registry.remove(record.id)


def test_a_calibrated_profile_files_own_words_are_shown_as_plain_text(tmp_path: Path) -> None:
    # The file's region and date (and its name) label every aws-like run's knobs: the sidebar's caption, the
    # knobs' starting values and each knob's help.
    from dashboard.widgets.sidebar import PROFILE_FILE_KEY

    measured = tmp_path / "mine.json"
    made = {"region": HOSTILE, "date": HOSTILE}
    measured.write_text(json.dumps({"profile": "aws-like", "knobs": {"commit_ms": 37}, "calibrated": made}))
    at = page("app_pages/run.py", {"profile": "aws-like"})
    at.text_input(key=PROFILE_FILE_KEY).set_value(str(measured)).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("evil" in t for t in _texts(at._tree))
    assert not rendered(at), rendered(at)
