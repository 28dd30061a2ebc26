"""Shared fixtures: one embedded DynamoDB for the whole session (a real server over HTTP, no mocks).

Set DDBLAB_TEST_ENDPOINT (e.g. http://127.0.0.1:8000 for DynamoDB Local) to run the same tests against
another server; tests that need the embedded server's extras (GSI lag, TTL sweeps, faults) skip there.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from engine.backends.backend import Backend, BackendSpec, RetryPolicy

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


@pytest.fixture(scope="module")
def two_workers() -> Iterator[object]:
    """A real two-worker Dask LocalCluster on 127.0.0.1 (worker processes under nannies, no dashboard), for the
    cluster tests of one module: a start takes 3-10 s, but an idle cluster left up for the rest of the session
    would take about a tenth of a core from every later test (its heartbeats and monitors)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0", host="127.0.0.1"
    ) as local:  # port 0: the scheduler's HTTP server (no dashboard without bokeh) never meets another's port
        yield local
