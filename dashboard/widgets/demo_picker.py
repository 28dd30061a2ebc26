"""'Open a recorded demo': the histories in demos/ (recorded by `python -m engine demos`), opened as imported
runs, so a talk can show every pattern with no DynamoDB at all."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard.state.records import RunRecord
from dashboard.text.plain import plain
from dashboard.widgets.registry import Registry
from engine.errors import LabError
from engine.run.demos import DEFAULT_DIR, demo_files


def demo_label(path: Path) -> str:
    """ "atomic-counters--add.jsonl" -> "atomic-counters / add"."""
    pattern, _, variant = path.stem.partition("--")
    return f"{pattern} / {variant}"


def open_demo(registry: Registry, path: Path) -> RunRecord:
    """The demo as an imported run: the one already open if it still is (one copy however often it is opened)."""
    for record in registry.records():
        if record.file_name == path.name and record.run is None:
            return record
    return registry.import_history(path.name, path.read_bytes())


def demo_picker(registry: Registry, key: str, folder: Path = DEFAULT_DIR) -> RunRecord | None:
    """A picker and an Open button; the run opened on this click, or None."""
    files = demo_files(folder)
    if not files:
        st.caption(f"No recorded demos in {plain(folder)}: `python -m engine demos` records them.")
        return None
    c1, c2 = st.columns([2, 1], vertical_alignment="bottom")  # [3, 1] cut the button's label short at 1280 px
    pick = c1.selectbox("Recorded demo", files, format_func=demo_label, key=f"{key}-demo")
    if not c2.button("Open a recorded demo", icon=":material/movie:", key=f"{key}-demo-open", width="stretch"):
        return None
    try:
        return open_demo(registry, pick)
    except LabError as e:  # a file edited by hand, or recorded by another version
        from dashboard.widgets.ui import show_error

        show_error(e)
        return None
