"""A held index for GSI tests: the embedded server's index shows no write made while it is held, however long the
reads take to arrive, and shows them all once the reads the test needs have been answered. So a read-back that
must miss its write misses it in every run, not only when it comes within the lag.

`IndexHold(backend, parties, each)` is the test's backend (wrapping a real one, as tests/lockstep.Lockstep does).
The hold is the server's own simulated lag (engine/server/simulated/gsi_lag.py), an hour long: it starts when the
table's lag is set (a TagResource with the lag tag, as a walkthrough's scene sends, has its value replaced) or, in
a run, at the first call of a run client (the table is tagged then). It ends, the lag tag removed, once `parties`
threads have each had `each` index reads (Query or Scan with IndexName) answered; from then on the index is
instant. The calls are real calls over HTTP to the real server; only how long the index waits is fixed.

`check()` fails the test when the hold never started or never ended (the reads it waited for were not made).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from engine.backends.tables import GSI_LAG_TAG
from tests.hooked_backend import Hook, HookedBackend, in_client_thread

HOLD_MS = 3_600_000  # an hour: no read of a test's run comes that late
INDEX_READS = frozenset({"Query", "Scan"})


class IndexHold(HookedBackend):
    BEFORE = "before-parameter-build.dynamodb"  # its hook changes a lag tag's value

    def __init__(self, backend: Any, parties: int = 1, each: int = 1) -> None:
        super().__init__(backend)
        self._parties, self._each = parties, each
        self._lock = threading.Lock()
        self._table: str | None = None  # the held table, once the hold started
        self._answered: Counter[str] = Counter()  # index reads answered while held, per thread
        self._reading = threading.local()  # the calling thread's call in flight is an index read
        self.released = False

    def hooks(self, client_kwargs: dict[str, Any]) -> tuple[Hook, Hook]:
        return self._before, self._after

    def check(self) -> None:
        """Fail loudly when the index was not held, or not let go (the reads the test needed were not made)."""
        assert self._table is not None, "the index was never held: no lag was set and no run client called"
        assert self.released, f"the index was never let go: index reads answered per thread {dict(self._answered)}"

    def _before(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self._reading.index = False
        with self._lock:
            if model.name == "TagResource" and not self.released:
                for tag in params.get("Tags", []):
                    if tag.get("Key") == GSI_LAG_TAG:
                        tag["Value"] = str(HOLD_MS)
                        self._table = str(params["ResourceArn"]).rsplit("/", 1)[-1]
            elif self._table is None and in_client_thread():
                self._table = str(params["TableName"])
                self._tag({"Key": GSI_LAG_TAG, "Value": str(HOLD_MS)})
            if self._table is not None and not self.released:
                self._reading.index = model.name in INDEX_READS and bool(params.get("IndexName"))

    def _after(self, **_: Any) -> None:
        if not getattr(self._reading, "index", False):
            return
        self._reading.index = False
        with self._lock:
            self._answered[threading.current_thread().name] += 1
            done = sum(n >= self._each for n in self._answered.values()) >= self._parties
            if done and not self.released:
                self._tag(None)
                self.released = True

    def _tag(self, tag: dict[str, str] | None) -> None:
        """Set the held table's lag tag, or remove it (None): the server reads it on every call."""
        side = self._backend.client()  # not hooked: its calls are the test's, not the run's
        arn = side.describe_table(TableName=self._table)["Table"]["TableArn"]
        if tag is None:
            side.untag_resource(ResourceArn=arn, TagKeys=[GSI_LAG_TAG])
        else:
            side.tag_resource(ResourceArn=arn, Tags=[tag])
