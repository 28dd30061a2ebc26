"""Engine overhead: calls/s of a lab run vs a bare boto3 loop making the same calls with the same threads.

Both drive the same embedded server through a client built the same way (Backend.client). The lab run is
atomic-counters/add with sequence numbers off: each op is an ADD on the views counter and a conditional
ticket sale; the bare loop makes exactly those two calls. Passes come in pairs, measured seconds apart; the
ratio is the median of the pairs' ratios (`pass_ratios`: their spread is this machine's noise).
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any, NamedTuple

from botocore.exceptions import ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.tables import TableSpec, drop_table, open_table
from engine.run.runner import RunConfig, run_pattern

VIEWS = {"PK": "POST#hello-world", "SK": "STATS"}
TICKETS = {"PK": "TICKETS#gig", "SK": "COUNTER"}


class Pass(NamedTuple):
    calls_per_s: float
    cpu_us_per_call: float  # CPU of the client threads (time.thread_time), per call


def _bare(backend: Backend, threads: int, ops: int) -> Pass:
    client = backend.client(threads=threads, retry=RetryPolicy())
    table = open_table(client, "bench-bare", TableSpec())
    table.put({**VIEWS, "views": 0})
    table.put({**TICKETS, "remaining": 100})
    barrier = threading.Barrier(threads + 1)
    calls = [0] * threads
    cpu = [0.0] * threads

    def work(i: int) -> None:
        barrier.wait()
        started = time.thread_time()
        for _ in range(ops):
            client.update_item(
                TableName=table.name,
                Key=VIEWS,
                UpdateExpression="ADD #v :one",
                ExpressionAttributeNames={"#v": "views"},
                ExpressionAttributeValues={":one": 1},
            )
            try:
                client.update_item(
                    TableName=table.name,
                    Key=TICKETS,
                    UpdateExpression="ADD remaining :minus",
                    ConditionExpression="remaining > :zero",
                    ExpressionAttributeValues={":minus": -1, ":zero": 0},
                )
            except ClientError:
                pass
            calls[i] += 2
        cpu[i] = time.thread_time() - started

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    barrier.wait()
    started = time.perf_counter()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    drop_table(table)
    return Pass(sum(calls) / elapsed, 1e6 * sum(cpu) / sum(calls))


def _engine(backend: Backend, threads: int, ops: int) -> Pass:
    run = run_pattern(
        RunConfig(
            pattern="atomic-counters",
            variant="add",
            threads=threads,
            ops_per_client=ops,
            options={"sequence": 0, "tickets": 100},
        ),
        backend,
    )
    calls, elapsed = len(run.history), run.elapsed_s()
    return Pass(calls / elapsed, 1e6 * sum(run.client_cpu()) * elapsed / calls)


def measure(threads: int = 16, ops: int = 40, passes: int = 8) -> dict[str, Any]:
    """Pairs of passes, the order flipped each pair (bare first, then engine first: give an even count) so that a
    machine getting busier or quieter during the run favours neither; the figure is the median of the pairs'
    ratios, each pair measured within seconds of itself."""
    bare: list[Pass] = []
    engine: list[Pass] = []
    with Backend() as backend:
        _bare(backend, threads, 5)  # warm-up: imports, connections
        for i in range(passes):
            if i % 2:
                e = _engine(backend, threads, ops)
                b = _bare(backend, threads, ops)
            else:
                b = _bare(backend, threads, ops)
                e = _engine(backend, threads, ops)
            bare.append(b)
            engine.append(e)
    ratios = [e.calls_per_s / b.calls_per_s for b, e in zip(bare, engine)]
    return {
        "threads": threads,
        "ops_per_client": ops,
        "bare_calls_per_s": statistics.median(p.calls_per_s for p in bare),
        "engine_calls_per_s": statistics.median(p.calls_per_s for p in engine),
        "ratio": statistics.median(ratios),
        "pass_ratios": [round(r, 3) for r in ratios],
        "passes": passes,
        # Where the difference goes: the client threads' CPU per call on each side (noisy too, but not
        # moved by how the machine schedules the two processes).
        "bare_cpu_us_per_call": statistics.median(p.cpu_us_per_call for p in bare),
        "engine_cpu_us_per_call": statistics.median(p.cpu_us_per_call for p in engine),
    }


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    figure = f"engine / bare boto3 calls/s at {result['threads']} threads"
    cpu = f"{result['engine_cpu_us_per_call']:.0f} / {result['bare_cpu_us_per_call']:.0f}"
    return [
        {"figure": figure, "value": round(result["ratio"], 3), "target": "≥ 0.95", "pass": result["ratio"] >= 0.95},
        {"figure": "client threads' CPU per call, engine / bare (µs)", "value": cpu, "target": "info", "pass": True},
    ]
