"""The registry of single runs and Compare pairs, imports and the shared backends, with the caps and call budgets
of `dashboard.settings.limits` every run is admitted against (the oldest finished runs go first when too many are kept).
Plain Python, tested directly; dashboard.widgets.registry adds sweeps and makes it the process-wide one.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

from dashboard.settings.limits import (
    MAX_AWS_CALLS,
    MAX_IMPORT_BYTES,
    MAX_IMPORTED_CALLS,
    MAX_RUNS,
    MAX_THREADS_PER_RUN,
    MAX_TOTAL_CALLS,
    MAX_TOTAL_PROCESSES,
    MAX_TOTAL_THREADS,
    CallBudget,
)
from dashboard.state.import_judge import rejudged, repeated_calls, unfinished
from dashboard.state.records import RunRecord, Source
from engine.backends.backend import Backend, BackendKind, BackendSpec
from engine.errors import BadInput, HistoryFileError, LabError
from engine.patterns import get_pattern
from engine.record.history import read_jsonl
from engine.run.config import AWS_DEFAULT_MAX_CALLS, ValidRun
from engine.run.runner import Run, RunConfig


def backend_label(backend: Backend, info: dict[str, Any] | None = None) -> str:
    if backend.kind is BackendKind.EMBEDDED:
        return "embedded DynamoDB"
    if backend.kind is BackendKind.AWS:
        account = (info or {}).get("account", "")
        return f"AWS {backend.spec.region}" + (f" · account {account}" if account else "")
    return f"endpoint {backend.endpoint_url}"


class Caps(TypedDict, total=False):
    """RunRegistry's keyword arguments, for a subclass that passes them on (mypy checks both sides)."""

    max_threads_per_run: int
    max_total_threads: int
    max_runs: int
    max_total_calls: int
    max_aws_calls: int
    max_total_processes: int
    max_imported_calls: int
    backend_factory: Callable[[BackendSpec], Backend]


