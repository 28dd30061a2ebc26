"""Client processes: one run's client threads spread over several processes, every call shipped home.

One Python process makes at most about 500-700 calls a second here: botocore spends 1.3-1.8 ms of CPU on
each call, under one GIL. Against AWS, where a call takes ~10 ms, 64 threads need ~6,000 calls a second to
keep every thread's call in flight, so the run's threads are split round-robin over N processes, each with
its own GIL, boto3 client and connections. The run's History stays in the parent: each child buffers its
calls and ships them every SHIP_S, so live charts, verify and export see one run.

What stays the same: monotonic timestamps (one clock for the whole machine), client ids, seeds per client,
faults (client-side, per process), the stop signal and the time limit. What differs: `ctx.shared` is per
process, so a pattern whose clients meet in memory (a mailbox, a shared counter) says
`process_pool = False` and runs in one process. The run's call budget is split between the children, each
stopping at its share, and the parent stops them all once the calls that arrived reach it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from engine.backends.backend import Backend, BackendKind, BackendSpec
from engine.backends.tables import TableSpec
from engine.clients.contract import Run, RunConfig, split
from engine.clients.work import ClientThreads, Outbox, make_share
from engine.errors import LabError, server_died
from engine.options import RunOptions

ROOT = str(
    Path(__file__).resolve().parents[2]
)  # so `python -m engine.clients.processes` finds the engine uninstalled too
SHIP_S = 0.05  # how often a child sends its calls home: the live view's lag, and the call budget's overshoot
START_TIMEOUT_S = 120.0  # spawning imports boto3 and pandas afresh: seconds on a loaded 2-core machine


@dataclass(frozen=True, slots=True)
class ChildPlan:
    """Everything one child needs, picklable: where to call, what to run, which clients are its own."""

    backend: BackendSpec
    config: RunConfig
    options: RunOptions
    table_name: str
    table_spec: TableSpec
    client_ids: tuple[int, ...]
    base_seed: int


def run_clients(run: Run, client: Any, base_seed: int) -> None:
    """Run `run`'s clients in `run.config.processes` child processes (each makes its own boto3 client, so `client`,
    this process's, goes unused); fills run.history as calls arrive."""
    cfg = run.config
    assert run.table is not None
    backend = _child_backend(run.backend)
    homes = []
    try:
        for ids in split(cfg.threads, cfg.processes):
            plan = ChildPlan(backend, cfg, run.options, run.table.name, run.table.spec, ids, base_seed)
            homes.append(_Home(run, plan))
        if _start_together(run, homes):
            _watch(run, homes)
    finally:
        for home in homes:  # first tell every child, then wait for them all: stopping takes one round
            home.stop()
            home.hang_up()
        for home in homes:
            home.close()
    if run.error is not None:
        raise run.error


def _child_backend(backend: Backend) -> BackendSpec:
    # Children call the embedded server by its URL; they never start one of their own.
    if backend.spec.kind is BackendKind.EMBEDDED:
        return BackendSpec(BackendKind.ENDPOINT, backend.endpoint_url, backend.spec.region)
    return backend.spec


class _Home:
    """The parent's end of one child process: a pipe each way, and a thread receiving its calls.

    The child is a fresh `python -m engine.clients.processes`, not a multiprocessing child: spawn would import the parent's
    main module again (a dashboard, a test runner), and fork would copy this process's threads mid-call.
    """

    def __init__(self, run: Run, plan: ChildPlan) -> None:
        self.run, self.ids = run, plan.client_ids
        self.ready = threading.Event()
        self.failure: str | None = None  # why the child could not start its clients
        self.ops_done = dict.fromkeys(self.ids, 0)
        self.cpu_s = 0.0  # the child's CPU since its clients were released, as last shipped
        self.finished = False
        self.stopping = False
        self.went = False  # told "go": from then on its death loses its clients' unshipped calls
        self.lost = False  # it died after "go", before its clients had finished
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        self.down = Connection(parent_writes, readable=False)
        self.up = Connection(parent_reads, writable=False)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH"))))}
        try:
            # Its own session: a Ctrl-C in the terminal reaches the parent alone, which stops the run in order
            # (the children finish their call and ship it) instead of killing the children mid-call.
            self.process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-m", "engine.clients.processes", str(child_reads), str(child_writes)],
                pass_fds=(child_reads, child_writes),
                env=env,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            self.process = None
            self.down.close()
            self.up.close()
            raise LabError(f"could not start a client process: {e}", "run with --processes 1") from None
        finally:
            os.close(child_reads)
            os.close(child_writes)  # the child holds the only writing end: its death is our EOF
        self.thread = threading.Thread(target=self._receive, daemon=True, name=f"ddblab-home-{self.ids[0]}")
        self.thread.start()
        try:
            self.down.send(plan)
        except OSError:
            pass  # it died at once; _receive sees the end of its pipe and says so

    def tell(self, message: str) -> None:
        try:
            self.down.send((message,))
        except OSError:
            pass  # the child is gone; _receive has noted it

    def stop(self) -> None:
        if not self.stopping:
            self.stopping = True
            self.tell("stop")

    def _receive(self) -> None:
        try:
            while True:
                kind, *payload = self.up.recv()
                if kind == "ready":
                    self.ready.set()
                elif kind == "failed":
                    self.failure = payload[0]
                elif kind == "calls":
                    calls, ops_done, errors, cpu_s = payload
                    self.run.history.extend(calls)
                    self.ops_done.update(ops_done)
                    self.cpu_s = cpu_s
                    for error in errors:
                        self.run.record_worker_error(error)
                elif kind == "done":
                    self.finished = True
                    self.run.client_ended(*self.ids)  # every call of its clients has been shipped
                    return
        except (EOFError, OSError):
            if not self.finished and self.failure is None:
                self.failure = f"a client process (pid {self.pid}) ended before its clients had started"
                if self.went:
                    self.lost = True
                    self.failure = (
                        f"client process {self.pid} (clients {', '.join(map(str, self.ids[:8]))}"
                        f"{' …' if len(self.ids) > 8 else ''}) died mid-run ({self._how_it_ended()}): "
                        "the calls it had not yet shipped are lost"
                    )
                    self.run.record_worker_error(
                        {"client": self.ids[0], "clients": list(self.ids), "kind": "lost", "message": self.failure}
                    )
        finally:
            self.ready.set()  # never leave the parent waiting for a child that is gone

    def _how_it_ended(self) -> str:
        if self.process is None:
            return "it never started"
        try:
            code = self.process.wait(2.0)
        except subprocess.TimeoutExpired:
            return "it closed its pipe and is still running"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"killed by {name}" + (": killed by hand, or out of memory" if name == "SIGKILL" else "")
        return f"exit status {code}"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def hang_up(self) -> None:
        self.down.close()  # EOF: a child still waiting for "go" gives up, one that runs stops

    def close(self) -> None:
        self.hang_up()
        self.thread.join(10.0)
        if self.process is not None:
            try:
                self.process.wait(5.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5.0)
        self.up.close()


