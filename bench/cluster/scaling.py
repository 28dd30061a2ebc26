"""Cluster: 64 threads with 10 ms a call, in 1 process, in 2 client processes (--processes 2, engine/clients/processes.py) and
on 2 workers of a local Dask cluster (--cluster, engine/clients/cluster/home.py), side by side.

Each is a whole lab run (atomic-counters/add against the embedded server, 10 ms of client-side latency per
call, as latency_scaling's engine runs). Per mode:
- calls/s from the clients' release to their end (a cluster's or a pool's start-up is not in it);
- CPU per call of every client-side process while the clients run (psutil): this one (the run's home; with
  the cluster, its scheduler and nannies, which run in the home's Dask threads) and every process under it but
  the DynamoDB server (the pool's children; the cluster's workers). The cluster's parts (its worker processes,
  and the home's Dask threads) are counted only in the cluster's mode: idle, they are not the pool's cost. What
  spreading costs on top of the calls themselves; and that CPU in three parts (CpuParts), so that what the
  plumbing costs shows apart from the clients' own work, which moves by ±20 % with the machine's load;
- staleness of the live History: sampled every 50 ms, how old the newest call in it is (how far behind the
  live charts are).
Modes alternate within each pass and the order flips from pass to pass; figures are medians over passes, and the
two ratios (cluster ÷ pool) are medians of each pass's own ratio, with their range: the machine's load drifts
from pass to pass, and a pass's two runs are the nearest in time.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

import psutil

from bench.shared import thread_cpu_s
from engine.backends.backend import Backend
from engine.clients.cluster.local import start_local_cluster
from engine.run.runner import Run, RunConfig, RunState

THREADS = 64
LATENCY_MS = 10.0
MODES = ("1 process", "2 processes", "2 cluster workers")
# Where each mode's CPU per call goes (CpuParts): the plumbing apart from the clients' own work.
PARTS = (
    ("home_us_per_call", "the run's process (with the cluster, its scheduler, nannies and Dask client)"),
    ("spread_main_us_per_call", "the main threads of the processes under it (a pool child's batching; Dask's loop)"),
    ("spread_rest_us_per_call", "their other threads (the clients; on a worker also its batching)"),
)


def _config(mode: str, seconds: float, address: str, latency_ms: float) -> RunConfig:
    return RunConfig(
        pattern="atomic-counters",
        variant="add",
        threads=THREADS,
        duration_s=seconds,
        latency_ms=latency_ms,
        options={"sequence": 0},
        processes=2 if mode == "2 processes" else 1,
        cluster=address if mode == "2 cluster workers" else None,
    )


@dataclass(frozen=True)
class Idle:
    """The local cluster's parts, not charged to a mode that does not use them: its worker processes, and the
    threads of this process that run its scheduler and nannies."""

    pids: frozenset[int] = frozenset()
    threads: frozenset[int] = frozenset()  # native thread ids


@dataclass(frozen=True)
class CpuParts:
    """Client-side CPU seconds so far, in three parts: this process (the run's home; with the cluster, its
    scheduler, nannies and Dask client too), the main threads of the processes under it (a pool child's batching
    loop; a cluster worker's Dask event loop), and their other threads (the clients; a worker's also its batching)."""

    home: float
    spread_main: float
    spread_rest: float

    @property
    def total(self) -> float:
        return self.home + self.spread_main + self.spread_rest

    def __sub__(self, other: CpuParts) -> CpuParts:
        return CpuParts(
            self.home - other.home, self.spread_main - other.spread_main, self.spread_rest - other.spread_rest
        )


def _thread_cpu_s(pid: int, tid: int) -> float:
    """One thread's CPU: Linux's per-thread run time in ns (psutil's figures tick by 10 ms, as much as a Dask
    loop uses in a second), else psutil's."""
    try:
        return thread_cpu_s(pid, tid)
    except (OSError, ValueError, IndexError):
        return next((t.user_time + t.system_time for t in psutil.Process(pid).threads() if t.id == tid), 0.0)


def _client_side_cpu(server_pid: int | None, idle: Idle = Idle()) -> CpuParts:
    """CPU used so far by this process (the run's home) and every process under it but the DynamoDB server, less
    `idle`'s processes and threads."""
    me = psutil.Process()
    home = sum(me.cpu_times()[:2]) - sum(_thread_cpu_s(me.pid, tid) for tid in idle.threads)
    main = rest = 0.0
    for child in me.children(recursive=True):
        if child.pid != server_pid and child.pid not in idle.pids:
            try:
                total = sum(child.cpu_times()[:2])
                first = _thread_cpu_s(child.pid, child.pid)  # a process's main thread has the process's id
            except psutil.Error:
                continue  # ended between the listing and the look
            main += first
            rest += max(0.0, total - first)
    return CpuParts(home, main, rest)


