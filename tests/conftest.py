"""Shared fixtures: one embedded DynamoDB for the whole session (a real server over HTTP, no mocks).

Set DDBLAB_TEST_ENDPOINT (e.g. http://127.0.0.1:8000 for DynamoDB Local) to run the same tests against
another server; tests that need the embedded server's extras (GSI lag, TTL sweeps, faults) skip there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engine.backend import Backend, BackendSpec, RetryPolicy

ENDPOINT = os.environ.get("DDBLAB_TEST_ENDPOINT")


@pytest.fixture(scope="session")
def backend() -> Iterator[Backend]:
    spec = BackendSpec.parse(ENDPOINT) if ENDPOINT else BackendSpec()
    with Backend(spec, ttl_interval_s=0.2) as b:
        yield b


@pytest.fixture
def embedded(backend: Backend) -> Backend:
    if not backend.embedded:
        pytest.skip("needs the embedded server's extras (set no DDBLAB_TEST_ENDPOINT)")
    return backend


@pytest.fixture(scope="session")
def client(backend: Backend):
    return backend.client(threads=64, retry=RetryPolicy("standard", 3))
