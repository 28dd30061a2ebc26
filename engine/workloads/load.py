"""When each client starts its next operation.

Closed loop: at once, then `think_ms` after each operation. Open loop: operations arrive at `rate` per second as a
Poisson process, split evenly over the run's client threads (a sum of independent Poisson streams is one Poisson
stream at the summed rate), each thread with one request in flight. An arrival whose thread is still busy is sent
late; its latency still counts from its scheduled time (wrk2's correction for coordinated omission), and one
sent more than LATE_MS after it is counted late."""

from __future__ import annotations

import time

from engine.calls import ClientContext
from engine.workloads.schema import Load

LATE_MS = 10.0  # an arrival sent this much after its scheduled time could not be sent on time
SUSTAINED_SHARE = 0.95  # achieved ÷ target at or above which a rate counts as sustained
LATE_SHARE = 0.05  # and at most this share of arrivals late


class Pacer:
    """One client thread's schedule. `wait` returns how late (ms) the next operation starts, or None if stopped."""

    def __init__(self, load: Load, ctx: ClientContext) -> None:
        self.load = load
        self.ctx = ctx
        self.rate = (load.rate or 0.0) / max(1, ctx.threads)  # this thread's share of the arrivals
        self.next_s: float | None = None

    def wait(self) -> float | None:
        if self.load.mode == "closed":
            return 0.0
        now = time.monotonic()
        if self.next_s is None:
            # The first arrival, too, comes after an exponential gap: starting every thread at once would be a burst.
            self.next_s = now
        self.next_s += self.ctx.rng.expovariate(self.rate)
        if self.next_s > now and not self.ctx.sleep(self.next_s - now):
            return None
        return max(0.0, (time.monotonic() - self.next_s) * 1000)

    def after(self) -> bool:
        """After an operation: closed loop thinks; False when the run stopped meanwhile."""
        if self.load.mode == "closed" and self.load.think_ms > 0:
            return self.ctx.sleep(self.load.think_ms / 1000)
        return True
