"""An imported history's verdicts checked against its own calls, before the run is kept: a file is not trusted
because its call count matches. Three kinds of damage are caught:

- a summary whose run was not over (running, pending, preparing, verifying): its verdicts are not final, so the
  run is shown as incomplete, with none;
- the same call twice (one line replaced by a copy of its neighbour): refused as a damaged file;
- a carried verdict its calls contradict: where the pattern can judge from the calls (with the final values the
  file carries), the verdict is judged again and the page says "contradicted by its own calls", never the PASS.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from dashboard.verdicts import key_of
from engine.errors import HistoryFileError
from engine.history import History
from engine.patterns.base import Invariant

UNFINISHED = frozenset({"pending", "preparing", "running", "verifying"})
CONTRADICTED = "contradicted by its own calls"


def unfinished(summary: dict[str, Any], name: str) -> dict[str, Any]:
    """A summary exported before its run ended: kept to look at, marked failed, its verdicts set aside."""
    state = summary.get("state")
    if state not in UNFINISHED:
        return summary
    return {
        **summary,
        "state": "failed",
        "error": (
            f"{name} was exported while its run was still {state}: the run is incomplete, so the verdicts it "
            "carries are not final and are not shown"
        ),
        "invariants": [],
        "invariants_in_file": summary.get("invariants") or [],
    }


def refuse_repeated_calls(history: History, name: str) -> None:
    """HistoryFileError when two lines are one call twice: same client, action, key and times to the ns."""
    frame = history.snapshot()
    if len(frame) < 2:
        return
    same = frame.duplicated(["client", "action", "op", "key", "invoke_ns", "complete_ns"], keep=False)
    if not same.any():
        return
    first = [int(s) for s in frame.loc[same, "seq"].head(2)]
    raise HistoryFileError(
        f"{name} is damaged: call lines {first[0] + 2} and {first[1] + 2} are the same call twice (one client, "
        "one action, the same times to the nanosecond), so its calls and verdicts cannot be trusted",
        "import the file as the lab exported it",
    )


def rejudged(summary: dict[str, Any], history: History) -> dict[str, Any]:
    """The summary with each verdict the calls can judge judged again; where the file's verdict differs, the new
    one is shown, saying so, and the run's error names them."""
    judge = JUDGES.get(str(summary.get("pattern")))
    carried = summary.get("invariants") or []
    if judge is None or not carried:
        return summary
    fresh = {inv.key: inv for inv in judge(history.snapshot(detail=True), summary, carried)}
    out, contradicted = [], []
    for inv in carried:
        new = fresh.get(key_of(inv))
        if new is None or new.holds == inv.get("holds") or new.holds is None:
            out.append(inv)
            continue
        said = {True: "PASS", False: "FAIL", None: "CANNOT JUDGE"}[inv.get("holds")]
        contradicted.append(str(inv.get("name") or new.name))
        judged = new.as_dict()
        judged["explanation"] = f"{CONTRADICTED} (the file said {said}): {new.explanation}"
        judged["contradicted"] = True
        out.append(judged)
    if not contradicted:
        return summary
    return {
        **summary,
        "state": "failed",  # an edited file: its run's message says which verdicts, shown as the calls judge them
        "invariants": out,
        "error": (
            f"the verdicts the file carries for {', '.join(contradicted)} are {CONTRADICTED}: shown as judged "
            "again from its calls"
        ),
    }


def _carried_int(carried: list[dict[str, Any]], key: str) -> int | None:
    inv = next((i for i in carried if key_of(i) == key), None)
    value = inv.get("observed") if inv else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _atomic_counters(frame: pd.DataFrame, summary: Mapping[str, Any], carried: list[dict[str, Any]]) -> list[Invariant]:
    """The counters' verdicts from the calls and the final values the file carries (the table's, read back)."""
    from engine.patterns import atomic_counters as ac

    given = summary.get("options")
    options: Mapping[str, Any] = given if isinstance(given, dict) else {}
    out = []
    views = _carried_int(carried, ac.FINAL_COUNT)
    if views is not None:
        inv = ac._final_count(frame, views)
        if inv.calls and inv.holds:  # two acknowledged increments wrote the same value: one of them was lost
            inv = dataclasses.replace(inv, holds=False, explanation="acknowledged increments wrote the same value")
        out.append(inv)
    if any(key_of(i) == ac.SEQUENCE_GAP_FREE for i in carried):
        out.append(ac._sequence_gap_free(frame))
    remaining, tickets = _carried_int(carried, ac.REMAINING_ADDS_UP), options.get("tickets")
    if remaining is not None and isinstance(tickets, int):
        out.append(ac._remaining_adds_up(frame, remaining, tickets))
    return out


# Patterns whose verdicts the calls (with the carried final values) decide; the others keep the file's.
JUDGES: dict[str, Callable[[pd.DataFrame, Mapping[str, Any], list[dict[str, Any]]], list[Invariant]]] = {
    "atomic-counters": _atomic_counters,
}
