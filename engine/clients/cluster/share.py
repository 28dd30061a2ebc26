"""A worker's share of a cluster run (engine/clients/cluster/home.py is the home): it makes its clients with their own boto3
client, waits for go, runs them, and ships every call home in batches every SHIP_S, until the clients end, Stop,
or the home goes away. Dask pickles `run_share` by name, so a worker needs the same lab installed.

Every message home is a worker event (`Worker.log_event` on the run's topic): it rides the worker's batched stream
to the scheduler, which pushes it down the home's own stream (the home subscribed to the topic before it
submitted the shares), with no request and no reply on the way. Stop comes the same way round: the home cancels
the share's task, and the share sees its task cancelled in its own worker's state, asking nobody."""

from __future__ import annotations

import pickle
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from engine.backends.backend import BackendSpec
from engine.backends.tables import TableSpec
from engine.clients.contract import RunConfig
from engine.errors import one_line
from engine.options import RunOptions

# Each batch is one message through three Dask event loops (the worker's, the scheduler's, the home client's):
# about 3 ms of CPU end to end, whatever its size (per-thread CPU, 2026-12-02, two workers at ~250 calls/s: the
# loops, the shares' batching threads and the home's run thread took 0.10 of a core with batches every 0.1 s, 0.06
# every 0.25 s; a pool's pipes 0.035). The live view lags by at most SHIP_S (the dashboard redraws every second),
# and a share sees Stop within it.
SHIP_S = 0.25
START_TIMEOUT_S = 120.0  # a share builds its boto3 client and threads: seconds on a loaded machine


@dataclass(frozen=True, slots=True)
class SharePlan:
    """Everything one worker share needs: where to call, what to run, which clients are its own."""

    run_id: str
    share: int
    worker_id: str  # the worker process it was planned for: a restarted worker at the same address is not it
    backend: BackendSpec
    config: RunConfig  # the run's RunConfig (engine.run.runner), read through the placements' protocol
    options: RunOptions
    table_name: str
    table_spec: TableSpec
    client_ids: tuple[int, ...]
    base_seed: int
    clock_offset_ns: int  # the worker's monotonic clock minus the home's; 0 on this machine (one clock)
    max_calls: int | None
    topic: str  # the worker events that carry its messages home: the home's Dask client id (see engine/clients/cluster/home.py)

    @property
    def go(self) -> str:
        return f"ddblab-{self.run_id}-go"

    @property
    def stop(self) -> str:
        return f"ddblab-{self.run_id}-stop"


def run_share(plan_bytes: bytes) -> int:
    """A Dask task: make this share's clients, wait for go, run, ship every call home. Returns batches sent."""
    from distributed import get_client, get_worker, secede

    plan: SharePlan = pickle.loads(plan_bytes)
    worker = get_worker()
    if worker.id != plan.worker_id:
        return 0  # rescheduled onto another worker after its own was lost: the home has already given up on it
    key = worker.get_current_task()
    get_client()  # the worker's own Dask client (the go and stop Events use it), made now so that _quiet finds it
    secede()  # leave the worker's task slot: a share runs for the whole run, and other runs may share the worker
    _quiet(worker, True)
    try:
        return _run_share(plan, worker, key)
    finally:
        _quiet(worker, False)


# A worker's event loop wakes about 160 times a second by default: its sampling profiler every 10 ms (it walks
# the stacks of the running threads), its loop-health tick every 20 ms (and its cycle every second), its memory
# monitor every 100 ms, its system monitor (psutil's CPU, memory, network and disk figures for Dask's dashboard)
# every 500 ms, its counters' shift every 5 s. Each wake-up
# takes the GIL from the share's client threads; all but the memory monitor only feed Dask's diagnostics, so they
# are paused while the worker runs a share. The memory monitor (it protects the worker) goes on. The heartbeat keeps
# the worker in the cluster, but Dask sends it every 0.5 s (up to ten workers; not a setting), a request and a
# reply through the scheduler each time: while a share runs it is sent every HEARTBEAT_S instead, well inside the
# shortest time the scheduler waits before it drops a silent worker (its worker-ttl, at least ten of Dask's
# intervals: 5 s). The worker's own Dask client (the go and stop Events need one) asks the scheduler for its whole
# description every 2 s (a request, and a reply listing every worker with its metrics), which nothing of the lab
# reads: paused too (QUIET_CLIENT_CALLBACKS). A cluster the lab starts itself has the diagnostics off or slowed from
# the start (engine/clients/cluster/local.py).
QUIET_CALLBACKS: tuple[str, ...] = ("profile", "profile-cycle", "tick", "ticks", "monitor", "shift_counters")
QUIET_CLIENT_CALLBACKS: tuple[str, ...] = ("scheduler-info",)
HEARTBEAT_S = 2.0
_quiet_lock = threading.Lock()
_quiet_shares = 0  # shares running in this worker process