def _sample(run: Run, server_pid: int | None, idle: Idle, stop: threading.Event, out: dict[str, Any]) -> None:
    """While the clients run: every 50 ms, how old the newest call in the History is; and the client side's CPU at
    their release and at their end, each read within 5 ms of it (start-up, a pool's spawning, a child's exit,
    verify and table work are left out), less this thread's own CPU in between (its History snapshots took about
    a tenth of a core, in every mode alike: the instrument, not the client side)."""
    stale: list[float] = out["stale"]
    own_from = 0.0
    next_look = 0.0
    while not stop.wait(0.005):
        if run.t_start_ns is None:
            continue
        if "cpu_from" not in out:
            out["cpu_from"] = _client_side_cpu(server_pid, idle)
            own_from = time.thread_time()
        if run.t_end_ns is not None:
            if "cpu_to" not in out:
                own = time.thread_time() - own_from
                to = _client_side_cpu(server_pid, idle)
                out["cpu_to"] = replace(to, home=to.home - own)
            continue
        n = len(run.history)
        if n and time.monotonic() >= next_look:
            next_look = time.monotonic() + 0.05
            newest = run.history.snapshot(max(0, n - 200))["complete_ns"].max() + run.history.t0_ns
            stale.append((time.monotonic_ns() - newest) / 1e6)


def one_run(
    backend: Backend,
    mode: str,
    seconds: float,
    address: str,
    cluster: Idle = Idle(),
    latency_ms: float = LATENCY_MS,
) -> dict[str, Any]:
    server_pid = backend.server.pid if backend.server is not None else None
    run = Run(_config(mode, seconds, address, latency_ms), backend)
    seen: dict[str, Any] = {"stale": []}
    stop = threading.Event()
    idle = Idle() if mode == "2 cluster workers" else cluster
    sampler = threading.Thread(target=_sample, args=(run, server_pid, idle, stop, seen), daemon=True)
    sampler.start()
    run.run_to_end()
    time.sleep(0.05)  # the sampler's look at the end
    stop.set()
    sampler.join()
    if run.state is not RunState.DONE:
        raise RuntimeError(f"{mode} run ended {run.state.value}: {run.error}")
    calls = max(len(run.history), 1)
    cpu: CpuParts = seen.get("cpu_to", CpuParts(0, 0, 0)) - seen.get("cpu_from", CpuParts(0, 0, 0))
    return {
        "calls_per_s": len(run.history) / run.elapsed_s(),
        "cpu_us_per_call": 1e6 * cpu.total / calls,
        "home_us_per_call": 1e6 * cpu.home / calls,
        "spread_main_us_per_call": 1e6 * cpu.spread_main / calls,
        "spread_rest_us_per_call": 1e6 * cpu.spread_rest / calls,
        "staleness_ms": statistics.median(seen["stale"]) if seen["stale"] else 0.0,
    }


def measure(seconds: float = 3.0, passes: int = 2, latency_ms: float = LATENCY_MS) -> dict[str, Any]:
    """Each mode's figures, `passes` alternating passes of `seconds`. With a `latency_ms` long enough that no
    mode is short of CPU (e.g. 400: 64 threads then offer about 160 calls/s), the modes run at one rate, and their
    CPU per call compares without the clients' own rate-dependence (a client's CPU per call rises as the rate
    falls, in every mode)."""
    started = time.perf_counter()
    threads_before = {t.native_id for t in threading.enumerate()}
    with start_local_cluster(2) as local:
        start_s = time.perf_counter() - started
        cluster = Idle(
            frozenset(p.pid for p in psutil.Process().children(recursive=True)),  # its workers (and their helpers)
            frozenset(t.native_id for t in threading.enumerate() if t.native_id is not None) - threads_before,
        )
        with Backend() as backend:
            # Warm-up: the workers import boto3 and the lab on their first share (a pool starts fresh processes
            # each run, and this process has them loaded already).
            one_run(backend, "2 cluster workers", 0.5, local.scheduler_address)
            samples: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
            for k in range(passes):
                for mode in MODES if k % 2 == 0 else tuple(reversed(MODES)):
                    samples[mode].append(one_run(backend, mode, seconds, local.scheduler_address, cluster, latency_ms))
    rows = {
        mode: {field: statistics.median(s[field] for s in runs) for field in runs[0]} for mode, runs in samples.items()
    }
    pairs = list(zip(samples["2 processes"], samples["2 cluster workers"], strict=True))
    ratios = {
        field: [dask[field] / pool[field] for pool, dask in pairs] for field in ("calls_per_s", "cpu_us_per_call")
    }
    # The machine's own swing: the order flips from pass to pass, so the cluster runs last in one pass and first in
    # the next, back to back with nothing changed between them; their ratio is what the load alone moves a figure by.
    runs = samples["2 cluster workers"]
    back_to_back = {
        field: [runs[k + 1][field] / runs[k][field] for k in range(0, len(runs) - 1, 2)]
        for field in ("calls_per_s", "cpu_us_per_call")
    }
    return {
        "threads": THREADS,
        "latency_ms": latency_ms,
        "cluster_start_s": start_s,
        "modes": rows,
        "ratios": ratios,
        "back_to_back": back_to_back,
    }


