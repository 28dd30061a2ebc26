"""A run's clients on the workers of a Dask cluster, every call streamed home into the run's one History.

Why Dask distributed and not Ray (measured on the 2-core machine, README "When one machine is not enough"):
a two-worker local cluster starts in about half the time and with about a fifth of the memory (no native
daemons: a scheduler and worker processes in plain Python), and one task per worker share needs nothing of
Ray's fast task round trip. The engine's own means do the plumbing that engine/clients/processes.py does by hand:

- one task per worker share (`Client.submit`, pinned to its worker, never retried: a share must not run twice);
- the shares' messages come home as worker events on one topic, the home's Dask client id, to which the home
  subscribed before submitting them: ready, call batches every SHIP_S (pickled Calls as bytes, so the scheduler
  never needs the lab), done with the number of batches sent. Each is pushed along the batched streams
  (worker -> scheduler -> home) with no request and no reply; at the end the home has the scheduler drop the
  copies it keeps of a topic's last events (engine/clients/cluster/forget.py);
- a `distributed.Event` go releases all shares together; Stop (Stop, the call budget, a lost peer) cancels the
  shares' tasks, which each share sees in its own worker's state;
- a worker's loss comes as the scheduler's "remove-worker" event on the worker's own topic, also pushed.

A worker that disappears (its process killed, its machine gone, or silent for SILENT_S) ends the run FAILED:
the calls it made since its last batch are unknown, so no verdict is given on what arrived.
"""

from __future__ import annotations

import functools
import pickle
import queue
import time
import uuid
from typing import Any

from engine.backends.backend import Backend, BackendKind, BackendSpec
from engine.clients.cluster import forget as cluster_forget
from engine.clients.cluster.check import (
    FIX_INSTALL,
    WorkerInfo,
    check_cluster,
    check_config,
    check_reach,
    connect,
    normalize_address,
    present,
    scheduler_lost,
    workers_of,
)
from engine.clients.cluster.share import SHIP_S, START_TIMEOUT_S, SharePlan, run_share
from engine.clients.contract import Run, split
from engine.errors import LabError, one_line, server_died

# The checks before a run live in engine/clients/cluster/check.py; the CLI, the dashboard and run_config ask them here.
__all__ = ["WorkerInfo", "check_cluster", "check_config", "check_reach", "normalize_address", "run_clients"]


def _reconnected() -> LabError:
    """The run's tasks were cancelled by the scheduler, not by the home: it does so to every task of a client it
    lost, when that client reconnects. The shares then end early and cleanly, so nothing else would tell."""
    return scheduler_lost(RuntimeError("the scheduler cancelled the run's tasks (a reconnect)"))


SILENT_S = 20.0  # a share that sent nothing for this long is lost (a partitioned machine, a frozen process)
WATCH_S = 0.5  # how often the home looks (in its own state) for failed, lost or silent shares


# -- the home: the process that holds the run ------------------------------------------------------------------


def run_clients(run: Run, client: Any, base_seed: int) -> None:
    """Run `run`'s clients on the workers of the cluster at `run.config.cluster` (each worker makes its own boto3
    client, so `client`, this process's, goes unused); fills run.history."""
    cfg = run.config
    assert run.table is not None and cfg.cluster is not None
    dask = connect(cfg.cluster)
    try:
        workers = workers_of(dask)
        check_reach(run.backend, workers)
        _Home(run, dask, workers, base_seed).drive()
    finally:
        dask.close(timeout=5)
    if run.error is not None:
        raise run.error


class _Share:
    """The home's view of one worker share."""

    def __init__(self, plan: SharePlan, worker: WorkerInfo) -> None:
        self.plan, self.worker = plan, worker
        self.ready = False
        self.done_batches: int | None = None  # the batch count the share said it sent, once done
        self.batches = 0
        self.failure: str | None = None
        self.ops_done = dict.fromkeys(plan.client_ids, 0)
        self.cpu_s = 0.0
        self.heard_ns = time.monotonic_ns()
        self.future: Any = None

    @property
    def finished(self) -> bool:
        return self.done_batches is not None


