"""The conformance suite against Amazon's DynamoDB Local: the embedded server's race tests and every
pattern's invariants, run unchanged with DDBLAB_TEST_ENDPOINT pointing at a real DynamoDB Local.

It runs as a child pytest so the suite's own session fixtures (one server for all tests) point at DynamoDB
Local from the start. Tests that need the embedded server's extras skip there with their reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import dynamodb_local

ROOT = Path(__file__).resolve().parent.parent
# The races that aim at the endpoint under test, and every pattern. test_atomicity's embedded-server and plain-moto
# races start their own servers whatever the endpoint: the main suite runs them, here they would only repeat it.
SUITE = ("tests/server/test_atomicity.py::test_the_endpoint_under_test_is_atomic_too", "tests/patterns")


@pytest.mark.skipif(bool(os.environ.get("DDBLAB_TEST_ENDPOINT")), reason="already running against another endpoint")
def test_races_and_every_patterns_invariants_hold_on_dynamodb_local() -> None:
    if why := dynamodb_local.missing():
        pytest.skip(why)
    server, endpoint = dynamodb_local.start(jvm_options=dynamodb_local.QUICK_JIT)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-o",
                "addopts=-m 'not slow'",
                "-rs",
                *SUITE,
            ],
            cwd=ROOT,
            env={**os.environ, "DDBLAB_TEST_ENDPOINT": endpoint},
            capture_output=True,
            text=True,
            timeout=1200,
        )
    finally:
        server.kill()
        server.wait()
    tail = "\n".join(result.stdout.splitlines()[-40:])
    assert result.returncode == 0, tail
    assert " passed" in tail and " failed" not in tail, tail
    print(tail)  # with -rs: which tests skipped on DynamoDB Local, and why
