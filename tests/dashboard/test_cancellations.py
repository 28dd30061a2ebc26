"""Cancellation reasons (dashboard/figures/cancellations.py), which every transactional pattern's view draws: which item of
which transaction failed and why, the same as the whole-history oracle below."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest

from dashboard.figures.cancellations import Cancellations, cancellation_heatmap, tx_item_kinds
from dashboard.figures.palette import short_code
from dashboard.state.frames import details, strings, where
from tests.dashboard.helpers import call, frame, history_of, valid

# -- the oracle -----------------------------------------------------------------------------------------------------


def cancellation_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Count of (call action, transaction item, reason code) over cancelled transactions; "None" reasons dropped."""
    cols = ["action", "item", "reason", "count"]
    if "detail" not in frame:
        return pd.DataFrame(columns=cols)
    counts: Counter[tuple[str, str, str]] = Counter()
    frame = frame[where(frame["error"], ["TransactionCanceledException"])] if "error" in frame else frame
    requests = frame["request"] if "request" in frame else pd.Series([None] * len(frame), index=frame.index)
    kinds_cache: dict[str, list[str]] = {}
    for action, d, request in zip(strings(frame["action"]), details(frame), requests):
        reasons = d.get("reasons")
        if not reasons:
            continue
        if request not in kinds_cache:
            kinds_cache[request] = tx_item_kinds(request)
        kinds = kinds_cache[request]
        for i, reason in enumerate(reasons):
            if not reason or reason == "None":
                continue
            item = f"item {i + 1}" + (f" ({kinds[i]})" if i < len(kinds) else "")
            counts[(action, item, short_code(str(reason)))] += 1
    if not counts:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame([(*k, v) for k, v in counts.items()], columns=cols).sort_values(cols[:3]).reset_index(drop=True)


# -- the aggregate and its heatmap ------------------------------------------------------------------------------------


def test_cancellation_heatmap_action_by_reason() -> None:
    f, _ = frame("transactions-safe")
    counts = Cancellations.of(f).table()
    assert set(counts["reason"]) == {"ConditionalCheckFailed"}
    assert set(counts["item"]) == {"item 2 (Update)"}  # the stock check, as in the seed
    fig = valid(cancellation_heatmap(f))
    assert fig.data[0].type == "heatmap" and fig.layout.meta["cells"] == 1
    # Level labels in two lines under the cells: rotated on top, they ran into the chart's title on a projector.
    assert fig.layout.xaxis.tickangle == 0 and fig.layout.xaxis.side != "top"
    assert list(fig.layout.xaxis.ticktext) == ["Conditional<br>CheckFailed"]
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0, fig.data[0].z.max())  # the scale starts at 0, not at the least
    assert valid(cancellation_heatmap(frame("atomic-counters-safe")[0])).layout.meta["empty"]


def test_cancellation_reasons_from_a_synthetic_history() -> None:
    req = ">>> TransactWriteItems\n    - Put t\n        item: {}\n    - Update t\n        key: {}"
    calls = [
        call(
            0,
            "place-order",
            "TransactWriteItems",
            0,
            0.1,
            "fail",
            "TransactionCanceledException",
            detail={"reasons": ["None", "ConditionalCheckFailed"]},
            request=req,
        ),
        call(
            1,
            "place-order",
            "TransactWriteItems",
            0,
            0.1,
            "fail",
            "TransactionCanceledException",
            detail={"reasons": ["TransactionConflict", "None"]},
            request=req,
        ),
    ]
    counts = Cancellations.of(history_of(calls).snapshot(detail=True, requests=True)).table()
    assert sorted(map(tuple, counts[["item", "reason"]].to_numpy())) == [
        ("item 1 (Put)", "TransactionConflict"),
        ("item 2 (Update)", "ConditionalCheckFailed"),
    ]


@pytest.mark.parametrize("name", ["transactions-safe", "unique-constraints-safe", "atomic-counters-racy"])
def test_cancellations_match_the_oracle(name: str) -> None:
    f, _ = frame(name)
    pd.testing.assert_frame_equal(Cancellations.of(f).table(), cancellation_counts(f), check_dtype=False)
