"""N client threads against one table: released together by a barrier, stopped by count, time or a signal.

The runner never imports the UI. A Run is started from any thread and polled from any other: `progress()`
reads the History's live counters, so the dashboard can draw while the workers write.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from typing import Any

from botocore.exceptions import ClientError

from engine.backends.backend import Backend
from engine.backends.faults import FaultInjector, FaultPlan
from engine.backends.tables import Table, drop_table, open_table
from engine.clients.placement import placement_for
from engine.errors import ClientsLost, LabError, server_died
from engine.patterns import Invariant
from engine.record.calls import CallError
from engine.record.codes import conflicts
from engine.record.history import History
from engine.run.config import RunConfig, ValidRun
from engine.run.state import RunState
from engine.server.host.process import table_stats


class Run:
    """One run of one pattern variant. Thread-safe to poll; `start()` returns at once."""

    def __init__(self, config: RunConfig | ValidRun, backend: Backend) -> None:
        valid = config if isinstance(config, ValidRun) else config.validated()  # a ValidRun is never checked again
        self.pattern_cls, self.config, self.options = valid.pattern, valid.config, valid.options
        self.pattern = self.pattern_cls()
        self.backend = backend
        self.history = History()
        self.passed: list[tuple[RunState, float]] = []  # every state entered, with when (monotonic s)
        self.state = RunState.PENDING
        self.error: LabError | None = None
        self.worker_errors: list[dict[str, Any]] = []  # crashes and unexpected errors, per client
        self._ended: set[int] = set()  # clients that reported their end (returned, crashed or errored)
        self.invariants: list[Invariant] = []
        self.table: Table | None = None
        self.started_at: float | None = None  # wall clock, for display
        self.t_start_ns: int | None = None  # monotonic, when the barrier released the clients
        self.t_end_ns: int | None = None
        self.shared: dict[str, Any] = {}
        self.server_stats: dict[str, int] = {}  # what the aws-like model did to the run's table (SIMULATED)
        self.stop_reason: str | None = None  # why a STOPPED run ended before its planned end
        self.stop_event = threading.Event()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def state(self) -> RunState:
        return self._state

    @state.setter
    def state(self, state: RunState) -> None:
        """Each state is kept as it is entered (`passed`): a page polling every 100 ms never saw a verification
        of 20 ms, so it shows the states the run went through."""
        self._state = state
        self.passed.append((state, time.monotonic()))

    # -- control -------------------------------------------------------------------------------------------

    def start(self) -> Run:
        self._thread = threading.Thread(target=self._run, name=f"run-{self.config.pattern}", daemon=True)
        try:
            self._thread.start()
        except RuntimeError as e:
            error = LabError(f"could not start a thread for the run ({e})", "stop some runs, or restart the dashboard")
            self.fail(error)
            raise error from None
        return self

    def fail(self, error: LabError) -> None:
        """End a run that never started as FAILED with `error`, so whoever holds it (the dashboard's thread caps
        and call budgets) sees it finished."""
        self.error = error
        self.state = RunState.FAILED
        self.stop_event.set()
        self._done.set()

    def stop(self, reason: str = "stopped by the user") -> None:
        """Ask every client to finish its current call and stop; the run then verifies and ends STOPPED."""
        if not self.stop_event.is_set() and not self.finished:
            self.stop_reason = reason
        self.stop_event.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def run_to_end(self) -> Run:
        self._run()
        return self

    @property
    def finished(self) -> bool:
        return self._done.is_set()

    @property
    def stop_requested(self) -> bool:
        """Whether stop() was called (or the run is ending): its clients are finishing their current calls."""
        return self.stop_event.is_set()

    # -- reading -------------------------------------------------------------------------------------------

    def invariants_by_name(self) -> dict[str, Invariant]:
        return {inv.name: inv for inv in self.invariants}

    def elapsed_s(self) -> float:
        if self.t_start_ns is None:
            return 0.0
        end = self.t_end_ns or time.monotonic_ns()
        return (end - self.t_start_ns) / 1e9

    def client_cpu(self) -> list[float]:
        """Cores the clients used while they ran: one figure per client process, or, without --processes, the
        CPU of the run's client threads (not of the rest of their process: a dashboard's page, other runs).

        Python runs one thread at a time per process (the GIL), so near 1.0 the clients are CPU-bound (botocore's
        work, mostly): more threads add few calls; more processes help where the server and the machine have
        room. It can pass 1.0 a little: system calls and TLS run outside the GIL."""
        elapsed = self.elapsed_s()
        cpu = self.shared.get("_client_cpu_s") or []
        return [round(c / elapsed, 2) for c in cpu] if elapsed > 0 else [0.0 for _ in cpu]

    def progress(self) -> dict[str, Any]:
        counts = self.history.counts()
        elapsed = self.elapsed_s()
        planned = (self.config.ops_per_client or 0) * self.config.threads
        fraction = None
        if self.config.duration_s:
            fraction = min(1.0, elapsed / self.config.duration_s)
        elif planned and self.shared.get("_ops_done") is not None:
            fraction = min(1.0, sum(self.shared["_ops_done"]) / planned)
        return {
            **counts,
            "state": self.state.value,
            "elapsed_s": elapsed,
            "client_cpu": self.client_cpu(),
            "calls_per_s": counts["calls"] / elapsed if elapsed > 0 else 0.0,
            "fraction": fraction,
            "conflicts": conflicts(counts["errors"], counts["refusals"], self.pattern_cls.business_refusals),
        }

    # -- the run -------------------------------------------------------------------------------------------

    def _run(self) -> None:
        client = None
        judge = None
        injector = None
        judged: Table | None = None  # the run's table as the judge reads it: no faults, patient with throttling
        try:
            self.state = RunState.PREPARING
            cfg = self.config
            spec = self.backend.with_profile(self.pattern.table_spec(self.options), cfg.profile)
            judge = self.backend.judge_client()
            client = self.backend.client(threads=cfg.threads, retry=cfg.retry)
            injector = FaultInjector(client, FaultPlan(cfg.lost_response_share or 0.0, cfg.latency_ms))
            judged = open_table(
                judge,
                cfg.pattern,
                spec,
                name=cfg.table_name,
                allow_foreign=cfg.allow_foreign_table,
            )
            self.table = dataclasses.replace(judged, client=client)
            self.pattern.setup(judged, self.options)
            self.state = RunState.RUNNING
            self._run_clients(client)
            self.state = RunState.VERIFYING
            if not self.backend.alive():
                raise server_died()
            incomplete = self.incomplete()
            if incomplete is not None:
                raise incomplete  # a verdict on part of the calls would blame the pattern for the lost client
            self.invariants = _judged_on_calls(self.pattern.verify(judged, self.history, self.options), self.history)
            if cfg.profile.simulated and self.backend.endpoint_url:
                self.server_stats = table_stats(self.backend.endpoint_url, judged.name)
            if not self.stop_event.is_set() and cfg.max_calls is not None and len(self.history) >= cfg.max_calls:
                self.stop_reason = f"its call budget of {cfg.max_calls:,} calls ran out"  # the clients checked it
            self.state = RunState.STOPPED if self.stop_reason or self.stop_event.is_set() else RunState.DONE
        except LabError as e:
            self.error = e
            self.state = RunState.FAILED
        except Exception as e:
            self.error = _as_lab_error(e, self.backend)
            self.state = RunState.FAILED
        finally:
            self.stop_event.set()  # whatever ended the run, no worker keeps going
            if self.t_start_ns is not None and self.t_end_ns is None:
                self.t_end_ns = time.monotonic_ns()
            if judged is not None and not self.config.keep_table and self.backend.alive():
                try:
                    drop_table(judged)
                except Exception:
                    pass
            if injector is not None:
                injector.close()
            for c in (client, judge):
                if c is not None:
                    c.close()  # its pooled connections would otherwise stay open on both sides
            self._done.set()

    def _run_clients(self, client: Any) -> None:
        cfg = self.config
        base_seed = cfg.seed if cfg.seed is not None else random.randrange(2**31)
        placement_for(cfg)(self, client, base_seed)

    def publish_progress(self, ops_done: list[int], cpu_s: list[float]) -> None:
        """What the clients have done so far, for progress() and client_cpu(): ops per client, CPU seconds per
        client process (one entry for this process's threads)."""
        self.shared["_ops_done"] = ops_done
        self.shared["_client_cpu_s"] = cpu_s

    def record_worker_error(self, error: dict[str, Any]) -> None:
        """A client crashed or met an unexpected error (from this process, or shipped from a client process)."""
        with self._lock:
            self.worker_errors.append({**error, "elapsed_s": self.elapsed_s()})

    def client_ended(self, *client_ids: int) -> None:
        """These clients' work is over and every call they made is in the History (whatever ran them)."""
        with self._lock:
            self._ended.update(client_ids)

    def incomplete(self) -> LabError | None:
        """Why this run's clients did not all finish, or None when they did (or were never released).

        Any way a client is lost counts: a client process killed (its unshipped calls are gone), a thread that
        ended without reporting, a client stopped by an unexpected error half-way through an operation. The
        History then lacks what the clients would have done, so the run is FAILED and not judged: invariants
        on part of the calls can blame a safe pattern (an operation left half-done looks like a broken one)."""
        if self.t_start_ns is None:
            return None  # stopped before the clients were released: no call was made, nothing is missing
        with self._lock:
            errors = list(self.worker_errors)
            unended = sorted(set(range(self.config.threads)) - self._ended)
        kept = "the calls recorded are kept (export them); no invariant is judged on an incomplete run"
        lost = [e for e in errors if e["kind"] == "lost"]
        if lost:
            more = f" (and {len(lost) - 1} more client processes)" if len(lost) > 1 else ""
            return ClientsLost(
                f"{lost[0]['message']}{more}", f"{kept}; run again, with fewer threads per process if memory ran short"
            )
        if unended:
            return ClientsLost(
                f"client thread(s) {_ids(unended)} ended without finishing their work",
                f"{kept}; run again",
            )
        stopped = [e for e in errors if e["kind"] == "error"]
        if not stopped:
            return None
        for e in stopped:
            if e.get("code"):
                refused = self.backend.refusal(ClientError({"Error": {"Code": e["code"]}}, e.get("op") or "call"))
                if refused is not None:
                    return refused  # expired or rejected credentials, a denied permission: its own fix
        first = stopped[0]
        more = f" (and {len(stopped) - 1} more clients)" if len(stopped) > 1 else ""
        if first.get("fix"):  # a LabError: it knows its cause, so not "unexpected", and its fix is the one to give
            return ClientsLost(
                f"client {first['client']} stopped half-way: {first['message']}{more}", f"{kept}; {first['fix']}"
            )
        return ClientsLost(
            f"client {first['client']} stopped half-way on an unexpected error: {first['message']}{more}",
            f"{kept}; check the backend and run again",
        )


NO_CALLS = "no client made a call before the run ended (its time limit or a stop came first), so nothing was tested"


def _judged_on_calls(invariants: list[Invariant], history: History) -> list[Invariant]:
    """A run that made no call passes every invariant by default: such a PASS is CANNOT JUDGE. A FAIL stays one
    (the table broke it without any client's help)."""
    if len(history):
        return invariants
    return [dataclasses.replace(inv, holds=None, explanation=NO_CALLS) if inv.holds else inv for inv in invariants]


def _ids(ids: list[int], shown: int = 8) -> str:
    text = ", ".join(str(i) for i in ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def _as_lab_error(e: Exception, backend: Backend) -> LabError:
    from botocore.exceptions import BotoCoreError, ClientError

    if not backend.alive():
        return server_died()
    if isinstance(e, CallError):
        return backend.refusal(ClientError(dict(e.response), e.call.op)) or LabError(
            f"{e.call.op} failed during setup or verification: {e.code}",
            "check the backend; the calls recorded so far are kept",
        )
    if isinstance(e, ClientError):
        refused = backend.refusal(e)  # e.g. a session token that expired while the run went on
        if refused is not None:
            return refused
    if isinstance(e, (BotoCoreError, ClientError)):
        return LabError(f"DynamoDB call failed: {e}", "check the backend and try again")
    return LabError(f"internal error: {type(e).__name__}: {e}", "please report it with the run's history export")


def run_pattern(config: RunConfig | ValidRun, backend: Backend) -> Run:
    """Run to the end in this thread (CLI, tests, benchmarks)."""
    return Run(config, backend).run_to_end()
