"""The scheduler's and the nannies' wake-ups that serve only Dask's diagnostics, and the scheduler's checks of
timeouts that are off: stopped in a cluster the lab starts itself (engine/clients/cluster/local.py), and never started in
the docker-compose cluster profile's scheduler and nannies, which load this module as a preload (`dask_setup`).

Each wake-up costs about 0.2-0.3 ms of CPU in the process that hosts the server, whatever it does (scratch probe,
2026-12-02: the home's Dask thread of an idle two-worker LocalCluster took 8.0 ms a second; 5.7 without the
scheduler's two 250 ms timeout checks, 3.8-4.1 without the tick, tick-cycle and counter callbacks of the scheduler
and nannies as well). A user's own cluster (`--cluster ADDRESS`) is left as it is.
"""

from __future__ import annotations

from typing import Any

CALM_CALLBACKS = ("tick", "ticks", "shift_counters")  # the event loop's health figures, and Dask's counters
TIMEOUT_CHECKS = {"idle-timeout": "idle_timeout", "no-workers-timeout": "no_workers_timeout"}  # every 250 ms


def quiet_names(server: Any) -> list[str]:
    """The periodic callbacks of this scheduler or nanny that nothing of the lab needs: CALM_CALLBACKS, and for a
    scheduler the checks of its timeouts that are off."""
    from distributed import Scheduler

    if not isinstance(server, Scheduler):
        return list(CALM_CALLBACKS)
    return [*CALM_CALLBACKS, *(pc for pc, what in TIMEOUT_CHECKS.items() if getattr(server, what, 0) is None)]


def calm(server: Any) -> None:
    """Stop the quiet_names callbacks of a server that is running (they stay registered, stopped)."""
    for name in quiet_names(server):
        callback = server.periodic_callbacks.get(name)
        if callback is not None:
            callback.stop()


def dask_setup(server: Any) -> None:
    """Called by Dask as the scheduler or nanny starts (`--preload engine.clients.cluster.calm`, `--preload-nanny ...`),
    before it starts its periodic callbacks: the quiet_names ones are taken out, so they never start (Dask does
    the same with work stealing's when it is off)."""
    for name in quiet_names(server):
        server.periodic_callbacks.pop(name, None)
