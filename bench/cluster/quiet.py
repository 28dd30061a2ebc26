"""Cluster: what the lab's quieting of Dask saves, side by side in one process (docs/scaling.md, "Where the cluster's
extra CPU went").

Two local two-worker clusters at once: one as the lab starts it (engine/clients/cluster/local.py: its scheduler and
nannies calm, and a share pausing its worker's tick cycle, counters and its Dask client's description refresh),
one without those cuts (the cluster object's 1 s sync, the scheduler's and nannies' callbacks as Dask has them,
a share pausing only what it paused before: LOUD_QUIET). The bench's cluster mode (bench.cluster.scaling: 64
threads, 10 ms a call) runs on each in turn, alternating, the order flipped from pair to pair; each run is
charged only its own cluster (the other one's worker processes and home threads are left out, as the pool's
mode leaves out the idle cluster). Per pair, quiet ÷ loud: the plumbing's CPU a second (the run's process and the
workers' main threads: the scheduler, nannies and Dask client, the run's thread, the workers' Dask loops), its CPU
per call, all client-side CPU per call, calls/s; and, counted, the requests each scheduler answered a second
while the clients ran (deterministic: the load does not move them).
"""

from __future__ import annotations

import functools
import inspect
import statistics
import threading
import time
from collections import Counter
from typing import Any

import psutil

from bench.cluster.scaling import Idle, _config, _sample
from engine.backends.backend import Backend
from engine.clients.cluster.local import start_local_cluster
from engine.run.runner import Run, RunState

MODES = ("quiet", "loud")
LOUD_QUIET = (
    "profile",
    "profile-cycle",
    "tick",
    "monitor",
)  # what a share paused before it also quieted its heartbeat and client


def _loud_workers(dask_worker: Any = None) -> None:
    """On a worker of the loud cluster: its shares pause only LOUD_QUIET, and leave their Dask client's refresh."""
    from engine.clients.cluster import share as cluster_share

    cluster_share.QUIET_CALLBACKS = LOUD_QUIET
    cluster_share.QUIET_CLIENT_CALLBACKS = ()


def _start(quiet: bool) -> tuple[Any, Idle]:
    """A local cluster, and its parts (worker processes, home threads), to leave out of the other one's runs."""
    from distributed import Client

    pids = {p.pid for p in psutil.Process().children(recursive=True)}
    threads = {t.native_id for t in threading.enumerate()}
    cluster = start_local_cluster(2, calm=quiet)
    if not quiet:
        with Client(cluster.scheduler_address, set_as_default=False) as client:
            client.run(_loud_workers)
    return cluster, Idle(
        frozenset(p.pid for p in psutil.Process().children(recursive=True)) - pids,
        frozenset(t.native_id for t in threading.enumerate() if t.native_id is not None) - threads,
    )


def _count_requests(scheduler: Any, counts: Counter[str], on: threading.Event) -> None:
    """Count the requests (with a reply) the scheduler answers while `on` is set, by handler."""

    def counted(name: str, handler: Any) -> Any:
        if inspect.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def acounted(*args: Any, **kwargs: Any) -> Any:
                if on.is_set():
                    counts[name] += 1
                return await handler(*args, **kwargs)

            return acounted

        @functools.wraps(handler)
        def scounted(*args: Any, **kwargs: Any) -> Any:
            if on.is_set():
                counts[name] += 1
            return handler(*args, **kwargs)

        return scounted

    for name, handler in list(scheduler.handlers.items()):
        scheduler.handlers[name] = counted(name, handler)


