"""The shape of the tests' forcing backends (tests/lockstep.py, tests/index_hold.py, tests/explain/paused_holder.py):
a test's backend wrapping a real one, whose clients each call one hook before every API call and another once the
call is answered (an error answer included) or no answer came. The calls stay real calls over HTTP to the real
server; the hooks only hold them, or change what they carry, until the condition the test needs is met."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a hooked backend stands in for the Backend it wraps wherever a run takes one
    from engine.backends.backend import Backend as _Wrapped
else:
    _Wrapped = object

CLIENT_THREAD = "client-"  # engine.clients.threads names each client's thread client-<id>

Hook = Callable[..., None]


def in_client_thread() -> bool:
    """Whether the calling thread is a run client's (set-up and the judge's reads are not)."""
    return threading.current_thread().name.startswith(CLIENT_THREAD)


class WrappedBackend(_Wrapped):
    """A test's backend wrapping a real one: whatever it does not change, the real one does."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


class HookedBackend(WrappedBackend):
    # before-call fires once per API call, in the caller's thread, before any attempt (retries do not wait again);
    # before-parameter-build fires then too, with the call's parameters, which it may change.
    BEFORE = "before-call.dynamodb"

    def client(self, **kwargs: Any) -> Any:
        client = self._backend.client(**kwargs)
        before, after = self.hooks(kwargs)
        events = client.meta.events
        events.register(self.BEFORE, before)
        # after-call once the call is answered (an error answer included), after-call-error when no answer came
        events.register("after-call.dynamodb", after)
        events.register("after-call-error.dynamodb", after)
        return client

    def hooks(self, client_kwargs: dict[str, Any]) -> tuple[Hook, Hook]:
        """The hooks (before the call, after its answer) of a client made with `client_kwargs`."""
        raise NotImplementedError

    def check(self) -> None:
        """Fail loudly when the condition was not met (what the test needed was then left to chance)."""
        raise NotImplementedError
