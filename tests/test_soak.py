"""Soak: 64 threads for a while against the embedded server; invariants hold and nothing leaks.

The CI version runs 30 s; `pytest -m slow tests/test_soak.py` runs 10 minutes. Runs follow each other
(every run's History is dropped), so after warm-up the engine's memory, threads and file descriptors must
come back to where they were: growth means a leak, not data.
"""

from __future__ import annotations

import gc
import os
import threading
import time

import pytest

from engine.backend import Backend
from engine.runner import RunConfig, RunState, run_pattern

MIX = [
    RunConfig(pattern="atomic-counters", variant="add", threads=64, duration_s=5),
    RunConfig(pattern="optimistic-locking", variant="version-check", threads=64, duration_s=5,
              options={"accounts": 8}),
    RunConfig(pattern="conditional-writes", variant="guarded", threads=64, duration_s=5),
]


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def soak(backend: Backend, seconds: float) -> None:
    run_pattern(MIX[0], backend)  # warm-up: imports, connection pools, caches
    gc.collect()
    rss, fds, threads = _rss_mb(), _fds(), threading.active_count()
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        run = run_pattern(MIX[i % len(MIX)], backend)
        assert run.state is RunState.DONE, run.error
        broken = [inv.name for inv in run.invariants if not inv.holds]
        assert not broken, f"{run.config.pattern}: {broken}"
        i += 1
        del run
    gc.collect()
    time.sleep(0.5)  # let finished pool threads exit
    assert threading.active_count() <= threads + 2
    assert _fds() <= fds + 8
    assert _rss_mb() - rss < 60, f"engine memory grew {_rss_mb() - rss:.0f} MB over {i} runs"


def test_soak_30_seconds(backend: Backend) -> None:
    soak(backend, 30)


@pytest.mark.slow
def test_soak_10_minutes(backend: Backend) -> None:
    soak(backend, 600)