class RunRegistry:
    """Runs, pairs, imports and backends shared by every session of one dashboard process. Thread-safe."""

    def __init__(
        self,
        *,
        max_threads_per_run: int = MAX_THREADS_PER_RUN,
        max_total_threads: int = MAX_TOTAL_THREADS,
        max_runs: int = MAX_RUNS,
        max_total_calls: int = MAX_TOTAL_CALLS,
        max_aws_calls: int = MAX_AWS_CALLS,
        max_total_processes: int = MAX_TOTAL_PROCESSES,
        max_imported_calls: int = MAX_IMPORTED_CALLS,
        backend_factory: Callable[[BackendSpec], Backend] = Backend,
    ) -> None:
        self.max_imported_calls = max_imported_calls
        self.max_threads_per_run = max_threads_per_run
        self.max_total_processes = max_total_processes
        self.max_total_threads = max_total_threads
        self.max_runs = max_runs
        self.calls = CallBudget(max_total_calls, "calls", "DDBLAB_MAX_TOTAL_CALLS")
        self.aws_calls = CallBudget(max_aws_calls, "calls on AWS", "DDBLAB_MAX_AWS_CALLS")
        self._backend_factory = backend_factory
        self._lock = threading.RLock()
        self._runs: dict[str, RunRecord] = {}
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
            return sum(r.threads for r in self._runs.values() if r.running)

    def processes_in_use(self) -> int:
        with self._lock:
            return sum(client_processes(r.run.config) for r in self._runs.values() if r.running and r.run is not None)

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

    def _validated(self, config: RunConfig | ValidRun, spec: BackendSpec | None = None) -> ValidRun:
        """The run checked once (a ValidRun from the page is not checked again), within this dashboard's thread cap,
        and with a call budget on AWS (real calls cost money)."""
        if isinstance(config, ValidRun):
            valid = config
        else:
            valid = dataclasses.replace(
                config, max_threads=min(config.max_threads, self.max_threads_per_run)
            ).validated()
        if valid.config.threads > self.max_threads_per_run:
            raise BadInput(
                f"{valid.config.threads} threads is above the cap of {self.max_threads_per_run}",
                f"use at most {self.max_threads_per_run}, or raise the cap with DDBLAB_MAX_THREADS_PER_RUN",
            )
        if spec is not None and spec.kind is BackendKind.AWS and valid.config.max_calls is None:
            valid = valid.with_max_calls(AWS_DEFAULT_MAX_CALLS)
        return valid

    def _check_cluster(self, address: str | None, spec: BackendSpec) -> int | None:
        """How many workers the cluster at `address` has, checked as the CLI checks --cluster before a run (the
        scheduler answers, has workers, and they reach the backend): LabError with the fix otherwise. Outside the
        lock: an unreachable scheduler takes seconds to give up, and other sessions must not wait for it."""
        if address is None:
            return None
        from engine.clients.cluster.home import check_cluster

        try:
            return check_cluster(address, self.backend(spec))
        except LabError as e:
            raise in_page_words(e) from None

    def budgets(self, spec: BackendSpec) -> tuple[CallBudget, ...]:
        """The call budgets a run on `spec` draws from: every run the total one, a run on AWS the AWS one too."""
        return (self.calls, self.aws_calls) if spec.kind is BackendKind.AWS else (self.calls,)

    def calls_left(self, spec: BackendSpec) -> int:
        return min(budget.left() for budget in self.budgets(spec))

    def _check_budgets(self, spec: BackendSpec) -> None:
        for budget in self.budgets(spec):
            budget.check()  # BadInput naming the spent budget and its setting

    def _budgeted(self, valid: ValidRun, spec: BackendSpec, share: int = 1) -> tuple[ValidRun, int | None]:
        """`config` with max_calls at most its `share` of what is left of the budgets, and that cap when it is the
        budget that limits the run (None when the run's own max_calls is lower). BadInput when a budget is spent.

        A Compare pair splits what is left in two: both sides get the same cap (a fair comparison), and together
        they cannot pass it. Runs of other sessions running at the same time are the CallBudget watcher's part.
        """
        self._check_budgets(spec)
        left = max(1, self.calls_left(spec) // share)  # never 0: max_calls must be at least 1
        if valid.config.max_calls is not None and valid.config.max_calls <= left:
            return valid, None
        return valid.with_max_calls(left), left

    def _charge(self, run: Run, spec: BackendSpec) -> tuple[CallBudget, ...]:
        budgets = self.budgets(spec)
        for budget in budgets:
            budget.charge(run)
        return budgets

    # -- runs ---------------------------------------------------------------------------------------------------

    def _new_id(self, prefix: str = "r") -> str:
        return f"{prefix}{next(self._ids)}"

    def _record(
        self,
        run: Run,
        backend: Backend,
        spec: BackendSpec,
        group: str | None,
        budget_cap: int | None,
        workers: int | None = None,
    ) -> RunRecord:
        """The run's record, its calls charged to the budgets from now on (so: right before it starts)."""
        cfg = run.config
        where = backend_label(backend)
        if cfg.cluster is not None:
            where += f" · on cluster {cfg.cluster}, {workers} workers"
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
            backend_label=where,
            budgets=self._charge(run, spec),
            budget_cap=budget_cap,
        )

    def start(self, config: RunConfig | ValidRun, spec: BackendSpec) -> RunRecord:
        """Validate (once), check capacity and the call budgets, start the run in the background and register it."""
        valid = self._validated(config, spec)
        workers = self._check_cluster(valid.config.cluster, spec)
        with self._lock:
            self._check_capacity(valid.config.threads, client_processes(valid.config))
            valid, cap = self._budgeted(valid, spec)
            backend = self.backend(spec)
            run = Run(valid, backend)
            record = self._record(run, backend, spec, None, cap, workers)
            self._add(record)
            run.start()
        return record

    def start_pair(self, config: RunConfig | ValidRun, spec: BackendSpec) -> tuple[RunRecord, RunRecord]:
        """The safe and the racy variant of one pattern, same threads and ops, started together on two tables."""
        if isinstance(config, ValidRun):
            config = config.config  # each side is its own run, checked once below
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
        safe = dataclasses.replace(config, variant=safe_name)
        racy = dataclasses.replace(config, variant=racy_name, options=racy_options)
        return self.start_group((safe, racy), spec)  # type: ignore[return-value]

    def start_group(self, configs: Sequence[RunConfig | ValidRun], spec: BackendSpec) -> tuple[RunRecord, ...]:
        """Runs compared side by side (two forms of one pattern, or two workloads), started together on their own
        tables: checked like single runs, within the thread and process caps together, splitting the calls left."""
        valid = [self._validated(config, spec) for config in configs]
        workers = self._check_cluster(valid[0].config.cluster, spec)
        with self._lock:
            self._check_capacity(sum(v.config.threads for v in valid), sum(client_processes(v.config) for v in valid))
            budgeted = [self._budgeted(v, spec, share=len(valid)) for v in valid]  # one cap each: a fair comparison
            backend = self.backend(spec)
            group = self._new_id("c")
            runs = tuple(Run(v, backend) for v, _ in budgeted)
            records = tuple(
                self._record(run, backend, spec, group, cap, workers) for run, (_, cap) in zip(runs, budgeted)
            )
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
        return records

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
        # Every field is checked by type and range (engine/record/schema.py) before anything is kept: the record is
        # shared by every session, so a bad value must never get past this line.
        history, meta = read_jsonl(io.StringIO(text))
        with self._lock:
            kept = sum(len(r.history) for r in self._runs.values() if r.source is Source.IMPORTED)
        if kept + len(history) > self.max_imported_calls:
            raise BadInput(
                f"{name} has {len(history):,} calls; with the {kept:,} of the imports kept, that passes the "
                f"dashboard's limit of {self.max_imported_calls:,} imported calls in memory",
                "delete an imported run on the History page, or raise DDBLAB_MAX_IMPORTED_CALLS",
            )
        summary = _judged_only_if_whole(meta.get("summary") or {}, len(history), name)
        # Then checked against its own calls: a copied line, a run not over, a verdict the calls contradict.
        summary = rejudged(unfinished(repeated_calls(summary, history, name), name), history)
        pattern = summary.get("pattern") or "unknown"
        variant = summary.get("variant") or "?"
        clients = history.snapshot()["client"]
        threads = summary.get("threads") or (int(clients.max()) + 1 if len(clients) else 1)
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


