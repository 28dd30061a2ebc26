"""The happens-before diagram of a witness: one lane per client, only the witness's calls, an arrow per relation,
the anomaly as the title and the story under it; opened from a FAIL card of an imported racy run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.figures.happens_before import happens_before
from engine.explain import explain
from engine.record.history import read_jsonl
from engine.run.demos import DEFAULT_DIR, demo_files
from tests.dashboard.helpers import DATA, valid

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
RACY = [p for p in demo_files() if any(i["holds"] is False for i in read_jsonl(p)[1]["summary"]["invariants"])]


@pytest.mark.parametrize("path", RACY, ids=lambda p: p.stem)
def test_each_witness_of_a_racy_demo_draws_as_lanes_bars_and_arrows(path: Path) -> None:
    history, meta = read_jsonl(path)
    witnesses = explain(meta["summary"]["pattern"], history, meta["summary"]["invariants"])
    drawn = 0
    for witness in witnesses.values():
        if witness is None:
            continue
        fig = valid(happens_before(history, witness))
        clients = sorted({s.call.client for s in witness.steps})
        assert list(fig.layout.yaxis.ticktext) == [f"client {c}" for c in clients]
        assert len(fig.data) == len(witness.steps)  # the witness's calls and nothing else
        arrows = [a for a in fig.layout.annotations if a.showarrow]
        assert len(arrows) == len(witness.edges)
        for arrow in arrows:  # an arrow never points back in time
            assert arrow.ax <= arrow.x
        assert witness.anomaly.value.capitalize() in fig.layout.title.text
        assert fig.layout.title.subtitle.text.replace("<br>", " ") == witness.story
        drawn += 1
    assert drawn


def test_a_fail_card_opens_its_witness_with_the_story_and_the_diagram() -> None:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("app_pages/history.py").run()
    at.file_uploader(key="history-upload").set_value(
        ("counters.jsonl", (DATA / "atomic-counters-racy.jsonl").read_bytes(), "application/x-ndjson")
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    charts = len(at.get("plotly_chart"))
    toggle = next(t for t in at.toggle if t.label == "Why: the calls that prove it")
    toggle.set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    stories = [m.value for m in at.markdown if m.value.startswith("**Lost update** · ")]
    assert stories and "both read views = " in stories[0] and "one increment vanished" in stories[0]
    assert len(at.get("plotly_chart")) == charts + 1


def _imported(at: AppTest, name: str, data: bytes) -> AppTest:
    at.switch_page("app_pages/history.py").run()
    at.file_uploader(key="history-upload").set_value((name, data, "application/x-ndjson")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_imported_file_gets_the_second_opinion_and_a_contradicted_one_is_shown_so() -> None:
    racy = (DATA / "atomic-counters-racy.jsonl").read_bytes()
    at = _imported(AppTest.from_file(APP, default_timeout=60).run(), "counters.jsonl", racy)
    assert any("the linearizability check: not linearizable" in c.value for c in at.caption)
    assert not any("Second opinion disagrees" in e.value for e in at.error)

    # A racy demo's calls under a header whose verdicts all say PASS (conditional writes: verdicts an import does
    # not judge again from the calls): no order explains the calls, so the file contradicts itself.
    unguarded = (DEFAULT_DIR / "conditional-writes--unguarded.jsonl").read_bytes()
    header, rest = unguarded.split(b"\n", 1)
    meta = json.loads(header)
    for inv in meta["meta"]["summary"]["invariants"]:
        inv.update(holds=True, verdict="PASS")
    tampered = json.dumps(meta).encode() + b"\n" + rest
    at = _imported(AppTest.from_file(APP, default_timeout=60).run(), "claims-pass.jsonl", tampered)
    assert any("Second opinion disagrees" in e.value and "bug in the lab" in e.value for e in at.error)
