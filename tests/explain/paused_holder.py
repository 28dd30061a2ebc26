"""A forced schedule for the lock's stale write: a worker paused past its lease writes only after its successor
has read the resource, and the writes leave in the order of the reads, so the stale write happens in every run
instead of only when the successor comes within the pause.

`PausedHolder(backend, workers)` is the test's backend (wrapping a real one, as tests/lockstep.Lockstep does). Each
run client's write of the protected resource (UpdateItem SET jobs) leaves once all `workers` clients have had their
read of it (GetItem, or a fenced holder's UpdateItem SET lastToken) answered, and after the write of every client
that read before it. Lockstep's rounds cannot say this: how many acquires a worker makes before it gets the lock
depends on its retries. Here the paused holder simply keeps the lock's lease running out while it waits; the next
worker's acquire then succeeds and it reads the count the holder has not written yet. The calls are real calls over
HTTP to the real server; only their order is fixed.

`check()` fails the test when a write waited `wait_s` in vain (a worker never read, so the schedule was not met).
"""

from __future__ import annotations

import threading
from typing import Any

from engine.patterns.distributed_locking.shared import RESOURCE
from tests.hooked_backend import CLIENT_THREAD, Hook, HookedBackend


class PausedHolder(HookedBackend):
    BEFORE = "before-parameter-build.dynamodb"  # its hook reads the call's parameters

    def __init__(self, backend: Any, workers: int = 2, wait_s: float = 30.0) -> None:
        super().__init__(backend)
        self._workers, self._wait_s = workers, wait_s
        self._changed = threading.Condition()
        self._reads: list[str] = []  # the client threads whose resource read was answered, in that order
        self._written: set[str] = set()  # the client threads whose resource write was answered
        self._calling = threading.local()  # what the calling thread's call in flight is: "read", "write" or ""
        self.missed: list[str] = []

    def hooks(self, client_kwargs: dict[str, Any]) -> tuple[Hook, Hook]:
        return self._before, self._after

    def check(self) -> None:
        """Fail loudly when the schedule was not the forced one (the stale write was then left to chance)."""
        assert not self.missed, f"the forced schedule did not meet: {self.missed}"
        assert len(self._reads) == self._workers, f"resource reads answered: {self._reads}"

    def _before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        me = threading.current_thread().name
        kind = ""
        if me.startswith(CLIENT_THREAD) and _plain(params.get("Key")) == RESOURCE:
            update = str(params.get("UpdateExpression", ""))
            # A fenced holder reads with an update that also stamps its token (SET lastToken), a plain one with GetItem.
            if model.name == "GetItem" or (model.name == "UpdateItem" and update.startswith("SET lastToken")):
                kind = "read"
            elif model.name == "UpdateItem" and update.startswith("SET jobs"):
                kind = "write"
        self._calling.kind = kind
        if kind != "write":
            return
        with self._changed:
            if not self._changed.wait_for(lambda: self._my_turn(me), self._wait_s):
                self.missed.append(f"{me}'s write (resource reads answered: {self._reads})")

    def _my_turn(self, me: str) -> bool:
        if len(self._reads) < self._workers or me not in self._reads:
            return False
        return all(earlier in self._written for earlier in self._reads[: self._reads.index(me)])

    def _after(self, **_: Any) -> None:
        kind = getattr(self._calling, "kind", "")
        if not kind:
            return
        self._calling.kind = ""
        with self._changed:
            me = threading.current_thread().name
            if kind == "read":
                self._reads.append(me)
            else:
                self._written.add(me)
            self._changed.notify_all()


def _plain(key: Any) -> Any:
    """A key as the pattern wrote it: the resource client's handlers have typed it ({"S": ...}) by now."""
    if not isinstance(key, dict):
        return key
    return {name: value.get("S", value) if isinstance(value, dict) else value for name, value in key.items()}
