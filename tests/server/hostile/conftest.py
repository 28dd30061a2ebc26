"""The hostile requests' server (the session's embedded one: raw requests need its port) and a table with one item."""

from __future__ import annotations

from typing import Any

import pytest

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table


@pytest.fixture(scope="module")
def server(backend: Backend) -> Any:
    if not backend.embedded:
        pytest.skip("raw requests to the embedded server")
    assert backend.server is not None
    return backend.server


@pytest.fixture(scope="module")
def table(backend: Backend, server: Any) -> Any:
    table = open_table(backend.client(retry=RetryPolicy("standard", 1)), "hostile-requests", TableSpec())
    table.put({"PK": "H", "SK": "1", "n": 1, "m": {"a": "b"}, "s": "text"})
    yield table
    drop_table(table)