def _start_together(run: Run, homes: list[_Home]) -> bool:
    """Wait until every child has its threads parked, then release them all; False when stopped first."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not all(home.ready.is_set() for home in homes):
        if run.stop_event.is_set():
            return False  # stopped while the children were starting: no call is made
        if time.monotonic() > deadline:
            raise home_error(next(home for home in homes if not home.ready.is_set()))
        time.sleep(0.02)
    failed = next((home for home in homes if home.failure is not None or home.finished), None)
    if failed is not None:
        raise home_error(failed)
    run.history.t0_ns = time.monotonic_ns()
    for home in homes:  # all clients start within a pipe write of each other
        home.went = True
        home.tell("go")
    run.started_at = time.time()
    run.t_start_ns = run.history.t0_ns
    return True


def home_error(home: _Home) -> LabError:
    why = home.failure or f"client process {home.pid} did not start within {START_TIMEOUT_S:.0f} s"
    return LabError(why, "run with --processes 1, or fewer processes")


def _watch(run: Run, homes: list[_Home]) -> None:
    cfg = run.config
    while any(home.thread.is_alive() for home in homes):
        _wait(homes, 0.05)  # one pass for all children: stop and the call budget react within it
        run.publish_progress(_ops_done(homes, cfg.threads), [home.cpu_s for home in homes])
        stop = run.stop_event.is_set() or (cfg.max_calls is not None and len(run.history) >= cfg.max_calls)
        if not run.backend.alive() and run.error is None:
            run.error = server_died()
            stop = True
        if any(home.lost for home in homes):
            stop = True  # the run cannot be judged any more (Run.incomplete): end it now, keep what arrived
        if stop:
            for home in homes:
                home.stop()
    run.publish_progress(_ops_done(homes, cfg.threads), [home.cpu_s for home in homes])
    run.t_end_ns = time.monotonic_ns()


def _wait(homes: list[_Home], timeout: float) -> None:
    """Up to `timeout` seconds, less once every child has sent all its calls: the run's end is noted when it comes
    (a child's exit after it, and the wait, would count in the run's calls/s)."""
    deadline = time.monotonic() + timeout
    for home in homes:
        home.thread.join(max(0.0, deadline - time.monotonic()))


def _ops_done(homes: list[_Home], threads: int) -> list[int]:
    done = [0] * threads
    for home in homes:
        for client, n in home.ops_done.items():
            done[client] = n
    return done


# -- the child -----------------------------------------------------------------------------------------------


def child_main(down: Connection, up: Connection) -> None:
    """A child process: make its clients, wait for "go", run, ship every call home."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us in order, whatever the terminal says
    try:
        plan: ChildPlan = down.recv()
    except (EOFError, OSError):
        return  # the parent gave up before sending the plan
    go, stop = threading.Event(), threading.Event()

    def listen() -> None:
        try:
            while True:
                (message,) = down.recv()
                if message != "go":
                    stop.set()  # a stop before "go" releases the clients too: they see it and end at once
                go.set()
        except (EOFError, OSError):
            stop.set()  # the parent is gone, or done with us
            go.set()

    threading.Thread(target=listen, daemon=True).start()
    cfg = plan.config
    try:
        share = make_share(plan, _share(cfg.max_calls, cfg.processes), stop)
    except Exception as e:
        up.send(("failed", f"a client process could not start: {e}"))
        up.close()
        return
    outbox = share.outbox
    clients = ClientThreads(share.pattern, share.contexts)
    up.send(("ready",))
    go.wait()
    cpu_at_go = time.process_time()
    clients.release(time.monotonic() + cfg.duration_s if cfg.duration_s else None)
    while clients.running():
        clients.wait(SHIP_S)
        _ship(up, outbox, clients, time.process_time() - cpu_at_go)
    _ship(up, outbox, clients, time.process_time() - cpu_at_go)
    share.close()
    up.send(("done",))
    up.close()


def _share(max_calls: int | None, processes: int) -> int | None:
    """Each child's part of the run's call budget, so together they stop near it even between shipments."""
    return None if max_calls is None else max(1, -(-max_calls // processes))


def _ship(conn: Connection, outbox: Outbox, clients: ClientThreads, cpu_s: float) -> None:
    ops_done = {ctx.client_id: ctx.ops_done for ctx in clients.contexts}
    conn.send(("calls", outbox.take(), ops_done, clients.take_errors(), cpu_s))


if __name__ == "__main__":
    child_main(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
