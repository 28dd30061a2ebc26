"""Throughput of the embedded DynamoDB, side by side with dynalite, plus the race checks it must keep passing.

    python -m bench.server.throughput                 # embedded vs dynalite, 3 rounds, 1, 4 and 16 threads
    python -m bench.server.throughput --check         # the race checks only (exit 1 on a failure)
    python -m bench.server.throughput --only embedded --only plain --rounds 1   # what the fast path is worth
    python -m bench.server.throughput --profile update_add --threads 16   # cProfile of the server process
    python -m bench.server.throughput --equivalence   # fast path vs moto's Flask app: the same bytes?
    python -m bench.server.throughput --baseline /tmp/base   # also another checkout's server (before vs after)
    python -m bench.server.throughput --app-cpu --baseline /tmp/base   # the app's CPU per request, no wire
    python -m bench.server.throughput --client-cost   # the client's work per op against each server and its replay

The machine is small and shared, so every server is up at once and each cell is measured on each server back
to back, who goes first alternating, round after round; the report gives medians, and each ratio to dynalite
as the median of the rounds' own ratios with their range, rather than single runs. One boto3 client is shared by all
threads, as the lab's pools do. dynalite is installed with npm into ~/.cache/ddblab/dynalite on first use.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.server.app_cpu import app_cpu, app_cpu_of
from bench.server.client_cost import client_cost
from bench.server.equivalence.replay import equivalence
from bench.server.servers import SERVERS, baseline, embedded
from bench.shared import client, create_table

WORKLOADS = ("update_add", "put_distinct", "cond_put")


# -- workloads: each returns a function one thread calls repeatedly; one call = one op ----------------------


def workload(kind: str, ddb: Any, table: str, thread: int) -> Callable[[], bool]:
    if kind == "update_add":

        def op() -> bool:
            ddb.update_item(
                TableName=table,
                Key={"pk": {"S": "counter"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
            return True

        return op
    if kind == "put_distinct":
        counter = iter(range(10**9))

        def op() -> bool:
            ddb.put_item(TableName=table, Item={"pk": {"S": f"t{thread}-{next(counter)}"}, "v": {"N": "1"}})
            return True

        return op
    if kind == "cond_put":

        def op() -> bool:  # one read-check-write attempt (a GetItem and a PutItem); True when the put won
            item = ddb.get_item(TableName=table, Key={"pk": {"S": "doc"}}, ConsistentRead=True).get("Item")
            version = int(item["version"]["N"]) if item else 0
            try:
                if item:
                    ddb.put_item(
                        TableName=table,
                        Item={"pk": {"S": "doc"}, "version": {"N": str(version + 1)}},
                        ConditionExpression="version = :v",
                        ExpressionAttributeValues={":v": {"N": str(version)}},
                    )
                else:
                    ddb.put_item(
                        TableName=table,
                        Item={"pk": {"S": "doc"}, "version": {"N": "1"}},
                        ConditionExpression="attribute_not_exists(pk)",
                    )
            except ddb.exceptions.ConditionalCheckFailedException:
                return False
            return True

        return op
    raise ValueError(kind)


def run_threads(
    ops: list[Callable[[], bool]], *, seconds: float | None = None, count: int | None = None
) -> tuple[float, int, int]:
    """Run each op in its own thread, for `seconds` or `count` calls each. Returns (elapsed, calls, successes)."""
    calls = [0] * len(ops)
    wins = [0] * len(ops)
    start = threading.Barrier(len(ops) + 1)
    deadline = [0.0]

    def loop(i: int) -> None:
        start.wait()
        n = 0
        while (count is not None and n < count) or (seconds is not None and time.perf_counter() < deadline[0]):
            wins[i] += ops[i]()
            n += 1
        calls[i] = n

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(ops))]
    for t in threads:
        t.start()
    deadline[0] = time.perf_counter() + (seconds or 0)
    t0 = time.perf_counter()
    start.wait()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, sum(calls), sum(wins)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux), to see whether the client or the server is the limit."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(endpoint: str, pid: int, kind: str, threads: int, seconds: float) -> tuple[float, float, float]:
    """(ops/s, client CPU ms per op, server CPU ms per op)."""
    ddb = client(endpoint)
    table = create_table(ddb)
    ops = [workload(kind, ddb, table, i) for i in range(threads)]
    run_threads(ops, seconds=0.3)  # warm the connection pool and moto's caches
    client0, server0 = time.process_time(), cpu_seconds(pid)
    elapsed, calls, _ = run_threads(ops, seconds=seconds)
    client_ms = (time.process_time() - client0) * 1000 / max(calls, 1)
    server_ms = (cpu_seconds(pid) - server0) * 1000 / max(calls, 1)
    return calls / elapsed, client_ms, server_ms


# -- race checks ---------------------------------------------------------------------------------------------


def check(endpoint: str) -> list[str]:
    """The atomicity and idempotency the embedded server promises. Returns the failures."""
    ddb = client(endpoint)
    failures: list[str] = []
    table = create_table(ddb)
    run_threads([workload("update_add", ddb, table, i) for i in range(16)], count=100)
    n = int(ddb.get_item(TableName=table, Key={"pk": {"S": "counter"}}, ConsistentRead=True)["Item"]["n"]["N"])
    if n != 1600:
        failures.append(f"16 x 100 UpdateItem ADD ended at {n}, not 1600")

    _, _, wins = run_threads([workload("cond_put", ddb, table, i) for i in range(16)], count=30)
    version = int(ddb.get_item(TableName=table, Key={"pk": {"S": "doc"}}, ConsistentRead=True)["Item"]["version"]["N"])
    # the first successful put creates version 1, every later one adds 1
    if version != wins:
        failures.append(f"conditional puts: version {version} after {wins} successful puts")

    items = [
        {
            "Update": {
                "TableName": table,
                "Key": {"pk": {"S": "tx"}},
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        }
    ]
    token = uuid.uuid4().hex
    ddb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    ddb.transact_write_items(TransactItems=items, ClientRequestToken=token)
    n = int(ddb.get_item(TableName=table, Key={"pk": {"S": "tx"}}, ConsistentRead=True)["Item"]["n"]["N"])
    if n != 1:
        failures.append(f"TransactWriteItems with one token twice applied {n} times")
    try:
        ddb.transact_write_items(
            TransactItems=[*items, {"Put": {"TableName": table, "Item": {"pk": {"S": "x"}}}}], ClientRequestToken=token
        )
        failures.append("same token with other parameters did not fail")
    except ddb.exceptions.IdempotentParameterMismatchException:
        pass
    try:
        ddb.put_item(TableName=table, Item={"pk": {"S": "doc"}}, ConditionExpression="attribute_not_exists(pk)")
        failures.append("a failing condition did not raise ConditionalCheckFailedException")
    except ddb.exceptions.ConditionalCheckFailedException:
        pass
    return failures


def profile_server(kind: str, threads: int, seconds: float, top: int = 30) -> None:
    """Run one workload against `python -m cProfile -m engine.server` and print where the server's time went.

    The server answers every request on its one loop thread, so cProfile (which sees one thread) sees them all.
    """
    import pstats
    import tempfile

    out = Path(tempfile.mkdtemp()) / "server.prof"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "engine.server", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        rate, client_ms, server_ms = measure(f"http://127.0.0.1:{port}", proc.pid, kind, threads, seconds)
        print(
            f"{kind}, {threads} threads, under the profiler: {rate:.0f} ops/s, "
            f"CPU per op: client {client_ms:.2f} ms, server {server_ms:.2f} ms"
        )
    finally:
        proc.terminate()  # SIGTERM -> SystemExit in the server -> cProfile writes its file
        proc.wait(10)
    stats = pstats.Stats(str(out))
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def compare(
    *,
    rounds: int = 3,
    seconds: float = 3.0,
    threads: list[int] | tuple[int, ...] = (1, 4, 16),
    workloads: list[str] | tuple[str, ...] = WORKLOADS,
    names: list[str] | None = None,
    progress: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Embedded vs dynalite (when node is there): every server up at once, each cell measured on each server back
    to back (who goes first alternating), round after round; medians per cell, and per cell the median of each
    round's own ratio (see paired_rows)."""
    names = names or ["embedded", *(["dynalite"] if shutil.which("node") else [])]
    results: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    with contextlib.ExitStack() as stack:
        up = {name: stack.enter_context(SERVERS[name]()) for name in names}  # an idle server takes no CPU
        for r in range(rounds):
            for cell, (kind, count) in enumerate((k, c) for k in workloads for c in threads):
                for name in names if (r + cell) % 2 == 0 else list(reversed(names)):
                    endpoint, pid = up[name]
                    rate, client_ms, server_ms = measure(endpoint, pid, kind, count, seconds)
                    results.setdefault((name, kind, count), []).append((rate, server_ms))
                    if progress:
                        progress(
                            f"round {r + 1} {name:9} {kind:13} {count:2} threads {rate:6.0f} ops/s   "
                            f"CPU per op: client {client_ms:4.2f} ms, server {server_ms:4.2f} ms"
                        )
    return {"servers": names, "rounds": rounds, "rows": paired_rows(results, names, workloads, threads)}


