"""24 · Atomic counters' view: the lost increments of read-then-put called out against the final count read back,
as the invariant counted them, and the same series as the whole-history oracle below."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dashboard.state.frames import detail_values, where
from dashboard.state.verdicts import Invariants, invariant, observed
from dashboard.views.atomic_counters import CounterSeries, counter
from engine.patterns.atomic_counters import FINAL_COUNT
from tests.dashboard.helpers import names, valid

# -- the oracle -----------------------------------------------------------------------------------------------------


def counter_facts(frame: pd.DataFrame, invariants: Invariants = (), action: str = "increment") -> dict[str, Any]:
    """Acknowledged increments against the value clients wrote and the final count read back."""
    mine = where(frame["action"], [action])
    sub = frame[mine & where(frame["outcome"], ["ok"])].sort_values("end_s", kind="stable")
    unknown = int((mine & where(frame["outcome"], ["info"])).sum())
    series = pd.DataFrame(
        {
            "t": sub["end_s"].to_numpy(),
            "acknowledged": np.arange(1, len(sub) + 1),
            "written": detail_values(sub, "read") + 1,
            "seq": sub["seq"].to_numpy(),
        }
    )
    final = observed(invariants, FINAL_COUNT)
    lost = max(0, len(sub) - final) if final is not None else None
    return {"acknowledged": len(sub), "unknown": unknown, "final": final, "lost": lost, "series": series}


# -- the view -----------------------------------------------------------------------------------------------------------


def test_counter_view_calls_out_the_lost_increments(counters_racy, counters_safe) -> None:
    f, summary = counters_racy
    facts = CounterSeries.of(f).facts(summary["invariants"])
    inv = invariant(summary["invariants"], FINAL_COUNT)
    assert inv is not None
    assert facts.acknowledged == inv["expected"] and facts.final == inv["observed"]
    assert facts.lost == inv["expected"] - inv["observed"] > 0
    fig = valid(counter(f, summary["invariants"]))
    assert f"{facts.lost:,} lost" in " ".join(a.text for a in fig.layout.annotations)
    assert "value a client wrote (read + 1)" in names(fig)
    f, summary = counters_safe
    fig = valid(counter(f, summary["invariants"]))
    assert fig.layout.meta["lost"] == 0 and "none lost" in fig.layout.title.subtitle.text


def test_counter_view_while_running_has_no_final_count(counters_racy) -> None:
    f, _ = counters_racy
    fig = valid(counter(f, []))
    assert fig.layout.meta["final"] is None and "read back when the run ends" in fig.layout.title.subtitle.text


def test_counter_facts_match_the_oracle(counters_racy) -> None:
    f, summary = counters_racy
    facts = CounterSeries.of(f).facts(summary["invariants"])
    expected = counter_facts(f, summary["invariants"])
    assert (facts.acknowledged, facts.unknown, facts.final, facts.lost) == (
        expected["acknowledged"],
        expected["unknown"],
        expected["final"],
        expected["lost"],
    )
    for column in ("t", "acknowledged", "written", "seq"):
        assert np.array_equal(facts.series[column], expected["series"][column], equal_nan=True), column
