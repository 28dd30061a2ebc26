"""The lab's own Dask settings for a cluster it starts itself: each names a setting Dask has (a misspelt key would
silently leave Dask's default on), and each turns off or slows what it says."""

from __future__ import annotations

import os

import pytest

from engine.clients.cluster.local import LAB_DASK_CONFIG, dask_env

dask = pytest.importorskip("dask")
pytest.importorskip("distributed")  # its defaults hold the distributed.* keys


def test_every_setting_names_one_that_dask_has() -> None:
    for key in LAB_DASK_CONFIG:
        dask.config.get(key)  # outside the lab's settings: KeyError for a key Dask's own defaults do not have


def test_the_diagnostics_a_run_does_not_need_are_off_or_slowed() -> None:
    from dask.utils import parse_timedelta

    with dask.config.set(LAB_DASK_CONFIG):
        assert dask.config.get("distributed.worker.profile.enabled") is False
        assert dask.config.get("distributed.scheduler.work-stealing") is False
        assert parse_timedelta(dask.config.get("distributed.admin.tick.interval")) >= 1.0  # default 20 ms
        assert parse_timedelta(dask.config.get("distributed.admin.system-monitor.interval")) >= 5.0  # default 0.5 s
        for part in ("target", "spill", "pause", "terminate"):
            assert dask.config.get(f"distributed.worker.memory.{part}") is False


def test_the_compose_cluster_and_dask_env_carry_the_same_settings() -> None:
    import copy
    from pathlib import Path

    import yaml

    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    for service in ("scheduler", "worker-1", "worker-2"):
        assert compose["services"][service]["environment"] == dask_env(), service
    as_read = copy.deepcopy(dask.config.config)  # what a scheduler or worker makes of those variables
    dask.config.update(as_read, dask.config.collect_env(dask_env()), priority="new")
    for key, value in LAB_DASK_CONFIG.items():
        assert dask.config.get(key, config=as_read) == value, key


def test_a_worker_of_the_labs_own_cluster_runs_in_a_session_of_its_own() -> None:
    """As each of the pool's client processes does: the OS then shares the CPU between the workers and the run's
    home (its scheduler, nannies and History) as it does between the pool's children and theirs."""
    import importlib
    import subprocess
    import sys

    from engine.clients.cluster.local import WORKER_PRELOAD

    for name in WORKER_PRELOAD:
        assert callable(importlib.import_module(name).dask_setup), name
    # A child in this process's session, as a nanny's worker is, before and after the preload.
    probe = "import os, sys; s = os.getsid(0); {}.dask_setup(None); print(s, os.getsid(0), os.getpid())"
    for name in WORKER_PRELOAD:
        out = subprocess.run(
            [sys.executable, "-c", f"import {name}; " + probe.format(name)], capture_output=True, text=True, check=True
        )
        before, after, pid = map(int, out.stdout.split())
        assert before == os.getsid(0) and after == pid != before


def test_the_labs_own_cluster_does_not_wake_for_what_nothing_reads() -> None:
    """Dask's cluster object sends the scheduler its description every second (a request with a reply, for Dask's
    widgets), and the scheduler and nannies wake several times a second for diagnostics and for timeouts the lab
    leaves off; nothing of the lab reads any of it, so a cluster the lab starts does none of it."""
    import time
    from collections import Counter

    from engine.clients.cluster.calm import CALM_CALLBACKS
    from engine.clients.cluster.local import start_local_cluster

    with start_local_cluster(1) as local:
        scheduler, seen = local.scheduler, Counter[str]()
        handler = scheduler.handlers["set_metadata"]

        def counted(*args: object, **kwargs: object) -> object:
            seen["set_metadata"] += 1
            return handler(*args, **kwargs)

        scheduler.handlers["set_metadata"] = counted
        time.sleep(3.0)  # Dask's default would send it three times
        # Nor do the scheduler and the nannies (in this process) wake for diagnostics or for timeouts that are off.
        calm = {**{name: False for name in CALM_CALLBACKS}, "idle-timeout": False, "no-workers-timeout": False}
        assert {name: scheduler.periodic_callbacks[name].is_running() for name in calm} == calm
        for nanny in local.workers.values():
            assert not any(nanny.periodic_callbacks[name].is_running() for name in CALM_CALLBACKS)
        assert scheduler.periodic_callbacks["worker-ttl"].is_running()  # what keeps the cluster whole goes on
    assert seen["set_metadata"] <= 1, seen


def test_a_scheduler_that_preloads_the_calm_module_never_starts_what_nothing_reads() -> None:
    """The docker-compose cluster's scheduler loads engine.clients.cluster.calm as a preload (the nannies too): the
    diagnostics callbacks and the checks of timeouts that are off never start; what keeps the cluster whole does."""
    import asyncio

    from distributed import Scheduler

    from engine.clients.cluster.calm import CALM_CALLBACKS

    async def started() -> tuple[set[str], set[str]]:
        async with Scheduler(
            host="127.0.0.1", port=0, dashboard_address=":0", preload=["engine.clients.cluster.calm"]
        ) as s:
            running = {name for name, pc in s.periodic_callbacks.items() if pc.is_running()}
            return set(s.periodic_callbacks), running

    registered, running = asyncio.run(started())
    quiet = {*CALM_CALLBACKS, "idle-timeout", "no-workers-timeout"}
    assert not quiet & registered, quiet & registered
    assert "worker-ttl" in running