def paired_rows(
    results: dict[tuple[str, str, int], list[tuple[float, float]]],
    names: list[str],
    workloads: list[str] | tuple[str, ...],
    threads: list[int] | tuple[int, ...],
) -> list[dict[str, Any]]:
    """Per cell: each server's median ops/s and server CPU per op, and each server's ratio to dynalite as the
    median of the rounds' own ratios, with their range. A round measures a cell on both servers seconds apart,
    while a round lasts minutes: the machine's load drifts between rounds (single cells swung by ±15 % from run to
    run), and a ratio of two medians can pair one server's quiet round with the other's busy one."""
    rows = []
    for kind in workloads:
        for count in threads:
            row: dict[str, Any] = {"workload": kind, "threads": count}
            for n in names:
                row[n] = statistics.median(rate for rate, _ in results[(n, kind, count)])
                row[n + "_cpu_ms"] = statistics.median(ms for _, ms in results[(n, kind, count)])
            for n in names:
                if n == "dynalite" or "dynalite" not in names:
                    continue
                paired = [
                    mine / theirs
                    for (mine, _), (theirs, _) in zip(results[(n, kind, count)], results[("dynalite", kind, count)])
                    if theirs
                ]
                row[n + "_ratios"] = paired
                row[n + "_ratio"] = statistics.median(paired) if paired else None
            row["ratio"] = row.get("embedded_ratio")
            rows.append(row)
    return rows


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    if "dynalite" not in result["servers"]:
        return [
            {
                "figure": "embedded / dynalite, every workload, every thread count",
                "value": "n/a",
                "target": "≥ 1.0",
                "pass": False,
                "note": "npm/node missing: dynalite could not be installed",
            }
        ]
    # The target holds at every thread count (1, 4 and 16) and for each workload.
    return [
        {
            "figure": f"embedded / dynalite, {row['workload']}, {row['threads']} threads",
            "value": round(row["ratio"], 2),
            "target": "≥ 1.0",
            "pass": row["ratio"] >= 1.0,
            "note": "median of the rounds' own ratios, range "
            + "-".join(f"{r:.2f}" for r in (min(row["embedded_ratios"]), max(row["embedded_ratios"]))),
        }
        for row in result["rows"]
        if row["ratio"] is not None  # no embedded server among those measured
    ]


