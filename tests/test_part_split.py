"""./test runs the engine's thread-heavy tests in a pytest process of their own, apart from what the dashboard's and
the cluster's tests load (Streamlit and its protobuf, Playwright's greenlets, Dask): the part where the interpreter
once died in a garbage collection (docs/crash.md) should hold as few native modules as it needs. Collecting a module
imports it, so importing every module of that part, in a fresh interpreter, shows what the part loads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The parts ./test runs apart from the engine's (their own pytest processes).
ELSEWHERE = ("tests/dashboard/", "tests/cluster/")
KEPT_OUT = ("streamlit", "google.protobuf", "playwright", "greenlet", "distributed", "dashboard")


def engine_part_modules() -> list[str]:
    paths = sorted((ROOT / "tests").rglob("*.py"))
    kept = [p.relative_to(ROOT) for p in paths if not str(p.relative_to(ROOT)).startswith(ELSEWHERE)]
    return [".".join(p.with_suffix("").parts) for p in kept if p.name != "__init__.py"]


def test_the_engine_part_loads_nothing_of_the_dashboard_or_the_cluster() -> None:
    modules = engine_part_modules()
    assert "tests.server.test_atomicity" in modules and not any(m.startswith("tests.dashboard") for m in modules)
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    found = sorted({name for name in loaded if name.startswith(KEPT_OUT) and "." not in name.removeprefix("google.")})
    assert found == [], (
        f"the engine part's test modules import {found}: move the test that needs it under tests/dashboard"
    )
