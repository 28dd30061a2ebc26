"""The dashboard's limits, from the environment, and the call budgets every browser session shares.

Caps keep one laptop (or one projector demo) from drowning: threads per run, client threads across every running
run and sweep of every session, the number of runs kept, imported calls kept in memory, and the calls every
session may make in total (`CallBudget`: one budget for all backends, a smaller one for AWS, where calls cost
money). Each cap is read from the environment when this module is imported (BadInput, naming it, when bad); their
defaults and ranges, and the check `python -m dashboard` and the app make first, are in dashboard.state.env_settings.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING

from dashboard.state.env_settings import cap, per_run_threads
from engine.errors import BadInput

if TYPE_CHECKING:  # budgets watch runs; they never make one
    from engine.run.runner import Run

MAX_THREADS_PER_RUN = per_run_threads()
MAX_TOTAL_THREADS = cap("DDBLAB_MAX_TOTAL_THREADS")
MAX_RUNS = cap("DDBLAB_MAX_RUNS")
# Client processes (engine/clients/processes.py) across every running run: each is a Python with boto3 (~130 MB) and wants a
# core of its own, so more than the machine has cores only slows every run down.
MAX_TOTAL_PROCESSES = cap("DDBLAB_MAX_TOTAL_PROCESSES")
# Calls of imported histories kept in memory at once (about 200 bytes each): an import costs memory like a run.
MAX_IMPORTED_CALLS = cap("DDBLAB_MAX_IMPORTED_CALLS")
# Calls across every run of every browser session since the dashboard started (spent calls never come back; a
# restart starts a new budget). Local backends cost CPU and memory, not money: 10 million calls is an hour or more
# of the embedded server at full speed, so this only stops a runaway (a forgotten tab, a dashboard left --expose'd).
# On AWS every call is billed: 100,000 is five runs at the per-run cap (AWS_DEFAULT_MAX_CALLS), a bill of cents to
# about a dollar of on-demand requests. AWS calls count against both.
MAX_TOTAL_CALLS = cap("DDBLAB_MAX_TOTAL_CALLS")
MAX_AWS_CALLS = cap("DDBLAB_MAX_AWS_CALLS")
MAX_IMPORT_BYTES = 512 * 1024 * 1024


class CallBudget:
    """Calls that runs may make in total, shared by every session of one dashboard process. Thread-safe.

    Counted from what the runs recorded (`len(run.history)`, live while they run): what was called, not what was
    planned. A spent budget stays spent until the dashboard restarts; calls of runs since removed from the
    registry (the oldest, past MAX_RUNS) still count. The few calls of a run's setup and verification (seeding
    items, reading the table back) are not in its history, so not counted.

    How far runs can overshoot, and why it is bounded:
    - one run: it is given `max_calls` = at most what is left, and its clients check that before each operation,
      so it passes the budget only by the operations already in flight, at most one per client thread (an
      operation is a few calls: a read and a write, a retry loop that re-checks between attempts), so at most a
      few calls × threads (256 per run, MAX_TOTAL_THREADS across all runs);
    - runs in parallel (other tabs, sweeps): each is given the `left` it saw at its start, when the others had
      barely called, so k runs started together could make k × left. The watcher closes that: every POLL_S it
      sums the live counts and, once the budget is reached, stops every running run charged to it (they end
      STOPPED, verified, and say why). The overshoot is then what all runs call in one poll (calls/s × POLL_S,
      about a hundred at a few thousand calls/s) plus the operations in flight, as above: a bound set by the
      thread caps and the poll, not by the number of runs or the size of the budget.
    """

    POLL_S = 0.05

    def __init__(self, limit: int, what: str, env: str) -> None:
        self.limit = limit
        self.what = what  # how messages name it: "calls", "calls on AWS"
        self.env = env  # the setting that raises it
        self._settled = 0  # calls of runs that have ended: final, so no longer summed on every poll
        self._live: list[Run] = []
        self._stopped: weakref.WeakSet[Run] = weakref.WeakSet()  # runs the watcher stopped
        self._watcher: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def fix(self) -> str:
        return f"restart the dashboard to start a new budget, or set {self.env} higher before starting it"

    def used(self) -> int:
        with self._lock:
            return self._used()

    def left(self) -> int:
        return max(0, self.limit - self.used())

    def check(self) -> None:
        """Raise BadInput, naming the limit and the fix, when nothing is left."""
        used = self.used()
        if used >= self.limit:
            raise BadInput(
                f"the dashboard's budget of {self.limit:,} {self.what} is spent: runs of every browser "
                f"session have made {used:,} since it started",
                self.fix,
            )

    def charge(self, run: Run) -> None:
        """Count `run`'s calls against this budget from now on, and watch it while it runs."""
        with self._lock:
            self._live.append(run)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name=f"ddblab-budget-{self.env}", daemon=True)
                self._watcher.start()

    def settle(self, calls: int) -> None:
        """Count `calls` made outside a run (a seed scene's, recorded and ended) against this budget."""
        with self._lock:
            self._settled += max(0, calls)

    def stopped(self, run: Run) -> bool:
        """Whether the watcher stopped `run` because the budget ran out."""
        with self._lock:
            return run in self._stopped

    def _used(self) -> int:
        # A run's count is final once it has finished: fold it into _settled, so each poll sums only live runs.
        keep = []
        for run in self._live:
            if run.finished:
                self._settled += len(run.history)
            else:
                keep.append(run)
        self._live = keep
        return self._settled + sum(len(run.history) for run in keep)

    def _watch(self) -> None:
        # Alive only while runs are: it ends when the last one has, and charge() starts another.
        while True:
            time.sleep(self.POLL_S)
            with self._lock:
                used = self._used()
                if not self._live:
                    self._watcher = None
                    return
                if used >= self.limit:
                    for run in self._live:
                        if run not in self._stopped:
                            self._stopped.add(run)
                            run.stop()
