"""docker-compose.yml is for users (no Docker engine runs here): check its shape instead of running it."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_dynamodb_local_runs_in_memory_with_a_shared_db_on_8000() -> None:
    local = _compose()["services"]["dynamodb-local"]
    assert local["image"].startswith("amazon/dynamodb-local")
    assert local["command"] == ["-jar", "DynamoDBLocal.jar", "-sharedDb", "-inMemory"]
    assert "8000" in [str(p) for p in local["expose"]]


def test_the_dashboard_is_published_on_loopback_only_and_points_at_dynamodb_local() -> None:
    services = _compose()["services"]
    dashboard = services["dashboard"]
    assert dashboard["build"] == "."
    assert all(str(p).startswith("127.0.0.1:") for s in services.values() for p in s.get("ports", []))
    assert "127.0.0.1:8501:8501" in dashboard["ports"]
    assert dashboard["environment"]["DDBLAB_ENDPOINT_URL"] == "http://dynamodb-local:8000"
    assert "dynamodb-local" in dashboard["depends_on"]


def test_the_dashboard_has_a_healthcheck_on_streamlits_health_endpoint() -> None:
    check = _compose()["services"]["dashboard"]["healthcheck"]
    assert any("/_stcore/health" in part for part in check["test"])


def test_the_dockerfile_starts_the_dashboard_module() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["python", "-m", "dashboard"' in dockerfile and "EXPOSE 8501" in dockerfile
    for path in ("engine", "dashboard", ".streamlit", "pyproject.toml"):
        assert path in dockerfile and (ROOT / path).exists()


def test_the_cluster_profile_adds_a_scheduler_and_two_lab_workers_beside_the_dashboard() -> None:
    services = _compose()["services"]
    scheduler = services["scheduler"]
    assert scheduler["profiles"] == ["cluster"] and scheduler["build"] == "."
    assert scheduler["command"][:2] == ["dask", "scheduler"] and "8786" in scheduler["command"]
    workers = [s for name, s in services.items() if name.startswith("worker")]
    assert len(workers) == 2
    for worker in workers:
        assert worker["profiles"] == ["cluster"] and worker["build"] == "."  # the lab's image: it imports engine
        assert worker["command"][:3] == ["dask", "worker", "tcp://scheduler:8786"]
        assert {"scheduler", "dynamodb-local"} <= set(worker["depends_on"])
        assert _option(worker["command"], "--preload-nanny") == "engine.clients.cluster.calm"
    assert _option(scheduler["command"], "--preload") == "engine.clients.cluster.calm"  # a module the image has
    assert (ROOT / "engine" / "clients" / "cluster" / "calm.py").exists()
    # The plain `docker compose up` is unchanged: the dashboard and DynamoDB Local carry no profile.
    assert "profiles" not in services["dashboard"] and "profiles" not in services["dynamodb-local"]


def _option(command: list[str], name: str) -> str | None:
    return command[command.index(name) + 1] if name in command else None
