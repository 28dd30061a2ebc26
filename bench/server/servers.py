"""The servers the throughput benchmark compares (bench/server/throughput.py): each a context manager that starts one,
yields (endpoint URL, pid) and stops it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.server.host.process import EmbeddedServer

DYNALITE_DIR = Path.home() / ".cache" / "ddblab" / "dynalite"


@contextmanager
def embedded() -> Iterator[tuple[str, int]]:
    with EmbeddedServer() as server:
        assert server.pid is not None
        yield server.endpoint_url, server.pid


@contextmanager
def plain() -> Iterator[tuple[str, int]]:
    """The embedded server without its fast path: moto's Flask app, as it comes (DDBLAB_PLAIN_MOTO)."""
    os.environ["DDBLAB_PLAIN_MOTO"] = "1"
    try:
        server = EmbeddedServer().start()
    finally:
        del os.environ["DDBLAB_PLAIN_MOTO"]
    try:
        assert server.pid is not None
        yield server.endpoint_url, server.pid
    finally:
        server.stop()


@contextmanager
def dynalite() -> Iterator[tuple[str, int]]:
    cli = DYNALITE_DIR / "node_modules" / "dynalite" / "cli.js"
    if not cli.exists():
        DYNALITE_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(DYNALITE_DIR), "dynalite"], check=True, capture_output=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        ["node", str(cli), "--host", "127.0.0.1", "--port", str(port), "--createTableMs", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", proc.pid
    finally:
        proc.terminate()
        proc.wait(5)


@contextmanager
def baseline(checkout: Path) -> Iterator[tuple[str, int]]:
    """The embedded server of another checkout of the lab (e.g. `git worktree add /tmp/base main`), run by this
    Python: what a change to the server is worth, measured in the same run as the change."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.server", "--port", "0", "--parent-pid", str(os.getpid())],
        cwd=checkout,  # `python -m` puts the checkout first on sys.path: its engine, not this one
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if line[:1] != ["LISTENING"]:
            raise SystemExit(f"the baseline server in {checkout} did not start: use a checkout of the lab")
        yield f"http://127.0.0.1:{line[1]}", proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


SERVERS: dict[str, Callable[[], Any]] = {"embedded": embedded, "dynalite": dynalite, "plain": plain}
