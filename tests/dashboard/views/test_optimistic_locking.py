"""23 · Optimistic locking's view: the version history finds the lost updates the invariant found, and its
incremental aggregate agrees with the whole-history oracle below on every write's status."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dashboard.state.frames import WRITE_OPS, as_object, detail_values, strings, where
from dashboard.state.verdicts import invariant
from dashboard.views.optimistic_locking import VersionWrites, version_history
from engine.patterns.optimistic_locking import NO_LOST_UPDATE
from tests.dashboard.helpers import growing, load, names, scaled, valid

# -- the oracle: every versioned write's status from the whole history at once ----------------------------------------


def _versioned(frame: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The write calls whose detail carries a version: the rows, their versions and the versions they read."""
    if ("detail" not in frame and "detail.version" not in frame) or frame.empty:
        return frame.iloc[:0], np.zeros(0), np.zeros(0)
    sub = frame[where(frame["op"], WRITE_OPS)]
    version = detail_values(sub, "version")
    has = ~np.isnan(version)
    sub = sub[has]
    return sub, version[has], detail_values(sub, "read_version")


def version_writes(frame: pd.DataFrame, key: str | None = None) -> pd.DataFrame:
    """Writes that carry a version (detail "version"), with a status each.

    status: "written" (acknowledged and still in the chain), "lost" (acknowledged, then a later write of the
    same version erased it), "refused" (the version condition failed: a conflict), "unknown" (response lost).
    `key`: only this item; default the contested one (the key with the most versioned writes).
    """
    cols = ["seq", "client", "key", "t", "version", "read_version", "outcome", "status", "action", "winner"]
    sub, version, read_version = _versioned(frame)
    if sub.empty:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(
        {
            "seq": sub["seq"].to_numpy(),
            "client": sub["client"].to_numpy(),
            "key": as_object(strings(sub["key"])),
            "t": sub["end_s"].to_numpy(),
            "order": sub["complete_ns"].to_numpy() if "complete_ns" in sub else sub["end_s"].to_numpy(),
            "version": version.astype(np.int64),
            "read_version": np.where(np.isnan(read_version), -1, read_version).astype(np.int64),
            "outcome": as_object(strings(sub["outcome"])),
            "action": as_object(strings(sub["action"])),
        }
    )
    if key is None:
        key = out["key"].value_counts().idxmax()
    out = out[out["key"] == key].sort_values("order", kind="stable")
    out["status"] = as_object(
        np.where(out["outcome"] == "ok", "written", np.where(out["outcome"] == "info", "unknown", "refused"))
    ).to_numpy()
    out["winner"] = -1
    ok = out[out["outcome"] == "ok"]
    last = ok.groupby("version")["seq"].transform("last")
    lost = ok["seq"] != last
    out.loc[lost[lost].index, "status"] = "lost"
    out.loc[last.index, "winner"] = last
    return out[cols].reset_index(drop=True)


def lost_updates(frame: pd.DataFrame) -> pd.DataFrame:
    """Acknowledged versioned writes erased by a later write of the same version, on every key."""
    cols = ["seq", "client", "key", "version", "winner"]
    parts = [version_writes(frame, key) for key in version_writes_keys(frame)]
    parts = [p[p["status"] == "lost"] for p in parts]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat(parts)[cols].reset_index(drop=True)


def version_writes_keys(frame: pd.DataFrame) -> list[str]:
    sub, _, _ = _versioned(frame)
    return sorted(set(strings(sub["key"]))) if len(sub) else []


# -- the view -----------------------------------------------------------------------------------------------------------


def test_version_history_finds_the_lost_updates(locking_racy) -> None:
    f, summary = locking_racy
    lost = lost_updates(f)
    inv = invariant(summary["invariants"], NO_LOST_UPDATE)
    assert inv is not None and len(lost) == inv["observed"] == 129
    assert (lost["winner"] > lost["seq"]).all() or (lost["winner"] != lost["seq"]).all()
    fig = valid(version_history(f))
    assert fig.layout.meta["lost"] == 129
    assert "129 lost updates" in fig.layout.title.subtitle.text
    assert "same version written twice" in names(fig) and "version if none were lost" in names(fig)


def test_version_history_safe_variant_shows_conflicts_not_losses(locking_safe) -> None:
    f, _ = locking_safe
    fig = valid(version_history(f))
    assert fig.layout.meta["lost"] == 0 and fig.layout.meta["refused"] > 0
    assert "refused: version moved (conflict)" in names(fig)
    writes = version_writes(f)
    ok = writes[writes["status"] == "written"]
    assert ok["version"].is_unique  # the version check let each version be written once


def test_version_statuses_match_the_oracle() -> None:
    history, _ = load("optimistic-locking-racy")
    frame = history.snapshot(detail=True, requests=True)
    _, view = growing(history, "optimistic-locking", np.random.default_rng(5), 30)
    writes = view.get(VersionWrites)
    key = writes.contested()
    assert key is not None
    shown, sampling = writes.sample(key, 4000)
    expected = version_writes(frame, key)
    assert not sampling.sampled and len(shown) == len(expected)
    for column in ("seq", "version", "read_version", "status", "winner"):
        assert shown[column].tolist() == expected[column].tolist(), column


def test_lost_updates_of_a_big_run_match_the_oracle() -> None:
    history, summary = scaled("optimistic-locking-racy", 15_000)
    _, view = growing(history, summary["pattern"], np.random.default_rng(3), 2500)
    writes = view.get(VersionWrites)
    key = writes.contested()
    assert key is not None
    assert writes.items[key].n_lost == len(lost_updates(history.snapshot(detail=True, requests=True)))
