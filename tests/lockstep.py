"""A forced schedule for race tests: the run's clients make their first calls in lockstep, or one call waits for
another client's, so a race the test needs happens in every run instead of in most.

`Lockstep(backend, clients, rounds)` is the test's backend (wrapping a real one, as tests/canned.Answering does):
each run client's k-th call (k <= rounds) leaves only once every one of the `clients` clients has reached its
k-th call, that is once all their (k-1)-th calls are answered. So a round of reads is answered for everyone
before anyone sends the writes that follow: a read-then-write pattern's update is lost, two checks both see a
free email, every acquire but one meets a held lock, with no luck involved. The calls are real calls over HTTP
to the real server; only their order is fixed. The pattern's own retries, sleeps and later calls run free.

`order={(c, k): (a, n)}` puts one call after another: client c's k-th call leaves once client a has had n calls
answered (e.g. a create after another client's spend). A client named in `order` stays out of the rounds.

Only the run's client threads (named client-N by the runner) wait; set-up and the judge's reads do not. A
client that ends before its last turn would hold the others: they wait `wait_s` at most, and `check()` then
fails the test naming what did not meet, instead of passing on a schedule that was not forced.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tests.hooked_backend import CLIENT_THREAD, Hook, HookedBackend

Step = tuple[int, int]  # (client id, its k-th call counting from 1) or (client id, calls answered)


class Lockstep(HookedBackend):
    def __init__(
        self,
        backend: Any,
        clients: int | None = None,
        rounds: int = 2,
        order: Mapping[Step, Step] | None = None,
        wait_s: float = 30.0,
    ) -> None:
        """`clients` None: each run's own thread count (a sweep's runs of 1 and 8 threads, one after another)."""
        super().__init__(backend)
        self._clients, self._rounds, self._order, self._wait_s = clients, rounds, dict(order or {}), wait_s
        self.missed: list[str] = []  # what did not meet in time (a client made fewer calls than the schedule)

    def hooks(self, client_kwargs: dict[str, Any]) -> tuple[Hook, Hook]:
        clients = self._clients or client_kwargs.get("threads") or 1
        schedule = _Schedule(clients, self._rounds, self._order, self._wait_s, self.missed)
        return schedule.wait_turn, schedule.answer

    def check(self) -> None:
        """Fail loudly when the schedule was not the forced one (the race was then left to chance)."""
        assert not self.missed, f"the forced schedule did not meet: {sorted(set(self.missed))}"


class _Schedule:
    """One run's rounds and order (the runner makes one client per run, shared by its threads)."""

    def __init__(self, clients: int, rounds: int, order: dict[Step, Step], wait_s: float, missed: list[str]) -> None:
        self._order = order
        self._ordered = {client for client, _ in order}
        parties = clients - len(self._ordered)
        self._rounds = [threading.Barrier(parties, timeout=wait_s) for _ in range(rounds if parties else 0)]
        self._wait_s = wait_s
        self._seen = threading.local()  # calls made so far by the calling client thread
        self._answered: Counter[int] = Counter()  # calls answered so far, per client
        self._changed = threading.Condition()
        self._missed = missed

    @staticmethod
    def _client_id() -> int | None:
        name = threading.current_thread().name
        return int(name.removeprefix(CLIENT_THREAD)) if name.startswith(CLIENT_THREAD) else None

    def wait_turn(self, **_: Any) -> None:
        me = self._client_id()
        if me is None:
            return
        made = getattr(self._seen, "calls", 0)
        self._seen.calls = made + 1
        after = self._order.get((me, made + 1))
        if after is not None:
            other, answered = after
            with self._changed:
                if not self._changed.wait_for(lambda: self._answered[other] >= answered, self._wait_s):
                    self._missed.append(f"client {me}'s call {made + 1} after client {other}'s {answered} answers")
        elif me not in self._ordered and made < len(self._rounds):
            try:
                self._rounds[made].wait()
            except threading.BrokenBarrierError:
                self._missed.append(f"round {made + 1}")

    def answer(self, **_: Any) -> None:
        me = self._client_id()
        if me is not None:
            with self._changed:
                self._answered[me] += 1
                self._changed.notify_all()
