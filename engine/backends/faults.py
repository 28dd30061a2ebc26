"""Client-side faults through botocore's event hooks: lost responses and added network latency.

A lost response is the real thing, not a simulation of one: the request is sent and applied by the server,
its response is read and thrown away, and botocore is told the read timed out, so its retry policy decides
what happens next, exactly as after a network failure. It therefore works on every backend, AWS included.

Which call loses its response is decided by the caller (ClientContext) per call, through a thread-local
flag, so decisions are reproducible per client and never leak across threads.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Per run. Shares are probabilities per call (0..1)."""

    lost_response_share: float = 0.0  # writes only: applied, then the response is lost
    latency_ms: float = 0.0  # added before every request leaves (simulated network time)


class _Flags(threading.local):
    lose_next: bool = False
    attempts: list[str] | None = None  # what each failed attempt of the current call was


flags = _Flags()


class FaultInjector:
    """Installed once per client; reads the calling thread's flags."""

    def __init__(self, client: Any, plan: FaultPlan) -> None:
        self.plan = plan
        self._session = URLLib3Session(timeout=30, max_pool_connections=64)
        events = client.meta.events
        events.register_first("before-send.dynamodb", self._before_send)
        events.register("needs-retry.dynamodb", self._note_attempt)

    def _before_send(self, request: Any, **_: Any) -> Any:
        if self.plan.latency_ms > 0:
            time.sleep(self.plan.latency_ms / 1000.0)
        if flags.lose_next:
            flags.lose_next = False  # only the first attempt loses its response; the retry goes through
            self._session.send(request)  # applied by the server; the answer never reaches the caller
            raise ReadTimeoutError(endpoint_url=request.url)
        return None

    @staticmethod
    def _note_attempt(caught_exception: Exception | None = None, response: Any = None, **_: Any) -> None:
        if flags.attempts is None:
            return None
        if caught_exception is not None:
            flags.attempts.append(type(caught_exception).__name__)
        elif response is not None and isinstance(response, tuple) and len(response) == 2:
            code = (response[1] or {}).get("Error", {}).get("Code")
            if code:
                flags.attempts.append(code)
        return None

    def close(self) -> None:
        self._session.close()