def _ratio(result: dict[str, Any], field: str, of: str = "ratios", what: str = "passes") -> tuple[float, str]:
    """The median of the passes' cluster ÷ pool ratios (or of another list of ratios), and how far they spread (""
    with one)."""
    each = result[of][field]
    spread = f" [{min(each):.2f}–{max(each):.2f} over {len(each)} {what}]" if len(each) > 1 else ""
    return statistics.median(each), spread


def _swing(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The back-to-back cluster runs' ratios: how far a figure moves on this machine with nothing changed, the
    yardstick for the two targets' 5 %."""
    rows = []
    for field, what in (("calls_per_s", "calls/s"), ("cpu_us_per_call", "client-side CPU per call")):
        if result.get("back_to_back", {}).get(field):
            value, spread = _ratio(result, field, "back_to_back", "pairs")
            figure = f"the machine's own swing: {what}, a cluster run / the next one, back to back{spread}"
            rows.append({"figure": figure, "value": round(value, 3), "target": "info", "pass": True})
    return rows


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    modes = result["modes"]
    side_by_side = " / ".join(f"{modes[m]['calls_per_s']:.0f}" for m in MODES)
    cpu = " / ".join(f"{modes[m]['cpu_us_per_call']:.0f}" for m in MODES)
    stale = " / ".join(f"{modes[m]['staleness_ms']:.0f}" for m in MODES)

    def part(field: str) -> str:
        return " / ".join(f"{modes[m][field]:.0f}" for m in MODES)

    rate_ratio, rate_spread = _ratio(result, "calls_per_s")
    cpu_ratio, cpu_spread = _ratio(result, "cpu_us_per_call")
    return [
        {
            "figure": f"calls/s at {result['threads']} threads, {result['latency_ms']:g} ms: 1 process / 2 processes"
            " / 2 cluster workers",
            "value": side_by_side,
            "target": "info",
            "pass": True,
        },
        {
            # The target: no worse than today's --processes 2 (5% is this shared machine's noise).
            "figure": f"calls/s, 2 cluster workers / 2 processes{rate_spread}",
            "value": round(rate_ratio, 3),
            "target": "≥ 0.95",
            "pass": rate_ratio >= 0.95,
        },
        {
            "figure": f"client-side CPU per call, 2 cluster workers / 2 processes{cpu_spread}",
            "value": round(cpu_ratio, 3),
            "target": "≤ 1.05",
            "pass": cpu_ratio <= 1.05,
        },
        *_swing(result),
        {"figure": "client-side CPU per call (µs), same three", "value": cpu, "target": "info", "pass": True},
        *(
            {"figure": f"  of it (µs), same three: {what}", "value": part(field), "target": "info", "pass": True}
            for field, what in PARTS
        ),
        {"figure": "live History staleness (ms), same three", "value": stale, "target": "info", "pass": True},
        {
            "figure": "local 2-worker Dask cluster start (s)",
            "value": round(result["cluster_start_s"], 1),
            "target": "info",
            "pass": True,
        },
    ]


def main(argv: list[str] | None = None) -> None:
    """`python -m bench.cluster.scaling --passes 10`: the same figures from more passes than `python -m bench`
    affords in its minute (a decision between the two modes wants the spread of many)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.cluster.scaling", description=main.__doc__)
    parser.add_argument("--passes", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=LATENCY_MS,
        help="client-side latency a call (default 10); e.g. 400 runs every mode at one rate (see measure())",
    )
    args = parser.parse_args(argv)
    if args.passes < 1 or args.seconds <= 0 or not 0 <= args.latency_ms <= 10_000:
        parser.error(
            "--passes must be at least 1, --seconds above 0 and --latency-ms from 0 to 10000"
            " (e.g. --passes 10 --seconds 3 --latency-ms 10)"
        )
    for v in verdicts(measure(seconds=args.seconds, passes=args.passes, latency_ms=args.latency_ms)):
        print(f"{'PASS' if v['pass'] else 'FAIL'}  {v['figure']}: {v['value']} (target {v['target']})")


if __name__ == "__main__":
    main()
