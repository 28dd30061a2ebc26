"""One operation run to its end, by its type."""

from __future__ import annotations

from engine.record.calls import CallError
from engine.workloads.operations.op_run import OpRun
from engine.workloads.operations.reads import get, query, transact_get
from engine.workloads.operations.transfers import transact_write
from engine.workloads.operations.writes import batch_write, delete, put, update
from engine.workloads.schema.operations import BatchWrite, Delete, Get, Put, Query, TransactGet, TransactWrite, Update


def run_operation(run: OpRun, racy: bool) -> None:
    """Run one operation to its end; a refusal it does not retry, or an unknown outcome, ends it (recorded)."""
    op = run.op
    try:
        if isinstance(op, Get):
            get(run, op)
        elif isinstance(op, Query):
            query(run, op)
        elif isinstance(op, Delete):
            delete(run, op)
        elif isinstance(op, BatchWrite):
            batch_write(run, op)
        elif isinstance(op, TransactGet):
            transact_get(run, op)
        elif isinstance(op, Put):
            put(run, op, racy)
        elif isinstance(op, Update):
            update(run, op, racy)
        elif isinstance(op, TransactWrite):
            transact_write(run, op, racy)
    except CallError:
        pass  # recorded in the History with its cause; the report and the invariants read it there
