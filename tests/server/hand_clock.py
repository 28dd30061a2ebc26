"""An embedded server in this process whose aws-like model reads a clock the test moves by hand, so a test that
needs several calls inside a window (a stale read's, a commit's, a bucket's second) gets them however slow the
machine: the window ends when the test says, not when a second of real time has passed.

The server is the production one (FaithfulDynamoDB behind the same HTTP server), as tests/server/test_gsi_lag.py
runs it. Only the clock the model reads is the test's: every `time` module, and every `time.monotonic`, that a
module of engine/server/simulated (or faithful/app.py, for a request token in flight) holds is swapped for the
hand clock while a test runs. An answer's own wait (network time, a commit window) still passes in real time.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import engine.server.simulated
from engine.backends.backend import Backend, BackendSpec
from engine.server.faithful.app import FaithfulDynamoDB
from engine.server.host.serve import make_http_server


class HandClock:
    """Stands in for the `time` module inside the model: `monotonic()` is the test's; the rest is `time`'s."""

    def __init__(self) -> None:
        self._now = time.monotonic()  # from the real reading: state the model kept before the swap stays in order
        self._until: Callable[[], bool] | None = None
        self._behind: float | None = None  # once thawed: how far the clock runs behind real time

    def monotonic(self) -> float:
        if self._until is not None and self._until():
            # Thawed: from now on the clock runs with real time, from where it stood.
            self._until, self._behind = None, time.monotonic() - self._now
        if self._behind is not None:
            return time.monotonic() - self._behind
        return self._now

    def later(self, seconds: float) -> None:
        self._now += seconds
        if self._behind is not None:
            self._behind -= seconds

    def stand_still_until(self, condition: Callable[[], bool]) -> None:
        """Stop the clock until `condition` holds (asked on each reading, under the server's lock), then let it
        run with real time: whatever window is open stays open until then."""
        self._until = condition

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def swap_clock(monkeypatch: pytest.MonkeyPatch, clock: HandClock) -> None:
    """Make every module of the aws-like model read `clock` (undone at the end of the test)."""
    swapped = []
    names = [
        f"engine.server.simulated.{found.name}" for found in pkgutil.iter_modules(engine.server.simulated.__path__)
    ]
    # The server keeps a request token in flight until its answer leaves, on the same clock (faithful/app.py).
    for found in [*names, "engine.server.faithful.app"]:
        module = importlib.import_module(found)
        for name, value in list(vars(module).items()):
            if value is time:
                monkeypatch.setattr(module, name, clock)
                swapped.append(found)
            elif value is time.monotonic:
                monkeypatch.setattr(module, name, clock.monotonic)
                swapped.append(found)
    # The model reads its clock in model.py: if it ever reads it another way, say so rather than run on real time.
    assert "engine.server.simulated.model" in swapped, f"the model's clock was not found (swapped in: {swapped})"


def serve() -> Iterator[tuple[Backend, FaithfulDynamoDB]]:
    """The server on a free port, and a Backend at it (a module fixture's body)."""
    from moto.server import create_backend_app

    moto_app = create_backend_app("dynamodb")
    moto_app.debug = False
    app = FaithfulDynamoDB(moto_app, ttl_interval_s=3600)
    http = make_http_server("127.0.0.1", 0, app)
    thread = threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        with Backend(BackendSpec.parse(f"http://127.0.0.1:{http.server_port}")) as backend:
            yield backend, app
    finally:
        http.shutdown()
        http.server_close()
        app.close()