def in_page_words(e: LabError) -> LabError:
    """The engine's refusal with its CLI flags named as the page's controls (the Cluster setting, not --cluster)."""
    from dashboard.state.run_settings import in_dashboard_words

    kind = BadInput if isinstance(e, BadInput) else LabError
    return kind(in_dashboard_words(e.problem), in_dashboard_words(e.fix))


def client_processes(config: RunConfig) -> int:
    """Client processes a run starts: none when its threads stay in the dashboard's own process."""
    return config.processes if config.processes > 1 else 0


def _judged_only_if_whole(summary: dict[str, Any], calls: int, name: str) -> dict[str, Any]:
    """The file's summary, whose verdicts judge the calls of the whole run it counts: when the file holds other
    calls than that (cut at a line's end, or edited), the run is kept to look at, marked failed, with its verdicts
    set aside (`invariants_in_file`), never shown as the verdicts of the calls on screen."""
    counted = summary.get("calls")
    if not summary.get("invariants") or counted == calls:
        return summary
    held = f"{calls:,} of the {counted:,} calls its summary counts" if isinstance(counted, int) else f"{calls:,} calls"
    return {
        **summary,
        "state": "failed",
        "error": (
            f"{name} holds {held}: the file was cut short or edited, so the verdicts it carries do not judge "
            "these calls and are not shown"
        ),
        "invariants": [],
        "invariants_in_file": summary["invariants"],
    }
