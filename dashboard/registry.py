"""The runs registry and the shared backends, one per dashboard process.

`get_registry()` is an `st.cache_resource`, so runs survive a page refresh and every browser tab sees the same
ones; the embedded DynamoDB is started once, on first use, and shared. Everything else here is plain Python
(Streamlit is only that decorator), so it is tested directly.

Caps keep one laptop (or one projector demo) from drowning: threads per run, client threads across every
running run and sweep of every session, the number of runs kept (the oldest finished ones go first), and the calls
every session may make in total (`CallBudget`: one budget for all backends, a smaller one for AWS, where calls
cost money).
"""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import streamlit as st

from dashboard.records import RunRecord, Source, known_pattern
from dashboard.sweeps import SweepJob, SweepState
from engine.backend import Backend, BackendKind, BackendSpec
from engine.errors import BadInput, HistoryFileError, LabError
from engine.history import read_jsonl
from engine.patterns import get_pattern
from engine.runner import AWS_DEFAULT_MAX_CALLS, Run, RunConfig

# Where these moved: kept importable from here, as the pages and other tools import them.
__all__ = ["CallBudget", "Registry", "RunRecord", "Source", "SweepJob", "SweepState", "get_registry", "known_pattern"]

MAX_THREADS_PER_RUN = int(os.environ.get("DDBLAB_MAX_THREADS_PER_RUN", "256"))
MAX_TOTAL_THREADS = int(os.environ.get("DDBLAB_MAX_TOTAL_THREADS", "512"))
MAX_RUNS = int(os.environ.get("DDBLAB_MAX_RUNS", "40"))
# Client processes (engine/pool.py) across every running run: each is a Python with boto3 (~130 MB) and wants a
# core of its own, so more than the machine has cores only slows every run down.
MAX_TOTAL_PROCESSES = int(os.environ.get("DDBLAB_MAX_TOTAL_PROCESSES", str(max(2, os.cpu_count() or 2))))
# Calls across every run of every browser session since the dashboard started (spent calls never come back; a
# restart starts a new budget). Local backends cost CPU and memory, not money: 10 million calls is an hour or more
# of the embedded server at full speed, so this only stops a runaway (a forgotten tab, a dashboard left --expose'd).
# On AWS every call is billed: 100,000 is five runs at the per-run cap (AWS_DEFAULT_MAX_CALLS), a bill of cents to
# about a dollar of on-demand requests. AWS calls count against both.
MAX_TOTAL_CALLS = int(os.environ.get("DDBLAB_MAX_TOTAL_CALLS", "10000000"))
MAX_AWS_CALLS = int(os.environ.get("DDBLAB_MAX_AWS_CALLS", "100000"))
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


def backend_label(backend: Backend, info: dict[str, Any] | None = None) -> str:
    if backend.kind is BackendKind.EMBEDDED:
        return "embedded DynamoDB"
    if backend.kind is BackendKind.AWS:
        account = (info or {}).get("account", "")
        return f"AWS {backend.spec.region}" + (f" · account {account}" if account else "")
    return f"endpoint {backend.endpoint_url}"