def _ratio_cell(row: dict[str, Any], name: str) -> str:
    ratios = row.get(name + "_ratios")
    if not ratios:
        return f"{'n/a':>22}"
    return f"{row[name + '_ratio']:8.2f} [{min(ratios):.2f}-{max(ratios):.2f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server.throughput")
    parser.add_argument("--check", action="store_true", help="only run the race checks against the embedded server")
    parser.add_argument("--only", choices=sorted(SERVERS), action="append")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--profile", choices=WORKLOADS, help="run one workload against a server under cProfile")
    parser.add_argument("--equivalence", action="store_true", help="compare the fast path's answers with plain moto's")
    parser.add_argument("--app-cpu", action="store_true", help="server CPU per request in process, without the wire")
    parser.add_argument(
        "--app-cpu-size",
        type=int,
        nargs=2,
        default=[7, 150],
        metavar=("BATCHES", "PER_BATCH"),
        help="--app-cpu's batches and requests per batch (fewer: a shorter run on a loaded machine)",
    )
    parser.add_argument("--client-cost", action="store_true", help="the client's work per PutItem against each server")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="CHECKOUT",
        help="also measure the embedded server of this other checkout (e.g. main's), as the server 'baseline'",
    )
    args = parser.parse_args(argv)
    names = args.only
    if args.baseline:
        SERVERS["baseline"] = lambda: baseline(args.baseline.resolve())
        names = [*(names or ["embedded", *(["dynalite"] if shutil.which("node") else [])]), "baseline"]

    if args.app_cpu:
        batches, per_batch = args.app_cpu_size
        rounds = [("this checkout", lambda: app_cpu(batches, per_batch))]
        if args.baseline:
            # Both in fresh child processes: like with like (in this process, later rounds would find the first
            # round's tables, items and caches).
            here = Path(__file__).resolve().parents[2]
            rounds = [
                ("this checkout", lambda: app_cpu_of(here, batches, per_batch)),
                ("baseline", lambda: app_cpu_of(args.baseline.resolve(), batches, per_batch)),
            ]
        seen: dict[str, list[dict[str, float]]] = {}
        for _ in range(args.rounds):  # alternating, as the servers are
            for label, measure_app in rounds:
                seen.setdefault(label, []).append(measure_app())
        print("server CPU per request in process, no wire: ms (median over rounds of the least-disturbed batch)")
        print("and Python function calls per request (deterministic); 'after other work': each request timed alone")
        print("after a few MB of other work, as a client's between two requests over HTTP (median)")
        for label, results in seen.items():
            cells = ", ".join(
                f"{k} {statistics.median(r[k] for r in results):.3f}"
                + (f" ({results[0][k + ' calls']:.0f})" if k + " calls" in results[0] else "")
                for k in results[0]
                if not k.endswith(" calls")
            )
            print(f"  {label:14} {cells}")
        return 0
    if args.client_cost:
        print("client per PutItem, 1 thread: Python calls (deterministic), CPU ms (median of alternating rounds)")
        for name, (calls, ms) in client_cost(rounds=args.rounds).items():
            print(f"  {name:20} {calls:6.0f} calls  {ms:5.2f} ms")
        return 0
    if args.profile:
        profile_server(args.profile, args.threads[-1], args.seconds)
        return 0
    if args.equivalence:
        differences = equivalence()
        print(*differences, sep="\n")
        return 1 if differences else 0

    with embedded() as (endpoint, _):
        failures = check(endpoint)
    print("race checks:", "OK" if not failures else "FAILED", *failures, sep="\n  " if failures else " ")
    if args.check:
        return 1 if failures else 0

    result = compare(
        rounds=args.rounds,
        seconds=args.seconds,
        threads=args.threads,
        workloads=args.workloads,
        names=names,
        progress=print,
    )
    names = result["servers"]
    # Each server's ops/s over dynalite's, when dynalite ran: "ratio" is the embedded server's (the bench's figure).
    ratios = [n for n in names if n != "dynalite"] if "dynalite" in names else []
    print(
        f"\nmedians over {args.rounds} rounds: ops/s (server CPU ms per op); cond_put: GetItem + conditional PutItem;"
        " a ratio is the median of the rounds' own ratios [their range]"
    )
    heads = "".join(f"{'ratio' if n == 'embedded' else n + '/dyn':>22}" for n in ratios)
    print(f"{'workload':13} {'thr':>3} " + "".join(f"{n:>18}" for n in names) + heads)
    for row in result["rows"]:
        cells = "".join(f"{row[n]:10.0f} ({row[n + '_cpu_ms']:4.2f})" for n in names)
        shown = "".join(_ratio_cell(row, n) for n in ratios)
        print(f"{row['workload']:13} {row['threads']:3} {cells}{shown}")
    print()
    for verdict in verdicts(result) if "dynalite" in names else []:
        print(
            f"{'PASS' if verdict['pass'] else 'FAIL'}  {verdict['figure']}: {verdict['value']} "
            f"(target {verdict['target']}; {verdict['note']})"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
