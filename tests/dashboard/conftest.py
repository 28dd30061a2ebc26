"""Fixtures for the dashboard tests: recorded histories (tests/data) as snapshot frames."""

from __future__ import annotations

import pytest

from tests.dashboard.helpers import frame


@pytest.fixture(scope="session")
def counters_racy():
    return frame("atomic-counters-racy")


@pytest.fixture(scope="session")
def counters_safe():
    return frame("atomic-counters-safe")


@pytest.fixture(scope="session")
def locking_racy():
    return frame("optimistic-locking-racy")


@pytest.fixture(scope="session")
def locking_safe():
    return frame("optimistic-locking-safe")
