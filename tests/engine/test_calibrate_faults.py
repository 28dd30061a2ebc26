"""calibrate on a flaky network: a probe call that gets no answer (botocore's ReadTimeoutError) is a failed sample
the latency probe counts and reports, or it stops calibrate with one message; never a fit on part of the calls
without a word (a probe thread it killed once took its calls with it)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ReadTimeoutError

from engine.errors import LabError
from engine.run import calibrate, op_latency


class Flaky:
    """A client whose every `every`-th call (counted over all threads, so exactly that many in all) raises a read
    timeout, as a dropped answer does; the others answer at once."""

    def __init__(self, every: int | None) -> None:
        self.every = every
        self.calls = 0
        self.timeouts = 0
        self._lock = threading.Lock()

    def _call(self, **_: Any) -> dict[str, Any]:
        with self._lock:
            self.calls += 1
            timeout = self.every is not None and self.calls % self.every == 0
            self.timeouts += timeout
        if timeout:
            raise ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")
        return {"Item": {}}

    get_item = put_item = update_item = query = transact_write_items = transact_get_items = _call


def table(client: Flaky) -> SimpleNamespace:
    return SimpleNamespace(client=client, name="t")


def test_a_probe_call_without_an_answer_is_a_failed_sample_counted_and_reported() -> None:
    probe = Flaky(every=10)
    added, _, failed = op_latency.measure(table(probe), table(Flaky(every=None)))
    calls = len(op_latency.OPERATIONS) * op_latency.CALLS
    assert probe.timeouts == (calls + 1) // 10 > 0  # the one put of the read item included
    assert sum(failed.values()) == probe.timeouts  # every one counted, none lost with a thread
    assert sum(map(len, added.values())) + sum(failed.values()) == calls
    result = calibrate.Calibration()
    calibrate._latency(table(Flaky(every=10)), table(Flaky(every=None)), result)
    assert any("failed (left out)" in note for note in result.notes), result.notes


def test_a_hot_key_call_without_an_answer_stops_calibrate_with_one_message() -> None:
    with pytest.raises(LabError, match="got no answer from the DynamoDB measured .ReadTimeoutError"):
        calibrate._hot_key(table(Flaky(every=10)), calibrate.Calibration())


def test_a_window_probe_call_without_an_answer_stops_calibrate_with_one_message() -> None:
    with pytest.raises(LabError, match="got no answer"):
        calibrate._windows(table(Flaky(every=10)), calibrate.Calibration())
