"""The stage features through Streamlit's AppTest: a Compare pair replays on one clock, a recorded demo opens
from the History page (the real-browser side is in test_stage_browser.py)."""

from __future__ import annotations

import re

from tests.dashboard.test_pages import app, text, until


def test_a_compare_pair_replays_together_from_the_start() -> None:
    at = app("app_pages/compare.py")
    at.number_input(key="compare-atomic-counters-threads").set_value(2)
    at.number_input(key="compare-atomic-counters-ops").set_value(3)
    at.button(key="compare-start").click().run()
    until(at, lambda a: "all 4 invariants hold" in text(a) and "invariants broken" in text(a))
    next(t for t in at.toggle if t.label == "Replay").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    caption = next(c.value for c in at.caption if c.value.startswith("Replay at t = 0.00 s"))
    assert re.search(r"add: 0 of [1-9][\d,]* calls · read-then-put: 0 of [1-9][\d,]* calls", caption), caption
    assert "replaying: the verdicts come at the end" in text(at)
    assert {m.value for m in at.metric if m.label == "calls"} == {"0"}


def test_a_recorded_demo_opens_as_an_imported_run() -> None:
    at = app("app_pages/history.py")
    at.selectbox(key="history-demo").select_index(1).run()
    at.button(key="history-demo-open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "atomic-counters / read-then-put (racy)" in text(at)
    assert "imported from atomic-counters--read-then-put.jsonl" in "\n".join(c.value for c in at.caption)
