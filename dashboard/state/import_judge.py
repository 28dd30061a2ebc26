"""An imported history's verdicts checked against its own calls, before the run is kept: a file is not trusted
because its call count matches. Three kinds of damage are caught:

- a summary whose run was not over (running, pending, preparing, verifying): its verdicts are not final, so the
  run is shown as incomplete, with none;
- the same call twice (one line replaced by a copy of its neighbour): a damaged file, shown failed, no verdicts;
- a carried verdict its calls contradict: where the pattern can judge from the calls (with the final values the
  file carries), the verdict is judged again and the page says "contradicted by its own calls", never the PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dashboard.state.verdicts import key_of
from engine.options import RunOptions
from engine.patterns.base import Invariant
from engine.record.history import History

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


def repeated_calls(summary: dict[str, Any], history: History, name: str) -> dict[str, Any]:
    """A file holding one call twice (same client, action, key and times to the ns: one client's calls follow
    each other, so never in an honest file) is damaged: kept to look at, marked failed, its verdicts set aside."""
    frame = history.snapshot()
    same = frame.duplicated(["client", "action", "op", "key", "invoke_ns", "complete_ns"], keep=False)
    if len(frame) < 2 or not same.any():
        return summary
    first = [int(s) + 2 for s in frame.loc[same, "seq"].head(2)]  # file lines: the header is line 1
    return {
        **summary,
        "state": "failed",
        "error": (
            f"{name} is damaged: lines {first[0]} and {first[1]} are the same call twice (one client, one action, "
            "the same times to the nanosecond), so the verdicts it carries do not judge its calls and are not shown"
        ),
        "invariants": [],
        "invariants_in_file": summary.get("invariants") or [],
    }


def rejudged(summary: dict[str, Any], history: History) -> dict[str, Any]:
    """The summary with each verdict the calls can judge judged again; where the file's verdict differs, the new
    one is shown, saying so, and the run's error names them."""
    judge = JUDGES.get(str(summary.get("pattern")))
    carried = summary.get("invariants") or []
    if judge is None or not carried:
        return summary
    try:
        fresh = {inv.key: inv for inv in judge(history, summary, carried)}
    except (KeyError, TypeError, ValueError, AttributeError):
        return summary  # the file's options do not fit what the judge reads: its verdicts stay as they are
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


def _atomic_counters(history: History, summary: Mapping[str, Any], carried: list[dict[str, Any]]) -> list[Invariant]:
    """The counters' verdicts from the calls and the final values the file carries (the table's, read back)."""
    from engine.patterns import atomic_counters as ac

    frame = history.snapshot(detail=True)
    given = summary.get("options")
    options: Mapping[str, Any] = given if isinstance(given, dict) else {}
    out = []
    views = _carried_int(carried, ac.FINAL_COUNT)
    if views is not None:  # the judge the run used, with the count it read back: an honest file gets its verdict
        out.append(ac._final_count(frame, views))
    if any(key_of(i) == ac.SEQUENCE_GAP_FREE for i in carried):
        out.append(ac._sequence_gap_free(frame))
    remaining, tickets = _carried_int(carried, ac.REMAINING_ADDS_UP), options.get("tickets")
    if remaining is not None and isinstance(tickets, int):
        out.append(ac._remaining_adds_up(frame, remaining, tickets))
    return out


def _options(summary: Mapping[str, Any]) -> RunOptions:
    given = summary.get("options")
    return RunOptions(
        variant=str(summary.get("variant") or ""),
        threads=int(summary.get("threads") or 1),
        ops_per_client=summary.get("ops_per_client"),
        values=given if isinstance(given, dict) else {},
    )


def _optimistic_locking(history: History, summary: Mapping[str, Any], carried: list[dict[str, Any]]) -> list[Invariant]:
    """No lost update: two acknowledged writes of one version number, from the calls alone (the balance and the
    version count need the table, so they keep the file's verdicts)."""
    from engine.patterns.optimistic_locking import invariants as ol

    options = _options(summary)
    frame = history.snapshot(detail=True)
    ok = frame[frame["action"].isin(["deposit", "withdraw"])]
    writes = ol._Writes(
        ok=ok[ok["outcome"] == "ok"],
        unknown=ok[ok["outcome"] == "info"],
        final={},
        accounts=int(options["accounts"]),
        initial_balance=int(options["initial_balance"]),
    )
    return [ol._no_lost_update(writes)]


def _gsi_consistency(history: History, summary: Mapping[str, Any], carried: list[dict[str, Any]]) -> list[Invariant]:
    """Read-your-writes and visible-within-lag come from the read-backs the calls recorded (convergence needs the
    table and the index, so it keeps the file's verdict)."""
    from engine.patterns import gsi_consistency as gsi

    reads = gsi._ReadBacks.of(history, _options(summary))
    return [gsi._read_your_writes(reads), gsi._visible_within_lag(reads)]


# Patterns whose verdicts the calls (with the carried final values) decide; the others keep the file's. A file's
# options that do not fit (a knob missing, of another type) leave its verdicts as they are: never a guess.
JUDGES: dict[str, Callable[[History, Mapping[str, Any], list[dict[str, Any]]], list[Invariant]]] = {
    "atomic-counters": _atomic_counters,
    "optimistic-locking": _optimistic_locking,
    "gsi-consistency": _gsi_consistency,
}
