"""The lab's own Dask settings for a cluster it starts itself: each names a setting Dask has (a misspelt key would
silently leave Dask's default on), and each turns off or slows what it says."""

from __future__ import annotations

import pytest

from engine.cluster_local import LAB_DASK_CONFIG, dask_env

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