def one_run(backend: Backend, address: str, other: Idle, seconds: float, on: threading.Event) -> dict[str, float]:
    """The bench's cluster mode once on the cluster at `address`, leaving `other`'s parts out."""
    server_pid = backend.server.pid if backend.server is not None else None
    run = Run(_config("2 cluster workers", seconds, address, 10.0), backend)
    seen: dict[str, Any] = {"stale": []}
    stop = threading.Event()
    watch = threading.Thread(target=_window, args=(run, on), daemon=True)
    watch.start()
    assert watch.native_id is not None
    left_out = Idle(other.pids, other.threads | {watch.native_id})  # the window's watcher is the bench's, too
    sampler = threading.Thread(target=_sample, args=(run, server_pid, left_out, stop, seen), daemon=True)
    sampler.start()
    run.run_to_end()
    time.sleep(0.05)
    stop.set()
    sampler.join()
    watch.join()
    if run.state is not RunState.DONE:
        raise RuntimeError(f"cluster run ended {run.state.value}: {run.error}")
    calls, elapsed = max(len(run.history), 1), run.elapsed_s()
    cpu = seen["cpu_to"] - seen["cpu_from"]
    plumbing = cpu.home + cpu.spread_main
    return {
        "calls_per_s": calls / elapsed,
        "cpu_us_per_call": 1e6 * cpu.total / calls,
        "plumbing_us_per_call": 1e6 * plumbing / calls,
        "plumbing_ms_per_s": 1e3 * plumbing / elapsed,
        "staleness_ms": statistics.median(seen["stale"]) if seen["stale"] else 0.0,
        "window_s": elapsed,
    }


def _window(run: Run, on: threading.Event) -> None:
    """Set `on` from the clients' release to their end."""
    while run.t_start_ns is None and not run.finished:
        time.sleep(0.002)
    on.set()
    while run.t_end_ns is None and not run.finished:
        time.sleep(0.002)
    on.clear()


FIELDS = ("plumbing_ms_per_s", "plumbing_us_per_call", "cpu_us_per_call", "calls_per_s", "staleness_ms")


def measure(pairs: int = 6, seconds: float = 3.0) -> dict[str, Any]:
    clusters = {"quiet": _start(True), "loud": _start(False)}
    counts: dict[str, Counter[str]] = {mode: Counter() for mode in MODES}
    windows = dict.fromkeys(MODES, 0.0)
    on = {mode: threading.Event() for mode in MODES}
    try:
        for mode in MODES:
            _count_requests(clusters[mode][0].scheduler, counts[mode], on[mode])
        other = {"quiet": clusters["loud"][1], "loud": clusters["quiet"][1]}
        runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
        with Backend() as backend:
            for mode in MODES:  # warm-up: the workers import boto3 and the lab on their first share
                one_run(backend, clusters[mode][0].scheduler_address, other[mode], 0.5, threading.Event())
            for k in range(pairs):
                for mode in MODES if k % 2 == 0 else tuple(reversed(MODES)):
                    row = one_run(backend, clusters[mode][0].scheduler_address, other[mode], seconds, on[mode])
                    runs[mode].append(row)
                    windows[mode] += row["window_s"]
    finally:
        # In the reverse order of their starts: each puts back the log level it found (Dask's logs stay quiet).
        for cluster, _ in reversed(clusters.values()):
            cluster.close()
    ratios = {f: [q[f] / loud[f] for q, loud in zip(runs["quiet"], runs["loud"], strict=True)] for f in FIELDS}
    return {
        "pairs": pairs,
        "modes": {mode: {f: statistics.median(r[f] for r in rs) for f in FIELDS} for mode, rs in runs.items()},
        "ratios": ratios,
        "requests_per_s": {mode: {k: v / windows[mode] for k, v in counts[mode].items()} for mode in MODES},
    }


def report(result: dict[str, Any]) -> list[str]:
    lines = []
    for field in FIELDS:
        each = result["ratios"][field]
        modes = " / ".join(f"{result['modes'][m][field]:.0f}" for m in MODES)
        lines.append(
            f"{field}, quiet / loud: {statistics.median(each):.3f} [{min(each):.2f}–{max(each):.2f} over "
            f"{len(each)} pairs]; medians {modes}"
        )
    for mode in MODES:
        asked = result["requests_per_s"][mode]
        listed = ", ".join(f"{name} {n:.2f}" for name, n in sorted(asked.items(), key=lambda kv: -kv[1]))
        lines.append(f"requests the {mode} cluster's scheduler answered a second while the clients ran: {listed}")
    return lines


def main(argv: list[str] | None = None) -> None:
    """`python -m bench.cluster.quiet --pairs 8`: about 2 minutes."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.cluster.quiet", description=main.__doc__)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.seconds <= 0:
        parser.error("--pairs must be at least 1 and --seconds above 0 (e.g. --pairs 8 --seconds 3)")
    for line in report(measure(args.pairs, args.seconds)):
        print(line)


if __name__ == "__main__":
    main()
