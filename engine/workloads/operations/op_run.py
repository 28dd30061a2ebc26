"""One operation of one client (its calls share `o`), and the opening round's barrier."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from engine.record.calls import ClientContext
from engine.workloads.operations.layout import Mix
from engine.workloads.schema.operations import Operation, Retry

OPENING_TIMEOUT_S = 5.0


class OpRun:
    """One operation of one client: its calls share `o`, the first carries how late it started."""

    def __init__(
        self, ctx: ClientContext, mix: Mix, op: Operation, o: int, late_ms: float | None, stream: str | None = None
    ) -> None:
        self.ctx = ctx
        self.mix = mix
        self.op = op
        self.o = o
        self.late_ms = late_ms
        self.stream = stream  # the open-loop schedule its arrival came from
        self.table = ctx.table.name
        self.gate: Callable[[], None] | None = None  # the opening round's barrier, met between read and write
        self.pinned = False  # the opening round: every key draw gives the hottest keys, rank 0 first

    def rank(self) -> int:
        return 0 if self.pinned else self.mix.samplers[self.op.name].draw(self.ctx.rng)

    def ranks(self, k: int) -> list[int]:
        return list(range(k)) if self.pinned else self.mix.samplers[self.op.name].draw_distinct(self.ctx.rng, k)

    def call(self, step: str, api: str, *, key: str, detail: Mapping[str, Any] | None = None, **params: Any) -> Any:
        d: dict[str, Any] = {"o": self.o, "step": step, **(detail or {})}
        if self.late_ms is not None:
            d["late_ms"] = round(self.late_ms, 3)
            if self.stream is not None:
                d["stream"] = self.stream
            self.late_ms = None
        return self.ctx.call(self.op.name, api, key=key, detail=d, **params)

    def meet(self) -> None:
        if self.gate is not None:
            gate, self.gate = self.gate, None
            gate()

    def backoff(self, attempt: int, retry: Retry) -> bool:
        return self.ctx.backoff(attempt, retry.backoff_ms / 1000, retry.max_backoff_ms / 1000)


def opening_gate(ctx: ClientContext) -> Callable[[], None] | None:
    """A barrier for the clients of this process (single process: every client of the run; client processes and
    cluster workers: the clients of its share), or None when it holds one client only."""
    local = ctx.shared.get("_share_clients") or len(ctx.shared.get("_ops_done") or ())
    if local < 2:
        return None
    with _GATE_LOCK:
        barrier = ctx.shared.setdefault("_workload_opening", threading.Barrier(local, timeout=OPENING_TIMEOUT_S))

    def meet() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # a client stopped early: the others go on

    return meet


_GATE_LOCK = threading.Lock()
