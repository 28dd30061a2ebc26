"""28 · GSI consistency's view: from each write to the first read that saw it, the simulated lag labelled so, the
same per-write figures as the whole-history oracle below."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.state.frames import detail_values, where
from dashboard.views.gsi_consistency import GsiReads, gsi_staleness
from tests.dashboard.helpers import frame, valid

# -- the oracle -----------------------------------------------------------------------------------------------------


def staleness(frame: pd.DataFrame) -> pd.DataFrame:
    """Per acknowledged write: when it was acknowledged, ms until the first read that saw it, reads it took.

    `seen_ms` is NaN for a write no read ever saw. Reads are matched to writes by (client, op).
    """
    cols = ["client", "op", "t", "seen_ms", "reads", "stale_reads", "seq"]
    writes = frame[where(frame["action"], ["write"]) & where(frame["outcome"], ["ok"])]
    reads = frame[where(frame["action"], ["read-back"]) & where(frame["outcome"], ["ok"])]
    if writes.empty:
        return pd.DataFrame(columns=cols)
    w = pd.DataFrame(
        {
            "client": writes["client"].to_numpy(),
            "op": detail_values(writes, "op"),
            "t": writes["end_s"].to_numpy(),
            "done_ns": writes["complete_ns"].to_numpy(),
            "seq": writes["seq"].to_numpy(),
        }
    )
    r = pd.DataFrame(
        {
            "client": reads["client"].to_numpy(),
            "op": detail_values(reads, "op"),
            "sent_ns": reads["invoke_ns"].to_numpy(),
            "stale": detail_values(reads, "stale") > 0,
        }
    )
    per = r.groupby(["client", "op"]).agg(reads=("stale", "size"), stale_reads=("stale", "sum"))
    first = r[~r["stale"]].groupby(["client", "op"])["sent_ns"].min().rename("first_ns")
    out = w.join(per, on=["client", "op"]).join(first, on=["client", "op"])
    out["seen_ms"] = np.clip((out["first_ns"] - out["done_ns"]) / 1e6, 0, None)
    out[["reads", "stale_reads"]] = out[["reads", "stale_reads"]].fillna(0).astype(int)
    return out[cols].reset_index(drop=True)


# -- the view -----------------------------------------------------------------------------------------------------------


def test_gsi_staleness_from_write_to_first_visible_read() -> None:
    f, summary = frame("gsi-consistency-racy")
    data = GsiReads.of(f).table()
    assert len(data) == 12 and data["seen_ms"].notna().all()
    assert (data["seen_ms"] >= summary["options"]["gsi_lag_ms"] * 0.9).all()  # the simulated lag, give or take
    assert int(data["stale_reads"].sum()) == 36
    fig = valid(gsi_staleness(f, summary["invariants"], summary["options"]))
    assert "lag 300 ms (simulated)" in fig.layout.annotations[0].text


def test_gsi_reads_match_the_oracle() -> None:
    f, _ = frame("gsi-consistency-racy")
    pd.testing.assert_frame_equal(GsiReads.of(f).table(), staleness(f), check_dtype=False)


def test_an_imported_write_without_its_op_number_is_drawn_not_a_crash() -> None:
    f, summary = frame("gsi-consistency-racy")
    first_write = f.index[f["action"] == "write"][0]
    f.at[first_write, "detail"] = {**f.at[first_write, "detail"], "op": None}  # as a hand-edited file may hold
    fig = valid(gsi_staleness(f, summary["invariants"], summary["options"]))
    hover = [text for trace in fig.data for text in (trace.text or ())]
    assert any(" write ?: " in text for text in hover) and len(hover) == 12
