"""A logical request, and what the workers of one idempotency-keys run share in memory: the queue's extra deliveries, the requests
answered so far, fresh charge ids and claim tokens, and who is still busy."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from dataclasses import dataclass
from random import Random
from typing import Any


@dataclass(frozen=True, slots=True)
class Request:
    """One logical request as the caller sends it."""

    request_id: str
    amount: int
    reuse: bool = False  # a buggy caller reusing an answered key for another amount: must be refused

    def detail(self, attempt: int) -> dict[str, Any]:
        return {
            "request": self.request_id,
            "amount": self.amount,
            "attempt": attempt,
            **({"reuse": True} if self.reuse else {}),
        }


class Mailbox:
    """What the workers of one run share: extra deliveries, answered requests, charge ids, who is busy."""

    def __init__(self, workers: int) -> None:
        self._lock = threading.Lock()
        self._pending: deque[Request] = deque()
        self._answered: dict[str, Request] = {}
        self._busy = workers  # workers still sending their own requests
        self._delivering = 0
        self._charge_ids = itertools.count(1)
        self._tokens = itertools.count(1)

    def post(self, request: Request) -> None:
        with self._lock:
            self._pending.append(request)

    def take(self) -> Request | None:
        with self._lock:
            if not self._pending:
                return None
            self._delivering += 1
            return self._pending.popleft()

    def delivered(self) -> None:
        with self._lock:
            self._delivering -= 1

    def own_requests_done(self) -> None:
        with self._lock:
            self._busy -= 1

    def idle(self) -> bool:
        """Nobody can post any more: every worker is past its own requests and nothing is in the queue."""
        with self._lock:
            return self._busy == 0 and self._delivering == 0 and not self._pending

    def answered(self, request: Request) -> None:
        with self._lock:
            self._answered.setdefault(request.request_id, request)

    def an_answered(self, rng: Random) -> Request | None:
        with self._lock:
            return rng.choice(list(self._answered.values())) if self._answered else None

    def charge_id(self) -> str:
        return f"ch_{next(self._charge_ids)}"  # the provider charges once per id, so each id is new

    def token(self, client_id: int) -> str:
        """A claim's owner: the client by its one name (as a lock's owner is), and which of the run's claims."""
        return f"client-{client_id}#{next(self._tokens)}"