class Registry:
    """Runs, sweeps and backends shared by every session of one dashboard process. Thread-safe."""

    def __init__(
        self,
        *,
        max_threads_per_run: int = MAX_THREADS_PER_RUN,
        max_total_threads: int = MAX_TOTAL_THREADS,
        max_runs: int = MAX_RUNS,
        max_total_calls: int = MAX_TOTAL_CALLS,
        max_aws_calls: int = MAX_AWS_CALLS,
        max_total_processes: int = MAX_TOTAL_PROCESSES,
        backend_factory: Callable[[BackendSpec], Backend] = Backend,
    ) -> None:
        self.max_threads_per_run = max_threads_per_run
        self.max_total_processes = max_total_processes
        self.max_total_threads = max_total_threads
        self.max_runs = max_runs
        self.calls = CallBudget(max_total_calls, "calls", "DDBLAB_MAX_TOTAL_CALLS")
        self.aws_calls = CallBudget(max_aws_calls, "calls on AWS", "DDBLAB_MAX_AWS_CALLS")
        self._backend_factory = backend_factory
        self._lock = threading.RLock()
        self._runs: dict[str, RunRecord] = {}
        self._sweeps: dict[str, SweepJob] = {}
        self._backends: dict[BackendSpec, Backend] = {}
        self._backend_info: dict[BackendSpec, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._opener = ThreadPoolExecutor(1, thread_name_prefix="ddblab-backend")

    # -- backends -----------------------------------------------------------------------------------------------

    def backend(self, spec: BackendSpec) -> Backend:
        """The open backend for `spec`, opened (and checked) on first use; the embedded one restarts if it died."""
        with self._lock:
            backend = self._backends.get(spec)
            if backend is not None and backend.alive():
                return backend
            if backend is not None:
                backend.close()
                del self._backends[spec]
            backend = self._backend_factory(spec)
            # Opened on one long-lived thread, so no script run's thread owns the server's child process.
            self._opener.submit(backend.open).result()  # raises BackendUnavailable / ServerStartFailed
            self._backends[spec] = backend
            return backend

    def describe(self, spec: BackendSpec) -> dict[str, Any]:
        """What the sidebar shows: kind, endpoint, region, masked AWS account; never credentials."""
        backend = self.backend(spec)
        with self._lock:
            if spec not in self._backend_info:
                self._backend_info[spec] = backend.describe()
            return dict(self._backend_info[spec])

    def close(self) -> None:
        with self._lock:
            for record in self._runs.values():
                if record.run is not None:
                    record.run.stop()
            for backend in self._backends.values():
                backend.close()
            self._backends.clear()
            self._opener.shutdown(wait=False)

    # -- capacity -----------------------------------------------------------------------------------------------

    def threads_in_use(self) -> int:
        with self._lock:
            return sum(r.threads for r in self._runs.values() if r.running) + sum(
                s.threads_busy for s in self._sweeps.values() if s.running
            )

    def processes_in_use(self) -> int:
        with self._lock:
            return sum(_children(r.run.config) for r in self._runs.values() if r.running and r.run is not None)

    def _check_capacity(self, threads: int, children: int = 0) -> None:
        busy = self.threads_in_use()
        if busy + threads > self.max_total_threads:
            raise BadInput(
                f"{threads} more client threads would pass the dashboard's limit of "
                f"{self.max_total_threads} at once ({busy} are busy in other runs)",
                "wait for a run to finish, stop one, or use fewer threads",
            )
        running = self.processes_in_use()
        if children and running + children > self.max_total_processes:
            raise BadInput(
                f"{children} more client processes would pass the dashboard's limit of "
                f"{self.max_total_processes} at once ({running} are busy in other runs)",
                "use fewer client processes, wait for a run to finish, or raise DDBLAB_MAX_TOTAL_PROCESSES",
            )

    def _validated(self, config: RunConfig, spec: BackendSpec | None = None) -> RunConfig:
        config = dataclasses.replace(config, max_threads=min(config.max_threads, self.max_threads_per_run))
        if spec is not None and spec.kind is BackendKind.AWS and config.max_calls is None:
            config = dataclasses.replace(config, max_calls=AWS_DEFAULT_MAX_CALLS)  # real calls cost money
        config.validated()  # BadInput with a fix: 0 threads, unknown option, out of range...
        return config

    def budgets(self, spec: BackendSpec) -> tuple[CallBudget, ...]:
        """The call budgets a run on `spec` draws from: every run the total one, a run on AWS the AWS one too."""
        return (self.calls, self.aws_calls) if spec.kind is BackendKind.AWS else (self.calls,)

    def calls_left(self, spec: BackendSpec) -> int:
        return min(budget.left() for budget in self.budgets(spec))

    def _check_budgets(self, spec: BackendSpec) -> None:
        for budget in self.budgets(spec):
            budget.check()  # BadInput naming the spent budget and its setting

    def _budgeted(self, config: RunConfig, spec: BackendSpec, share: int = 1) -> tuple[RunConfig, int | None]:
        """`config` with max_calls at most its `share` of what is left of the budgets, and that cap when it is the
        budget that limits the run (None when the run's own max_calls is lower). BadInput when a budget is spent.

        A Compare pair splits what is left in two: both sides get the same cap (a fair comparison), and together
        they cannot pass it. Runs of other sessions running at the same time are the CallBudget watcher's part.
        """
        self._check_budgets(spec)
        left = max(1, self.calls_left(spec) // share)  # never 0: max_calls must be at least 1
        if config.max_calls is not None and config.max_calls <= left:
            return config, None
        return dataclasses.replace(config, max_calls=left), left

    def _charge(self, run: Run, spec: BackendSpec) -> tuple[CallBudget, ...]:
        budgets = self.budgets(spec)
        for budget in budgets:
            budget.charge(run)
        return budgets

    # -- runs ---------------------------------------------------------------------------------------------------

    def _new_id(self, prefix: str = "r") -> str:
        return f"{prefix}{next(self._ids)}"

    def _record(
        self, run: Run, backend: Backend, spec: BackendSpec, group: str | None, budget_cap: int | None
    ) -> RunRecord:
        """The run's record, its calls charged to the budgets from now on (so: right before it starts)."""
        cfg = run.config
        return RunRecord(
            id=self._new_id(),
            source=Source.LIVE,
            pattern=cfg.pattern,
            variant=str(cfg.variant),
            threads=cfg.threads,
            ops_per_client=cfg.ops_per_client,
            duration_s=cfg.duration_s,
            history=run.history,
            run=run,
            group=group,
            backend_label=backend_label(backend),
            budgets=self._charge(run, spec),
            budget_cap=budget_cap,
        )

    def start(self, config: RunConfig, spec: BackendSpec) -> RunRecord:
        """Validate, check capacity and the call budgets, start the run in the background and register it."""
        config = self._validated(config, spec)
        with self._lock:
            self._check_capacity(config.threads, _children(config))
            config, cap = self._budgeted(config, spec)
            backend = self.backend(spec)
            run = Run(config, backend)
            record = self._record(run, backend, spec, None, cap)
            self._add(record)
            run.start()
        return record

    def start_pair(self, config: RunConfig, spec: BackendSpec) -> tuple[RunRecord, RunRecord]:
        """The safe and the racy variant of one pattern, same threads and ops, started together on two tables."""
        pattern = get_pattern(config.pattern)
        safe_name, racy_name = pattern.safe_variant(), pattern.racy_variant()
        # A knob left at the safe variant's default takes the racy variant's own default (e.g. transactions'
        # crash_share), so each side runs as the pattern means it; a knob the user changed applies to both.
        racy_options = {
            name: (
                pattern.variant_default(racy_name, name) if value == pattern.variant_default(safe_name, name) else value
            )
            for name, value in config.options.items()
        }
        safe = self._validated(dataclasses.replace(config, variant=safe_name), spec)
        racy = self._validated(dataclasses.replace(config, variant=racy_name, options=racy_options), spec)
        with self._lock:
            self._check_capacity(safe.threads + racy.threads, _children(safe) + _children(racy))
            safe, cap = self._budgeted(safe, spec, share=2)
            racy = dataclasses.replace(racy, max_calls=safe.max_calls)  # one cap for both: a fair comparison
            backend = self.backend(spec)
            group = self._new_id("c")
            runs = (Run(safe, backend), Run(racy, backend))
            records = tuple(self._record(run, backend, spec, group, cap) for run in runs)
            for record in records:
                self._add(record)
            started: list[Run] = []
            try:
                for run in runs:
                    run.start()
                    started.append(run)
            except LabError as e:
                for run in runs:  # half a comparison compares nothing: stop the side that started
                    if run in started:
                        run.stop()
                    elif not run.finished:
                        run.fail(e)
                raise
        return records  # type: ignore[return-value]

    def import_history(self, name: str, data: bytes) -> RunRecord:
        """A history file exported by the lab (or the CLI's --history FILE.jsonl), to view without DynamoDB."""
        if len(data) > MAX_IMPORT_BYTES:
            raise HistoryFileError(
                f"{name} is {len(data) / 1e6:.0f} MB, above the import limit",
                f"import a file under {MAX_IMPORT_BYTES // 1024 // 1024} MB",
            )
        if not name.lower().endswith(".jsonl"):
            raise HistoryFileError(
                f"{name!r} is not a .jsonl history",
                "import the .jsonl file (the CSV and summary JSON cannot be replayed)",
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise HistoryFileError(f"{name} is not UTF-8 text", "import a .jsonl history exported by the lab") from None
        history, meta = read_jsonl(io.StringIO(text))
        raw = meta.get("summary")
        summary: dict[str, Any] = raw if isinstance(raw, dict) else {}
        pattern = str(summary.get("pattern") or "unknown")
        variant = str(summary.get("variant") or "?")
        threads = int(
            summary.get("threads")
            or (max((c.client for c in history.calls(range(min(len(history), 5000)))), default=-1) + 1)
        )
        record = RunRecord(
            id=self._new_id("i"),
            source=Source.IMPORTED,
            pattern=pattern,
            variant=variant,
            threads=threads,
            ops_per_client=summary.get("ops_per_client"),
            duration_s=summary.get("duration_limit_s"),
            history=history,
            imported_summary=summary or None,
            file_name=name,
            backend_label=f"imported from {name}",
        )
        with self._lock:
            self._add(record)
        return record

    def _add(self, record: RunRecord) -> None:
        self._runs[record.id] = record
        finished = [r for r in self._runs.values() if not r.running]
        while len(self._runs) > self.max_runs and finished:
            del self._runs[finished.pop(0).id]

    def get(self, run_id: str | None) -> RunRecord | None:
        if not run_id:
            return None
        with self._lock:
            return self._runs.get(run_id)

    def records(self) -> list[RunRecord]:
        """Newest first."""
        with self._lock:
            return list(reversed(self._runs.values()))

    def group(self, group: str | None) -> list[RunRecord]:
        with self._lock:
            return [r for r in self._runs.values() if group and r.group == group]

    def groups(self) -> list[str]:
        with self._lock:
            return list(dict.fromkeys(r.group for r in reversed(self._runs.values()) if r.group))

    def remove(self, run_id: str) -> None:
        with self._lock:
            record = self._runs.pop(run_id, None)
        if record is not None and record.run is not None:
            record.run.stop()

    # -- sweeps -------------------------------------------------------------------------------------------------

    def start_sweep(
        self, pattern: str, thread_counts: Sequence[int], ops_per_client: int, spec: BackendSpec, repeats: int = 1
    ) -> SweepJob:
        cls = get_pattern(pattern)
        counts = tuple(sorted({int(t) for t in thread_counts}))
        if not counts:
            raise BadInput("no thread counts were picked", "pick at least one, e.g. 1, 2, 4, 8, 16")
        if counts[0] < 1 or counts[-1] > self.max_threads_per_run:
            raise BadInput(f"thread counts must be from 1 to {self.max_threads_per_run}", "pick counts in that range")
        if ops_per_client < 1:
            raise BadInput(f"ops per client must be at least 1, got {ops_per_client}", "use 1 or more")
        from engine.sweep import plan

        next(plan(counts, ["-"], repeats))  # a repeats out of range is refused here, naming it
        with self._lock:
            self._check_capacity(counts[-1])
            self._check_budgets(spec)
            backend = self.backend(spec)
            job = SweepJob(
                id=self._new_id("s"),
                pattern=cls.name,
                thread_counts=counts,
                ops_per_client=ops_per_client,
                variants=(cls.safe_variant(), cls.racy_variant()),
                new_run=functools.partial(self._sweep_run, spec, backend),
                repeats=repeats,
            )
            self._sweeps[job.id] = job
        return job.start()

    def _sweep_run(self, spec: BackendSpec, backend: Backend, config: RunConfig) -> Run:
        """One run of a sweep (called from the sweep's thread): the caps and call budgets of any run."""
        config = self._validated(config, spec)
        with self._lock:
            config, _ = self._budgeted(config, spec)
            run = Run(config, backend)
            self._charge(run, spec)
        return run

    def sweep(self, sweep_id: str | None) -> SweepJob | None:
        with self._lock:
            return self._sweeps.get(sweep_id or "")

    def sweeps(self) -> list[SweepJob]:
        with self._lock:
            return list(reversed(self._sweeps.values()))


@st.cache_resource(show_spinner=False)
def get_registry() -> Registry:
    """The process-wide registry (a Streamlit resource: shared by sessions, kept across reruns and refreshes)."""
    return Registry()


def _children(config: RunConfig) -> int:
    """Client processes a run starts: none when its threads stay in the dashboard's own process."""
    return config.processes if config.processes > 1 else 0
