"""A Dask cluster the lab starts on this machine itself (the cluster bench's), with Dask's own diagnostics off.

An idle two-worker LocalCluster with Dask's defaults took about 0.16 of a core here (0.07 in the home: the
scheduler and the nannies run in it; 0.045 in each worker): every Server wakes every 20 ms for its loop tick and
every 500 ms for its system monitor, each worker every 10 ms for its sampling profiler, workers and nannies every
100 ms for their memory monitors, the scheduler every second to steal work. None of it serves a run of the lab
(one long task per worker, never moved), and each wake-up takes the GIL from that process's client threads. With
LAB_DASK_CONFIG the same idle cluster took about 0.02 of a core (measured 2026-12-01, 10 s idle).

A user's cluster (`--cluster ADDRESS`) keeps its own settings: there a share pauses what it safely can while it
runs (engine/clients/cluster/share.py QUIET_CALLBACKS).
"""

from __future__ import annotations

from typing import Any

from engine.clients.cluster.calm import calm

LAB_DASK_CONFIG: dict[str, Any] = {
    "distributed.scheduler.work-stealing": False,  # a share is pinned to its worker: nothing to steal
    "distributed.scheduler.active-memory-manager.start": False,  # no data kept on workers: nothing to move
    "distributed.worker.profile.enabled": False,  # the sampling profiler, every 10 ms
    "distributed.admin.tick.interval": "1s",  # the event loop's health tick, every 20 ms by default
    "distributed.admin.system-monitor.interval": "5s",  # CPU, memory and network figures for Dask's dashboard
    # No memory monitors (workers and nannies, every 100 ms): a run keeps no data in the workers, and a lab run
    # that grows without bound is stopped by its own call budget and duration.
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
}


SYNC_INTERVAL_S = 3600  # how often the LocalCluster object updates its description at the scheduler (Dask: 1 s)

# Loaded into each worker process as it starts: its own session, as the pool's client processes have, so that the
# OS shares the CPU between the workers and the home as it does between the pool's children and theirs (see there).
WORKER_PRELOAD = ("engine.clients.cluster.session",)


def start_local_cluster(workers: int = 2, *, calm: bool = True) -> Any:
    """A LocalCluster of `workers` worker processes (one thread each) on 127.0.0.1, under LAB_DASK_CONFIG, each in
    a session of its own (WORKER_PRELOAD); a context manager (close it, or leave its `with`, to stop it). Its
    nannies hand the config and the preload to the worker processes they start, so a worker a nanny restarts
    keeps them. `calm=False` leaves its scheduler and nannies as Dask has them (bench.cluster.quiet compares)."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(LAB_DASK_CONFIG):
        # port 0: the scheduler's HTTP server (no dashboard without bokeh) never meets another's port
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            host="127.0.0.1",
            preload=list(WORKER_PRELOAD),
            # The cluster object sends the scheduler its own description every second by default (a request with a
            # reply, for Dask's cluster widgets): nothing of the lab reads it.
            scheduler_sync_interval=SYNC_INTERVAL_S if calm else 1,  # Dask's default: 1 s
        )
    if not calm:
        return cluster
    try:
        cluster.sync(_calm, cluster)
    except BaseException:
        cluster.close()
        raise
    return cluster


async def _calm(cluster: Any) -> None:
    """On the cluster's event loop: stop the scheduler's and the nannies' wake-ups that nothing of the lab needs
    (engine/clients/cluster/calm.py). The nannies run in this process: a worker a nanny restarts keeps them."""
    for server in (cluster.scheduler, *cluster.workers.values()):
        calm(server)


def dask_env() -> dict[str, str]:
    """LAB_DASK_CONFIG as the DASK_* environment variables a scheduler or worker started by hand reads (the
    docker-compose cluster profile sets these: its scheduler and workers exist for the lab alone)."""
    return {
        "DASK_" + key.upper().replace(".", "__").replace("-", "_"): str(value) for key, value in LAB_DASK_CONFIG.items()
    }
