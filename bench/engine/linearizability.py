"""Linearizability check: the time to check a 100,000-call history, read from the History as a run's would be.

The history is shaped like an atomic-counters run with sequence numbers (add variant, 16 clients): each
client's calls follow each other, each call takes effect at a random instant inside its interval, and what it
returns follows from that order, so the history is linearizable and every call must be placed. A third of the
calls take sequence numbers, whose returned values pin each one's place; the ticket floor refuses sales once sold
out. Built before timing; the time covers reading the calls out of the History and the check (the median of three
passes).
"""

from __future__ import annotations

import heapq
import random
import statistics
import time
from typing import Any

from engine.explain.linearizable import LINEARIZABLE, check
from engine.record.history import Call, History, Outcome

CALLS = 100_000
CLIENTS = 16
TARGET_S = 5.0
TICKETS = 20_000


def history(n: int = CALLS, clients: int = CLIENTS, seed: int = 1) -> History:
    """`n` calls of `clients` clients on views, sequence and tickets, linearizable by construction."""
    rng = random.Random(seed)
    state = {"views": 0, "sequence": 0, "tickets": TICKETS}
    plan = ("views", "sequence", "tickets")
    # (apply instant, client, invoke, complete, step): a client's next call is sent after its last returned.
    pending: list[tuple[int, int, int, int, int]] = []
    for c in range(clients):
        invoke = rng.randrange(0, 50_000)
        complete = invoke + rng.randrange(200_000, 2_000_000)
        heapq.heappush(pending, (rng.randrange(invoke, complete), c, invoke, complete, 0))
    out = History(t0_ns=0)
    while len(out) < n:
        applied_at, c, invoke, complete, step = heapq.heappop(pending)
        key = plan[step % 3]
        detail: dict[str, Any] = {"op": step // 3}
        outcome, error = Outcome.OK, None
        if key == "tickets":
            if state["tickets"] > 0:
                state["tickets"] -= 1
            else:
                outcome, error = Outcome.FAIL, "ConditionalCheckFailedException"
        else:
            state[key] += 1
            if key == "sequence":
                detail["number"] = state["sequence"]
        action = {"views": "increment", "sequence": "next-number", "tickets": "buy-ticket"}[key]
        out.append(
            Call(
                client=c,
                action=action,
                op="UpdateItem",
                key=key,
                invoke_ns=invoke,
                complete_ns=complete,
                outcome=outcome,
                error=error,
                detail=detail,
            )
        )
        nxt_invoke = complete + rng.randrange(10_000, 100_000)
        nxt_complete = nxt_invoke + rng.randrange(200_000, 2_000_000)
        heapq.heappush(pending, (rng.randrange(nxt_invoke, nxt_complete), c, nxt_invoke, nxt_complete, step + 1))
    return out


def measure(n: int = CALLS, passes: int = 3) -> dict[str, Any]:
    """The median of `passes` checks of one history (the machine is shared: one pass can land on a busy moment)."""
    h = history(n)
    times = []
    for _ in range(passes):
        started = time.perf_counter()
        result = check(h, "atomic-counters", {"tickets": TICKETS}, budget_s=60.0)
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    return {
        "calls": len(h),
        "seconds": round(seconds, 2),
        "passes": [round(t, 2) for t in times],
        "verdict": result.verdict,
        "text": result.text(),
    }


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "figure": f"linearizability check of {result['calls']:,} calls (s)",
            "value": result["seconds"],
            "target": f"≤ {TARGET_S:g}",
            "pass": result["seconds"] <= TARGET_S and result["verdict"] == LINEARIZABLE,
            "note": result["text"],
        }
    ]
