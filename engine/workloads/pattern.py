"""The Pattern a workload runs as: `python -m engine workload run FILE` hands the engine a RunConfig for the
pattern "workload" whose one option, `spec`, is the workload as JSON, so a client process or a cluster worker
rebuilds the same workload from the run's options. Everything else (History, processes, cluster, summary,
export) is the engine's own."""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

from engine.backends.tables import Table, TableSpec
from engine.errors import BadInput, LabError
from engine.patterns.base import Harm, Invariant, Option, Pattern, RunOptions, Variant
from engine.record.calls import ClientContext
from engine.record.history import History
from engine.workloads import invariants as inv
from engine.workloads.load import arrivals
from engine.workloads.operations.dispatch import run_operation
from engine.workloads.operations.layout import Layout, Mix
from engine.workloads.operations.op_run import OpRun, opening_gate
from engine.workloads.schema.parsing import WorkloadInvalid, from_json
from engine.workloads.schema.workload import Workload

NAME = "workload"
AS_WRITTEN = "as-written"
RACY = "racy"
SETUP_BATCH = 25
SETUP_TRIES = 20


@lru_cache(maxsize=16)
def workload_of(spec: str) -> Workload:
    return from_json(spec)


@lru_cache(maxsize=16)
def mix_of(spec: str) -> Mix:
    return Mix(workload_of(spec))


class WorkloadPattern(Pattern):
    name = NAME
    seed = 0  # not a seed pattern: never listed with them
    title = "Your own workload"
    problem = "A team's own table and traffic: how often do its writes conflict, and why?"
    solution = "Run the mix as written; compare it with its racy form (read-then-put, no version or check)."
    variants = {
        AS_WRITTEN: Variant(
            AS_WRITTEN, True, "the operations as the file writes them: versions, conditions, ADD", kind="as written"
        ),
        RACY: Variant(RACY, False, "each read-modify-write as read-then-put with no version or check"),
    }
    options = {"spec": Option("spec", "", "the workload as JSON (written by `python -m engine workload run`)")}
    harm = Harm("lost changes, broken totals and double winners")

    @classmethod
    def check_run(cls, variant: str, config: Any) -> None:
        spec = str(config.options.get("spec", ""))
        if not spec:
            raise BadInput("a workload run needs its workload", "use python -m engine workload run FILE")
        try:
            workload_of(spec)
        except (ValueError, WorkloadInvalid) as e:
            raise BadInput(
                f"the workload in the run's options is invalid: {e}", "check it with workload check"
            ) from None

    def table_spec(self, options: RunOptions) -> TableSpec:
        return TableSpec(gsi=workload_of(options["spec"]).table.gsi is not None)

    def setup(self, table: Table, options: RunOptions) -> None:
        w = workload_of(options["spec"])
        layout = Layout(w)
        items = [layout.item(rank) for rank in range(w.table.items)]
        for start in range(0, len(items), SETUP_BATCH):
            requests = [{"PutRequest": {"Item": item}} for item in items[start : start + SETUP_BATCH]]
            for attempt in range(SETUP_TRIES):
                left = table.client.batch_write_item(RequestItems={table.name: requests}).get("UnprocessedItems")
                requests = (left or {}).get(table.name) or []
                if not requests:
                    break
                time.sleep(min(1.0, 0.01 * 2**attempt))  # a partition's ceiling (aws-like) refills meanwhile
            if requests:
                raise LabError(
                    f"the set-up could not write {len(requests)} of the workload's {w.table.items} items "
                    f"after {SETUP_TRIES} tries (the table's throughput)",
                    "use fewer table.items per partition, or raise the profile's write_units",
                )

    def client(self, ctx: ClientContext) -> None:
        spec = ctx.options["spec"]
        w = workload_of(spec)
        mix = mix_of(spec)
        racy = ctx.variant == RACY
        opening = mix.opening()
        # The opening round: every client of the process runs the mix's first read-modify-write on the hottest key
        # and they meet between its read and its write, so the racy form loses changes for certain (with two
        # clients or more) and the as-written form meets its conflicts; the rest of the run is drawn at random.
        # Closed loop only: in open loop a barrier would hold back the first arrivals and make them late.
        gate = opening_gate(ctx) if opening is not None and w.load.mode == "closed" else None
        for arrival in arrivals(w.load, ctx):
            first = arrival.o == 0 and gate is not None and opening is not None
            op = opening if first and opening is not None else mix.choose(ctx.rng)
            run = OpRun(ctx, mix, op, arrival.o, arrival.late_ms, arrival.stream)
            if first:
                run.gate, run.pinned = gate, True  # rank 0 is the hottest key under every distribution
            run_operation(run, racy)

    def verify(self, table: Table, history: History, options: RunOptions) -> list[Invariant]:
        w = workload_of(options["spec"])
        return inv.judge(w, table, history)
