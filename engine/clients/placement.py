"""Where a run's clients run, chosen once from its config: threads of this process, client processes on this
machine, or the workers of a Dask cluster. Each is a module with the same `run_clients(run, client, base_seed)`
(after Locust's local, master and worker runners behind one `start`), so the runner never branches on them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.clients import processes, threads
from engine.clients.cluster import home as cluster
from engine.clients.contract import Run, RunConfig

RunClients = Callable[[Run, Any, int], None]


def placement_for(config: RunConfig) -> RunClients:
    """The `run_clients` that places this config's clients."""
    if config.processes > 1:
        return processes.run_clients
    if config.cluster is not None:
        return cluster.run_clients
    return threads.run_clients