class _Home:
    def __init__(self, run: Run, client: Any, workers: list[WorkerInfo], base_seed: int) -> None:
        from distributed import Event

        cfg = run.config
        assert run.table is not None
        self.run, self.client = run, client
        self.run_id = uuid.uuid4().hex[:12]
        groups = split(cfg.threads, min(len(workers), cfg.threads))
        backend = _worker_backend(run.backend)
        budget = None if cfg.max_calls is None else max(1, -(-cfg.max_calls // len(groups)))
        self.shares = [
            _Share(
                SharePlan(
                    self.run_id,
                    k,
                    worker.id,
                    backend,
                    cfg,
                    run.options,
                    run.table.name,
                    run.table.spec,
                    ids,
                    base_seed,
                    worker.clock_offset_ns,
                    budget,
                    client.id,
                ),
                worker,
            )
            for k, (ids, worker) in enumerate(zip(groups, workers))
        ]
        plan = self.shares[0].plan
        # Filled by the client's event loop as the scheduler pushes events; read by the run's thread.
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.topics = [plan.topic, *(s.worker.address for s in self.shares)]
        self.removed: set[str] = set()  # workers the scheduler has removed since the run subscribed
        self.go = Event(plan.go, client=client)
        self.stop = Event(plan.stop, client=client)
        self.stopping = False

    def drive(self) -> None:
        try:
            # Subscribed before the shares are submitted, on the same ordered stream: no message can come first.
            self.client.subscribe_topic(self.topics[0], self._arrived)
            for address in self.topics[1:]:  # the scheduler's events about a worker go on its address's topic
                self.client.subscribe_topic(address, functools.partial(self._worker_event, address))
            gone = {s.worker.address for s in self.shares} - present(self.client)  # left before we listened
            self.removed.update(gone)
            for share in self.shares:
                share.future = self.client.submit(
                    run_share,
                    pickle.dumps(share.plan),  # bytes: Dask leaves them as they are (no walk into the dataclasses)
                    key=f"ddblab-share-{self.run_id}-{share.plan.share}",
                    workers=[share.worker.address],
                    allow_other_workers=False,
                    retries=0,
                    pure=False,
                )
            if self._start_together():
                self._watch()
        finally:
            self._stop_all()
            self._drain(deadline=time.monotonic() + 5.0)
            try:
                for topic in self.topics:
                    self.client.unsubscribe_topic(topic)
                for handle in (self.go, self.stop):
                    handle.clear()  # the scheduler forgets a cleared event
            except Exception:
                pass  # the scheduler is gone, and with it what it held for this run
            self._forget()

    def _forget(self) -> None:
        """Have the scheduler drop the run's messages it keeps (engine/clients/cluster/forget.py says why)."""
        try:
            cluster_forget.by_value()
            self.client.run_on_scheduler(cluster_forget.forget_topic, self.topics[0])
        except Exception:
            pass  # gone, or it refuses pickled functions: it forgets them by itself, an hour after the run

    def _arrived(self, event: Any) -> None:
        """A share's message, pushed by the scheduler (in the client's event loop: only hand it over)."""
        _, message = event
        if isinstance(message, (list, tuple)):  # the scheduler's own events on a client's topic are dicts
            self.inbox.put(tuple(message))  # msgpack made it a list on the way

    def _worker_event(self, address: str, event: Any) -> None:
        _, message = event
        if isinstance(message, dict) and message.get("action") == "remove-worker":
            self.inbox.put(("removed", address))

    def _stop_all(self) -> None:
        if not self.stopping:
            self.stopping = True
            try:
                self.stop.set()
                self.go.set()  # a share still waiting for go sees stop at once and ends without a call
                # A running share sees its task cancelled in its worker's state within SHIP_S.
                self.client.cancel([s.future for s in self.shares if s.future is not None])
            except Exception:
                pass  # the scheduler is gone: the shares see it and stop on their own

    def _start_together(self) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        next_look = 0.0
        while not all(s.ready for s in self.shares):
            self._receive(0.02)
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + WATCH_S
                self._check_failures(started=False)
            if self.run.stop_event.is_set():
                return False  # stopped while the shares were starting: no call is made
            if time.monotonic() > deadline:
                late = next(s for s in self.shares if not s.ready)
                raise LabError(
                    f"cluster worker {late.worker.address} did not start its clients within {START_TIMEOUT_S:.0f} s",
                    "check the workers' logs, or run with fewer threads",
                )
        run = self.run
        run.history.t0_ns = time.monotonic_ns()
        for share in self.shares:
            share.heard_ns = run.history.t0_ns  # silence counts from go: the wait for the slowest share is not it
        self.go.set()
        run.started_at = time.time()
        run.t_start_ns = run.history.t0_ns
        return True

    def _watch(self) -> None:
        run, cfg = self.run, self.run.config
        next_look = 0.0
        while not all(s.finished for s in self.shares):
            self._receive(SHIP_S)
            self._publish()
            if time.monotonic() >= next_look:
                next_look = time.monotonic() + WATCH_S
                self._check_failures(started=True)
            over_budget = cfg.max_calls is not None and len(run.history) >= cfg.max_calls
            if not run.backend.alive() and run.error is None:
                run.error = server_died()
            if run.stop_event.is_set() or over_budget or run.error is not None:
                self._stop_all()
        self._publish()
        run.t_end_ns = time.monotonic_ns()
        if not self.stopping:
            self._check_tasks_returned()

    def _check_tasks_returned(self) -> None:
        """The shares ended on their own (their ops or their time were up): each task must have returned. The
        scheduler cancels every task of a client it lost and got back (a reconnect); the shares then end early
        and cleanly, every batch home, and the run would look DONE, shorter than asked."""
        from distributed import wait

        futures = [s.future for s in self.shares if s.future is not None]
        try:
            wait(futures, timeout=10)  # a returned task's news follows its share's last message
        except Exception:
            pass  # judged by their states below
        if any(f.status == "cancelled" for f in futures):
            raise _reconnected()

    def _publish(self) -> None:
        done = [0] * self.run.config.threads
        for share in self.shares:
            for client, n in share.ops_done.items():
                done[client] = n
        self.run.publish_progress(done, [s.cpu_s for s in self.shares])

    def _receive(self, wait_s: float) -> bool:
        """Take every message that has arrived, waiting up to `wait_s` for the first; False when none came."""
        try:
            message = self.inbox.get(timeout=wait_s)
        except queue.Empty:
            return False
        while True:
            self._handle(message)
            try:
                message = self.inbox.get_nowait()
            except queue.Empty:
                return True

    def _handle(self, message: Any) -> None:
        kind, k, *rest = message
        if kind == "removed":
            self.removed.add(k)
            return
        share = self.shares[k]
        if share.finished:
            return  # given up on (lost, or silent too long): what it sends late is not taken into the run
        share.heard_ns = time.monotonic_ns()
        if kind == "ready":
            share.ready = True
        elif kind == "failed":
            share.failure = rest[0]
        elif kind == "calls":
            seq, payload = rest
            if seq != share.batches:  # each batch exactly once, in order: anything else is calls lost
                self._lose(share, f"batch {seq} arrived where {share.batches} was due")
                return
            share.batches += 1
            calls, ops_done, errors, cpu_s = pickle.loads(payload)
            self.run.history.extend(calls)
            share.ops_done.update(ops_done)
            share.cpu_s = cpu_s
            for error in errors:
                self.run.record_worker_error(error)
        elif kind == "done":
            share.done_batches = rest[0]
            if share.done_batches != share.batches:
                self._lose(share, f"it sent {share.done_batches} batches of calls and {share.batches} arrived")
            else:
                self.run.client_ended(*share.plan.client_ids)  # every call of its clients has arrived

    def _check_failures(self, *, started: bool) -> None:
        """A share that failed to start, raised, or whose worker left: end the run (FAILED once started). All
        read from what the scheduler pushed: the home asks it nothing."""
        if self.client.status != "running":  # the connection broke: what the scheduler pushed meanwhile is lost
            raise scheduler_lost(RuntimeError(f"its client is {self.client.status}"))
        now = time.monotonic_ns()
        for share in self.shares:
            if share.finished:
                continue
            if share.failure is not None:
                raise LabError(share.failure, "check the worker's log and its access to the backend, then run again")
            if share.future is not None and share.future.status == "error":
                why = one_line(share.future.exception())
                raise LabError(f"a client share failed on cluster worker {share.worker.address}: {why}", FIX_INSTALL)
            if share.future is not None and share.future.status == "cancelled" and not self.stopping:
                raise _reconnected()  # nobody here cancelled it (see _check_tasks_returned)
            gone = share.worker.address in self.removed
            silent = started and now - share.heard_ns > SILENT_S * 1e9
            if gone or silent:
                how = "was lost mid-run" if gone else f"sent nothing for {SILENT_S:.0f} s"
                if not started:
                    raise LabError(
                        f"cluster worker {share.worker.address} left before its clients started",
                        "check the cluster's workers and run again",
                    )
                self._lose(share, how)

    def _lose(self, share: _Share, how: str) -> None:
        run = self.run
        for client in share.plan.client_ids:
            run.record_worker_error(
                {"client": client, "kind": "lost", "message": f"its cluster worker {how}", "trace": None}
            )
        share.done_batches = share.batches  # nothing more is awaited from it
        if run.error is None:
            run.error = LabError(
                f"cluster worker {share.worker.address} {how} (clients {_ids(share.plan.client_ids)}): the calls it "
                "made since its last batch are unknown, so no verdict is given",
                "the calls that arrived are kept; check the worker (its log, its memory) and start a new run",
            )
        self._stop_all()

    def _drain(self, deadline: float) -> None:
        """After stop: take the shares' last batches until each is done, or the deadline passes."""
        while not all(s.finished for s in self.shares) and time.monotonic() < deadline:
            try:
                self._receive(0.02)
                self._check_failures(started=True)
            except LabError as e:
                if self.run.error is None:
                    self.run.error = e
                return
        for share in self.shares:
            if not share.finished and self.run.t_start_ns is not None:
                self._lose(share, "did not finish within 5 s of the stop")


def _worker_backend(backend: Backend) -> BackendSpec:
    # Workers call the embedded server by its URL; they never start one of their own.
    if backend.spec.kind is BackendKind.EMBEDDED:
        return BackendSpec(BackendKind.ENDPOINT, backend.endpoint_url, backend.spec.region)
    return backend.spec


def _ids(ids: tuple[int, ...]) -> str:
    return ", ".join(map(str, ids[:8])) + (", …" if len(ids) > 8 else "")
