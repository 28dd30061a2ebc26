"""The stage features through Streamlit's AppTest: a Compare pair replays on one clock, a recorded demo opens
from the History page (the real-browser side is in test_stage_browser.py)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from tests.dashboard.test_pages import APP, app, text, until, verdicts


def test_a_compare_pair_replays_together_from_the_start() -> None:
    at = app("app_pages/compare.py")
    at.number_input(key="compare-atomic-counters-threads").set_value(4)
    at.number_input(key="compare-atomic-counters-ops").set_value(20)
    at.button(key="compare-start").click().run()
    until(at, lambda a: len(verdicts(a)) == 2)  # both ended, whatever the racy side lost: the replay needs no loss
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


def _open(link: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for name, value in link.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_link_with_the_aws_like_profile_starts_its_run_under_it() -> None:
    at = _open({"pattern": "atomic-counters", "variant": "add", "threads": "2", "ops": "3", "profile": "aws-like"})
    assert at.sidebar.radio(key="server_profile").value == "aws-like"
    at.query_params["autostart"] = "1"  # the same link, now asking to start: the page has seen it, no new values
    at.query_params["threads"] = "3"  # ...edited by hand: a new link
    at.run()
    until(at, lambda a: "of 4 hold" in text(a))  # verified
    captions = "\n".join(c.value for c in at.caption)
    assert "Server profile aws-like (SIMULATED" in captions, captions
    assert "· 3 threads × 3 ops" in text(at)
    assert at.query_params["profile"] == "aws-like"

    at.sidebar.radio(key="server_profile").set_value("exact").run()  # the user's choice sticks, the link follows
    at.run()
    assert at.sidebar.radio(key="server_profile").value == "exact"
    assert "profile" not in at.query_params


def test_a_bad_profile_in_a_link_is_refused_and_the_run_not_started() -> None:
    at = _open({"pattern": "atomic-counters", "profile": "fast", "autostart": "1"})
    assert "The link's Server profile 'fast' is not one of exact, aws-like" in text(at)
    assert any("Not started" in w.value for w in at.warning)
    assert at.sidebar.radio(key="server_profile").value == "exact"


def test_after_an_autostart_link_the_users_edits_stick_at_once() -> None:
    at = _open({"pattern": "atomic-counters", "variant": "add", "threads": "2", "ops": "3", "autostart": "1"})
    assert at.number_input(key="run-atomic-counters-threads").value == 2
    at.number_input(key="run-atomic-counters-threads").set_value(5).run()
    at.radio(key="run-atomic-counters-variant").set_value("read-then-put").run()
    at.run()
    assert at.number_input(key="run-atomic-counters-threads").value == 5
    assert at.radio(key="run-atomic-counters-variant").value == "read-then-put"
    assert at.query_params["threads"] == "5" and at.query_params["variant"] == "read-then-put"


def test_a_rerun_that_brings_an_older_url_of_this_session_keeps_the_users_edits() -> None:
    # The browser sends its URL with each rerun; on a loaded machine a second edit can go before the URL of the
    # first has arrived, so the rerun carries the older URL the page wrote itself. That is not a new link.
    at = _open({"pattern": "atomic-counters", "variant": "add", "threads": "2", "ops": "3"})
    older = dict(at.query_params)
    at.radio(key="run-atomic-counters-variant").set_value("read-then-put").run()
    at.number_input(key="run-atomic-counters-threads").set_value(5).run()
    for name in list(at.query_params):
        del at.query_params[name]
    for name, value in older.items():
        at.query_params[name] = value
    at.number_input(key="run-atomic-counters-ops").set_value(7).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="run-atomic-counters-variant").value == "read-then-put"
    assert at.number_input(key="run-atomic-counters-threads").value == 5
    assert (at.query_params["variant"], at.query_params["threads"], at.query_params["ops"]) == (
        "read-then-put",
        "5",
        "7",
    )


def test_a_compare_pair_replays_in_presenter_view_too() -> None:
    at = app("app_pages/compare.py")
    at.toggle(key="presenter").set_value(True)
    for name, value in {"pattern": "atomic-counters", "threads": "4", "ops": "20", "autostart": "1"}.items():
        at.query_params[name] = value
    at.run()
    until(at, lambda a: len(verdicts(a)) == 2)  # both ended, whatever the racy side lost
    ended = verdicts(at)
    next(t for t in at.toggle if t.label == "Replay").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    scrubber = next(s for s in at.slider if s.label.startswith("Replay at t = 0.00 s"))
    assert re.search(r"add: 0 of [1-9][\d,]* calls · read-then-put: 0 of [1-9][\d,]* calls", scrubber.label)
    assert {m.value for m in at.metric if m.label != "harm"} == {"0"}  # both sides' counters, at the start
    assert {m.value for m in at.metric if m.label == "harm"} == {"pending"}  # judged at the end, as the verdicts
    scrubber.set_value(scrubber.max).run()  # the end: each side's own verdict again
    assert verdicts(at) == ended
    assert {m.value for m in at.metric if m.label == "calls"} != {"0"}


def test_a_long_verdict_in_a_presenter_pair_is_cut_at_a_word_never_clipped_mid_line() -> None:
    # A pair's verdict boxes have one fixed height so both sides line up: 26's long verdict was clipped mid-line.
    from dashboard.widgets.presenter import PAIR_VERDICT_CHARS

    at = app("app_pages/compare.py")
    at.toggle(key="presenter").set_value(True)
    # 8 users on 5 emails share one once all 8 sign up, and with the index 10 s behind every check finds its
    # email free unless a client's first check comes 10 s after another's sign-up: a long broken verdict.
    link = {
        "pattern": "unique-constraints",
        "threads": "8",
        "ops": "20",
        "k.emails": "5",
        "k.gsi_lag_ms": "10000",
        "autostart": "1",
    }
    at.query_params.clear()  # the page wrote its first pattern's knobs into the URL: this link is a fresh one
    for name, value in link.items():
        at.query_params[name] = value
    at.run()
    until(at, lambda a: len(verdicts(a)) == 2)
    assert not at.exception, [e.value for e in at.exception]
    racy = next(e.value for e in at.error if "check-then-write (racy)" in e.value)
    badge, said = racy.split(" ", 1)  # the run's state first, as the header's badge says it
    assert badge == ":green-badge[DONE]"
    assert said.endswith("…**") and len(said.strip("*")) <= PAIR_VERDICT_CHARS
    assert "users took an email someone already had" in racy


def test_a_run_whose_verdicts_cannot_be_judged_is_never_shown_in_a_green_box() -> None:
    # "0 of 1 invariants hold; 1 cannot be judged" sat in a green success box, as a pass would.
    from dashboard.widgets.live import verdict_box

    class Judged:
        def __init__(self, *holds: bool | None) -> None:
            self.holds = holds

        def invariants(self) -> list[dict[str, object]]:
            return [{"name": f"rule {i}", "holds": h} for i, h in enumerate(self.holds)]

    import streamlit as st

    assert verdict_box(Judged(None)) is st.warning  # type: ignore[arg-type]
    assert verdict_box(Judged(True, None)) is st.warning  # type: ignore[arg-type]
    assert verdict_box(Judged(True, False, None)) is st.error  # type: ignore[arg-type]
    assert verdict_box(Judged(True, True)) is st.success  # type: ignore[arg-type]
    assert verdict_box(Judged()) is st.info  # type: ignore[arg-type]


def test_a_demo_opened_on_the_run_page_keeps_its_controls_and_link() -> None:
    at = app("app_pages/history.py")
    demos = at.selectbox(key="history-demo")
    demos.select(next(o for o in demos.options if o == "transactions / transact")).run()
    at.button(key="history-demo-open").click().run()
    at.button(key="history-open").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "transactions / transact (safe)" in text(at)  # the demo shown...
    # ...with its own controls (4 threads × 6 ops, 200 in stock, not the defaults), so Start runs what it shows
    assert at.selectbox(key="run-pattern").value == "transactions"
    assert at.radio(key="run-transactions-variant").value == "transact"
    assert at.number_input(key="run-transactions-threads").value == 4
    assert at.number_input(key="run-transactions-ops").value == 6
    assert at.number_input(key="run-transactions-opt-stock").value == 200
    link = {name: at.query_params[name] for name in ("pattern", "variant", "threads", "ops", "k.stock")}
    assert link == {"pattern": "transactions", "variant": "transact", "threads": "4", "ops": "6", "k.stock": "200"}


def test_a_stopped_run_shows_it_went_through_verifying_and_judged_only_the_calls_made() -> None:
    at = app("app_pages/run.py")
    at.number_input(key="run-atomic-counters-threads").set_value(2)
    at.radio(key="run-atomic-counters-limit").set_value("duration (s)").run()
    at.number_input(key="run-atomic-counters-duration").set_value(3600.0)  # an hour: it ends only by the Stop
    at.button(key="run-start").click().run()
    until(at, lambda a: not a.button(key="run-stop").disabled)
    at.button(key="run-stop").click().run()
    until(at, lambda a: "of 4 hold" in text(a))
    header = next(m.value for m in at.markdown if m.value.startswith("## "))
    # The whole trail, however short the verification was next to the page's polls.
    assert re.search(r":blue-badge\[RUNNING [\d.]+ s\] → :violet-badge\[VERIFYING [\d.]+ s\] → ", header), header
    assert header.split(" → ")[-1].startswith(":orange-badge[STOPPED]"), header
    assert re.search(r"of 4 hold\*\* · stopped, so judged only on the [\d,]+ calls? made", text(at)), text(at)
