"""One client's work, run to its end: how it failed (a crash, a call error, a bug), or None; a client process's or
cluster worker's share of the clients (made by make_share, run by ClientThreads); and the outbox that keeps their
calls until they are sent home. Shared by the runner's threads, the
pool's client processes and the cluster's workers, so that none needs another."""

from __future__ import annotations

import random
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

from engine.backends.backend import Backend, BackendSpec
from engine.backends.faults import FaultInjector, FaultPlan
from engine.backends.tables import Table, TableSpec
from engine.errors import LabError
from engine.options import RunOptions
from engine.patterns.base import Pattern
from engine.record.calls import CallError, ClientContext, ClientCrash
from engine.record.history import Call


def client_failure(pattern: Pattern, ctx: ClientContext) -> dict[str, Any] | None:
    """Run one client to its end; how it failed (kind, message, trace), or None when it did not."""
    ctx.count_cpu()  # from here: the whole client, up to its last op, crash or return included
    try:
        pattern.client(ctx)
    except ClientCrash as e:
        return {"kind": "crash", "message": str(e), "trace": None}
    except CallError as e:
        return {"kind": "error", "message": f"{e.call.op} {e.code}", "trace": None, "code": e.code, "op": e.call.op}
    except LabError as e:  # the lab's own problem and fix (an item its setup wrote, unseen): the run says its fix
        return {"kind": "error", "message": e.problem, "fix": e.fix, "trace": None}
    except Exception as e:
        return {"kind": "error", "message": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=4)}
    finally:
        ctx.count_cpu()
    return None


class Outbox:
    """A client process's or cluster share's stand-in for the run's History: counts and keeps calls until they are
    sent home."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._count = 0

    def append(self, call: Call) -> None:
        with self._lock:
            self._calls.append(call)
            self._count += 1

    def __len__(self) -> int:
        return self._count

    def take(self) -> list[Call]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls


class ClientThreads:
    """A client process's or cluster worker's share of the clients, one thread each, started at once and held until
    `release` sets their deadline (no client's first op may miss its time limit); how each failed is kept until the
    next batch home takes it."""

    def __init__(self, pattern: Pattern, contexts: list[ClientContext]) -> None:
        self.contexts = contexts
        self._pattern = pattern
        self._errors: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._threads = [threading.Thread(target=self._work, args=(ctx,), daemon=True) for ctx in contexts]
        for t in self._threads:
            t.start()

    def _work(self, ctx: ClientContext) -> None:
        self._released.wait()
        failure = client_failure(self._pattern, ctx)
        if failure is not None:
            with self._lock:
                self._errors.append({"client": ctx.client_id, **failure})

    def release(self, deadline: float | None) -> None:
        for ctx in self.contexts:
            ctx.deadline = deadline
        self._released.set()

    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def wait(self, timeout: float) -> None:
        """Up to `timeout` seconds, less once every client has ended: the last batch home need not wait out its
        interval (a run's end, and so its calls/s, would count it)."""
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
            if t.is_alive():
                return

    def take_errors(self) -> list[dict[str, Any]]:
        with self._lock:
            taken, self._errors = self._errors, []
        return taken


class SharePlan(Protocol):
    """What a client process's plan (engine/clients/processes.py) and a cluster worker's (engine/clients/cluster/share.py) both carry."""

    @property
    def backend(self) -> BackendSpec: ...
    @property
    def config(self) -> Any: ...  # the run's RunConfig (engine.run.runner), read through pool.RunConfig's protocol
    @property
    def options(self) -> RunOptions: ...
    @property
    def table_name(self) -> str: ...
    @property
    def table_spec(self) -> TableSpec: ...
    @property
    def client_ids(self) -> tuple[int, ...]: ...
    @property
    def base_seed(self) -> int: ...


@dataclass(frozen=True)
class ShareClients:
    """A share's clients, made and not yet started: one boto3 client (with the run's faults) for all of them."""

    client: Any
    injector: FaultInjector
    pattern: Pattern
    outbox: Outbox
    contexts: list[ClientContext]

    def close(self) -> None:
        self.injector.close()
        self.client.close()


def make_share(plan: SharePlan, max_calls: int | None, stop: threading.Event) -> ShareClients:
    """The clients of a client process's or cluster worker's share, recording into one Outbox; `max_calls` is the
    share's part of the run's call budget."""
    cfg = plan.config
    client = Backend(plan.backend).client(threads=len(plan.client_ids), retry=cfg.retry)
    injector = FaultInjector(client, FaultPlan(cfg.lost_response_share or 0.0, cfg.latency_ms))
    table = Table(plan.table_name, client, created=False, spec=plan.table_spec)  # never ours to drop
    outbox = Outbox()
    # One per share (patterns whose clients meet in memory are never spread); it says how many clients the share
    # holds, so clients that meet only among themselves (a workload's opening round) know whom to wait for.
    shared: dict[str, Any] = {"_share_clients": len(plan.client_ids)}
    contexts = [
        ClientContext(
            client=client,
            history=outbox,
            client_id=i,
            table=table,
            options=plan.options,
            variant=plan.options.variant,
            threads=cfg.threads,
            ops_per_client=cfg.ops_per_client,
            deadline=None,
            stop=stop,
            shared=shared,
            rng=random.Random(plan.base_seed * 1000 + i),
            lost_response_share=cfg.lost_response_share or 0.0,
            record_requests=cfg.record_requests,
            max_calls=max_calls,
        )
        for i in plan.client_ids
    ]
    from engine.patterns import get_pattern  # the share's side only: the home hands its pattern in

    return ShareClients(client, injector, get_pattern(cfg.pattern)(), outbox, contexts)
