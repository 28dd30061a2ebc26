"""One operation run to its end, by its type."""

from __future__ import annotations

from engine.record.calls import CallError
from engine.workloads import schema as s
from engine.workloads.operations.op_run import OpRun
from engine.workloads.operations.reads import _get, _query, _transact_get
from engine.workloads.operations.transfers import _transact_write
from engine.workloads.operations.writes import _batch_write, _delete, _put, _update


def run_operation(run: OpRun, racy: bool) -> None:
    """Run one operation to its end; a refusal it does not retry, or an unknown outcome, ends it (recorded)."""
    op = run.op
    try:
        if isinstance(op, s.Get):
            _get(run, op)
        elif isinstance(op, s.Query):
            _query(run, op)
        elif isinstance(op, s.Delete):
            _delete(run, op)
        elif isinstance(op, s.BatchWrite):
            _batch_write(run, op)
        elif isinstance(op, s.TransactGet):
            _transact_get(run, op)
        elif isinstance(op, s.Put):
            _put(run, op, racy)
        elif isinstance(op, s.Update):
            _update(run, op, racy)
        elif isinstance(op, s.TransactWrite):
            _transact_write(run, op, racy)
    except CallError:
        pass  # recorded in the History with its cause; the report and the invariants read it there
