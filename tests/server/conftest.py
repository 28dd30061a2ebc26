"""The server tests' hand-moved clock (tests/server/hand_clock.py): a server in the test's process, one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine.backends.backend import Backend
from engine.server.faithful.app import FaithfulDynamoDB
from tests.server.hand_clock import HandClock, serve, swap_clock


@pytest.fixture(scope="module")
def lab() -> Iterator[tuple[Backend, FaithfulDynamoDB]]:
    """A lab server in this process, and a Backend at it: its aws-like model reads the `clock` fixture's clock."""
    yield from serve()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> HandClock:
    """The aws-like model's clock for this test: it stands still until the test moves it."""
    clock = HandClock()
    swap_clock(monkeypatch, clock)
    return clock
