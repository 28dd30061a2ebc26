"""Start, watch and stop the embedded DynamoDB in its own process.

Its own process because a server inside the client's process shares its GIL and halves throughput
(DESIGN.md); its own free port, chosen by the child, so two labs never race for one.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from typing import Any

from engine.backends.aws_files import check_aws_files
from engine.errors import BadInput, ServerStartFailed
from engine.server.control import TOKEN_ENV, TOKEN_HEADER, plain_moto_wanted
from engine.server.profile import EXACT, ProfileSpec

START_TIMEOUT_S = 60.0


class EmbeddedServer:
    """The faithful DynamoDB as a child process. Use as a context manager, or start()/stop()."""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, ttl_interval_s: float = 1.0, profile: ProfileSpec = EXACT
    ) -> None:
        self.host = host
        self.profile = profile  # for tables without a ddblab:profile tag
        self.requested_port = port
        self.ttl_interval_s = ttl_interval_s
        self.port: int | None = None
        self.lab_token = secrets.token_urlsafe(24)  # only this process can change the server's settings
        self._proc: subprocess.Popen[str] | None = None

    @property
    def endpoint_url(self) -> str:
        if self.port is None:
            raise RuntimeError("embedded server not started")
        return f"http://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> EmbeddedServer:
        # A bad DDBLAB_PLAIN_MOTO is refused here, in the user's words, not as a child's traceback's last line.
        plain_moto_wanted()
        check_aws_files()  # boto3 in the child parses them: a bad one is not a server that "did not start"
        cmd = [
            sys.executable,
            "-m",
            "engine.server",
            "--host",
            self.host,
            "--port",
            str(self.requested_port),
            "--parent-pid",
            str(os.getpid()),
            "--ttl-interval",
            str(self.ttl_interval_s),
            "--profile",
            self.profile.tag_value(),
        ]
        # The server never calls AWS, but boto3 inside it reads the profile: a user's AWS_PROFILE naming a
        # profile this machine lacks would stop it from starting.
        env = {k: v for k, v in os.environ.items() if k not in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE")}
        env["PYTHONUNBUFFERED"] = "1"
        env[TOKEN_ENV] = self.lab_token
        # stdin is a pipe we never write: the child exits when it closes, i.e. when this process dies.
        self._proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,
        )
        self._stderr_tail: deque[str] = deque(maxlen=50)
        threading.Thread(target=self._drain_stderr, name="embedded-server-stderr", daemon=True).start()
        line = self._first_line(START_TIMEOUT_S)
        if line.startswith("LISTENING "):
            self.port = int(line.split()[1])
            threading.Thread(target=self._drain, name="embedded-server-stdout", daemon=True).start()
            return self
        if self._proc.poll() is not None:
            self._proc.wait()
        time.sleep(0.1)  # let the stderr reader catch the last lines
        err = "\n".join(self._stderr_tail)
        self.stop()
        if line.startswith("ERROR") and "in use" in line.lower():
            raise BadInput(
                f"port {self.requested_port} on {self.host} is already in use",
                "pick another --port, or stop the program that holds it",
            )
        tail = (err.strip().splitlines() or [line or "no output"])[-1]
        raise ServerStartFailed(
            f"the embedded DynamoDB did not start: {tail}",
            "check that the set-up command was run (moto[server] installed)",
        )

    def _first_line(self, timeout: float) -> str:
        assert self._proc and self._proc.stdout
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(self._proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(timeout)
        return box[0].strip() if box else ""

    def _drain_stderr(self) -> None:
        # moto logs a traceback for every HTTP 500; an unread pipe would fill up and hang the server.
        proc = self._proc
        if proc and proc.stderr:
            for line in proc.stderr:
                self._stderr_tail.append(line.rstrip())

    def _drain(self) -> None:
        # Keep reading so the child never blocks on a full pipe.
        proc = self._proc
        if proc and proc.stdout:
            for _ in proc.stdout:
                pass

    def stop(self, timeout: float = 5.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        for stream in (proc.stdin, proc.stdout):
            if stream:
                stream.close()

    def kill(self) -> None:
        """Kill -9, for fault tests: the server dies as a crashed process would."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(5)

    def configure(self, **settings: Any) -> dict[str, Any]:
        """Change server-side faults (latency_ms, throttle_share, throttle_code, ttl_interval_s)."""
        return lab_config(self.endpoint_url, token=self.lab_token, **settings)

    def __enter__(self) -> EmbeddedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def lab_config(endpoint_url: str, *, token: str, **settings: Any) -> dict[str, Any]:
    """POST /_lab/config on an embedded server (any process) and return its current settings. `token` is the
    one that server was started with (EmbeddedServer.lab_token, or what `python -m engine serve` printed)."""
    data = json.dumps(settings).encode()
    request = urllib.request.Request(
        endpoint_url.rstrip("/") + "/_lab/config",
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", TOKEN_HEADER: token},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def table_stats(endpoint_url: str, table: str) -> dict[str, int]:
    """What the aws-like model did to one table (SIMULATED): transaction conflicts, throttled requests,
    stale reads; {} for a table of the exact profile or a server that is not the lab's."""
    from urllib.parse import quote

    try:
        url = f"{endpoint_url.rstrip('/')}/_lab/stats?table={quote(table)}"
        with urllib.request.urlopen(url, timeout=5) as response:
            data = json.loads(response.read())
    except Exception:
        return {}
    return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}


def is_embedded(endpoint_url: str) -> bool:
    """True when the endpoint is one of our embedded servers (it answers /_lab/health)."""
    try:
        with urllib.request.urlopen(endpoint_url.rstrip("/") + "/_lab/health", timeout=2) as response:
            return response.status == 200
    except Exception:
        return False
