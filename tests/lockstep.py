"""A forced schedule for race tests: the run's clients make their first calls in lockstep, so a race the test
needs happens in every run instead of in most.

`Lockstep(backend, clients, rounds)` is the test's backend (wrapping a real one, as tests/canned.Answering does):
each run client's k-th call (k <= rounds) leaves only once every one of the `clients` clients has reached its
k-th call, that is once all their (k-1)-th calls are answered. So a round of reads is answered for everyone
before anyone sends the writes that follow: a read-then-write pattern's update is lost, two checks both see a
free email, every acquire but one meets a held lock, with no luck involved. The calls are real calls over HTTP
to the real server; only their order is fixed. The pattern's own retries, sleeps and later calls run free.

Only the run's client threads (named client-N by the runner) wait; set-up and the judge's reads do not. A
client that ends before its last round would hold the others: they wait `wait_s` at most, and `check()` then
fails the test naming the round that did not meet, instead of passing on a schedule that was not forced.
"""

from __future__ import annotations

import threading
from typing import Any

CLIENT_THREAD = "client-"  # engine.runner names each client's thread client-<id>


class Lockstep:
    def __init__(self, backend: Any, clients: int, rounds: int = 2, wait_s: float = 30.0) -> None:
        self._backend = backend
        self._rounds = [threading.Barrier(clients, timeout=wait_s) for _ in range(rounds)]
        self._seen = threading.local()  # calls made so far by the calling client thread
        self.missed: list[int] = []  # rounds whose barrier broke (a client never reached it in time)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def client(self, **kwargs: Any) -> Any:
        client = self._backend.client(**kwargs)
        # before-call fires once per API call, in the caller's thread, before any attempt (retries do not wait).
        client.meta.events.register("before-call.dynamodb", self._wait_turn)
        return client

    def _wait_turn(self, **_: Any) -> None:
        if not threading.current_thread().name.startswith(CLIENT_THREAD):
            return
        made = getattr(self._seen, "calls", 0)
        self._seen.calls = made + 1
        if made < len(self._rounds):
            try:
                self._rounds[made].wait()
            except threading.BrokenBarrierError:
                if made + 1 not in self.missed:
                    self.missed.append(made + 1)

    def check(self) -> None:
        """Fail loudly when the schedule was not the forced one (the race was then left to chance)."""
        assert not self.missed, f"lockstep rounds {self.missed} did not meet: a client made fewer calls than that"