def _quiet(worker: Any, share_starts: bool) -> None:
    """Pause the worker's diagnostics when its first share starts; resume them when its last share ends."""
    global _quiet_shares
    with _quiet_lock:
        _quiet_shares += 1 if share_starts else -1
        if _quiet_shares != (1 if share_starts else 0):
            return
        for name in QUIET_CALLBACKS:
            callback = worker.periodic_callbacks.get(name)
            if callback is not None:  # PeriodicCallbacks belong to the event loop: stopped and started on it
                worker.loop.add_callback(callback.stop if share_starts else callback.start)
        client: Any = getattr(worker, "_client", None)  # Dask's private attribute: no public call reads it back
        callbacks = getattr(client, "_periodic_callbacks", {})
        for name in QUIET_CLIENT_CALLBACKS:
            callback = callbacks.get(name)
            if callback is not None:  # on the client's loop (the worker's, for the client the worker made)
                client.loop.add_callback(callback.stop if share_starts else callback.start)
        worker.loop.add_callback(_slow_heartbeat, worker, share_starts)


def _slow_heartbeat(worker: Any, share_starts: bool) -> None:
    """On the worker's event loop: Dask's heartbeat swapped for one every HEARTBEAT_S, and back. (Dask's own resets
    its period from each reply, so it is stopped rather than slowed.)"""
    from tornado.ioloop import PeriodicCallback

    dasks = worker.periodic_callbacks.get("heartbeat")
    ours = worker.periodic_callbacks.pop("ddblab-heartbeat", None)
    if ours is not None:
        ours.stop()
    if dasks is None:
        return
    if share_starts:
        dasks.stop()
        # Never faster than Dask's own: on a big cluster (over 200 workers) Dask's interval is the longer one.
        ours = PeriodicCallback(worker.heartbeat, max(HEARTBEAT_S * 1000, dasks.callback_time))
        worker.periodic_callbacks["ddblab-heartbeat"] = ours  # the worker stops it too, should it close
        ours.start()
    elif worker.status.name not in ("closing", "closed", "failed"):  # a retiring worker still needs its heartbeat
        dasks.start()


def _run_share(plan: SharePlan, worker: Any, key: Any) -> int:
    from distributed import Event

    from engine.clients.work import ClientThreads, make_share

    def send(*message: Any) -> None:
        worker.log_event(plan.topic, (*message[:1], plan.share, *message[1:]))

    go, stop_event = Event(plan.go), Event(plan.stop)
    cfg = plan.config
    stop = threading.Event()
    try:
        share = make_share(plan, plan.max_calls, stop)
    except Exception as e:
        send("failed", f"a client share could not start on {worker.address}: {one_line(e)}")
        return 0
    outbox, contexts = share.outbox, share.contexts
    clients = ClientThreads(share.pattern, contexts)
    send("ready")
    # One wait on the scheduler for go, and one question after it: the only requests a share makes in a run.
    if not go.wait(START_TIMEOUT_S) or stop_event.is_set():
        stop.set()  # the home gave up, or stopped before go: the clients see it and end at once
    clients.release(time.monotonic() + cfg.duration_s if cfg.duration_s else None)
    sent = 0

    def ship() -> None:
        nonlocal sent
        sent_errors = clients.take_errors()
        calls = outbox.take()
        if plan.clock_offset_ns:  # onto the home's clock, so one run's intervals compare across machines
            calls = [
                replace(
                    c, invoke_ns=c.invoke_ns - plan.clock_offset_ns, complete_ns=c.complete_ns - plan.clock_offset_ns
                )
                for c in calls
            ]
        ops_done = {ctx.client_id: ctx.ops_done for ctx in contexts}
        # Pickled bytes: the scheduler passes them on without the lab (a worker event must be msgpack-able).
        payload = pickle.dumps((calls, ops_done, sent_errors, sum(ctx.cpu_s for ctx in contexts)))
        send("calls", sent, payload)
        sent += 1

    while clients.running():
        clients.wait(SHIP_S)  # not stop.wait: once stopped, the clients' last calls still come in this rhythm
        if not stop.is_set() and _told_to_stop(worker, key):
            stop.set()
        ship()
    ship()
    share.close()
    send("done", sent)
    return sent


def _told_to_stop(worker: Any, key: Any) -> bool:
    """The home cancelled this task (Stop, the call budget, a lost peer), its process ended (the scheduler then
    releases its tasks), or the scheduler is gone (nobody can take our calls any more). Read from this worker's
    own state: no message."""
    try:
        ts = worker.state.tasks.get(key)
        comm = worker.batched_stream.comm
        return ts is None or ts.state in ("cancelled", "released", "forgotten") or comm is None or comm.closed()
    except Exception:
        return False
