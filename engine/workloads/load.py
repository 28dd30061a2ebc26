"""When each client starts its next operation.

Closed loop: at once, then `think_ms` after each operation. Open loop: operations arrive at `rate` per second as a
Poisson process. The client threads of one process take the arrivals of one shared schedule in turn, each with
one request in flight (so `clients` caps the requests in flight, and an idle thread takes the next arrival
whichever thread is still busy): the process's share of the rate is rate × its threads ÷ all threads. Where a
process does not know how many of the run's threads it holds (client processes, cluster workers), each thread
follows a Poisson stream of its own at rate ÷ threads (a sum of independent Poisson streams is one Poisson
stream at the summed rate). An arrival no thread is free for is sent late; its latency still counts from its
scheduled time (wrk2's correction for coordinated omission), and one sent more than LATE_MS after it is counted
late."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from engine.record.calls import ClientContext
from engine.workloads.schema.workload import Load

LATE_MS = 10.0  # an arrival sent this much after its scheduled time could not be sent on time
SUSTAINED_SHARE = 0.95  # achieved ÷ target at or above which a rate counts as sustained
LATE_SHARE = 0.05  # and at most this share of arrivals late
_SCHEDULE = "_workload_schedule"
_SCHEDULE_LOCK = threading.Lock()


@dataclass
class Schedule:
    """Poisson arrivals at `rate`: `remaining` of them (None: until the run stops), handed out one at a time."""

    rate: float
    remaining: int | None
    rng: random.Random
    stream: str
    next_s: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def take(self) -> float | None:
        """The next arrival's scheduled time (time.monotonic), or None when every arrival is taken."""
        with self.lock:
            if self.remaining is not None:
                if self.remaining <= 0:
                    return None
                self.remaining -= 1
            if self.next_s is None:
                self.next_s = time.monotonic()
            # The first arrival, too, comes after an exponential gap: starting every thread at once is a burst.
            self.next_s += self.rng.expovariate(self.rate)
            return self.next_s


def _schedule(load: Load, ctx: ClientContext) -> Schedule:
    local = len(ctx.shared.get("_ops_done") or ())
    if local >= 1:  # one process holds `local` of the run's threads: one schedule for them all
        with _SCHEDULE_LOCK:
            found = ctx.shared.get(_SCHEDULE)
            if found is None:
                total = None if ctx.ops_per_client is None else ctx.ops_per_client * local
                rate = (load.rate or 0.0) * local / max(1, ctx.threads)
                found = Schedule(rate, total, random.Random(ctx.rng.getrandbits(64)), "shared")
                ctx.shared[_SCHEDULE] = found
            return found
    return Schedule((load.rate or 0.0) / max(1, ctx.threads), ctx.ops_per_client, ctx.rng, f"client-{ctx.client_id}")


@dataclass(frozen=True)
class Arrival:
    o: int  # the client's op index
    late_ms: float  # how long after its scheduled time it starts
    stream: str | None  # the schedule it came from (open loop), for the achieved rate


def arrivals(load: Load, ctx: ClientContext) -> Iterator[Arrival]:
    """One client's operations: closed loop as `ctx.ops()` gives them, think time after each; open loop as the
    schedule hands them out, until it runs out or the run stops."""
    if load.mode == "closed":
        for o in ctx.ops():
            yield Arrival(o, 0.0, None)
            if load.think_ms > 0 and not ctx.sleep(load.think_ms / 1000):
                return
        return
    schedule = _schedule(load, ctx)
    o = 0
    while not ctx.stopped:
        due = schedule.take()
        if due is None:
            return
        now = time.monotonic()
        if due > now and not ctx.sleep(due - now):
            return
        yield Arrival(o, max(0.0, (time.monotonic() - due) * 1000), schedule.stream)
        o += 1
        ctx.ops_done = o
