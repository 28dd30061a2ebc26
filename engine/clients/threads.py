"""A run's clients as threads of this process, sharing one boto3 client: released together by a barrier, watched
until they end, and the run ended if the embedded server dies under them."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from engine.clients.contract import Run
from engine.clients.work import client_failure
from engine.errors import LabError, server_died
from engine.record.calls import ClientContext


def run_clients(run: Run, client: Any, base_seed: int) -> None:
    """Run `run`'s clients on threads of this process; fills run.history."""
    cfg = run.config
    n = cfg.threads
    barrier = threading.Barrier(n + 1)
    run.shared["_ops_done"] = [0] * n
    deadline_box: list[float | None] = [None]
    contexts = [
        ClientContext(
            client=client,
            history=run.history,
            client_id=i,
            table=run.table,
            options=run.options,
            variant=run.options.variant,
            threads=n,
            ops_per_client=cfg.ops_per_client,
            deadline=None,
            stop=run.stop_event,
            shared=run.shared,
            rng=random.Random(base_seed * 1000 + i),
            lost_response_share=cfg.lost_response_share or 0.0,
            record_requests=cfg.record_requests,
            max_calls=cfg.max_calls,
        )
        for i in range(n)
    ]

    def work(ctx: ClientContext) -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        ctx.deadline = deadline_box[0]
        failure = client_failure(run.pattern, ctx)
        if failure is not None:
            run.record_worker_error({"client": ctx.client_id, **failure})
        run.client_ended(ctx.client_id)

    threads = [
        threading.Thread(target=work, args=(ctx,), daemon=True, name=f"client-{ctx.client_id}") for ctx in contexts
    ]
    try:
        for t in threads:
            t.start()
    except RuntimeError:
        barrier.abort()  # the started clients leave the barrier instead of waiting forever
        raise LabError(f"could not start {n} client threads on this machine", "use fewer --threads") from None
    run.history.t0_ns = time.monotonic_ns()
    if cfg.duration_s:
        deadline_box[0] = time.monotonic() + cfg.duration_s
    barrier.wait()
    run.started_at = time.time()
    run.t_start_ns = run.history.t0_ns
    # Watch the clients; end the run if the embedded server dies under them.
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(0.1)
        run.publish_progress([ctx.ops_done for ctx in contexts], [sum(ctx.cpu_s for ctx in contexts)])
        if not run.backend.alive() and not run.stop_event.is_set():
            run.error = server_died()
            run.stop_event.set()
    run.publish_progress([ctx.ops_done for ctx in contexts], [sum(ctx.cpu_s for ctx in contexts)])
    run.t_end_ns = time.monotonic_ns()
    if run.error is not None:
        raise run.error
