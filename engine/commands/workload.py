"""python -m engine workload run FILE | check FILE | sweep FILE --clients 1,4,16 (or --rate 100,500)

A workload file runs as the pattern "workload" (engine/workloads/pattern.py): the run, its History, --processes,
--cluster, --history and the summary are the `run` command's own; the workload adds its per-operation report."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from engine.backends.backend import BackendKind, RetryPolicy
from engine.commands.backend_args import backend_for, profile_for
from engine.commands.run_io import check_history_path, history_target, start_and_wait
from engine.run.config import AWS_DEFAULT_MAX_CALLS
from engine.run.runner import Run, RunConfig, RunState
from engine.workloads.pattern import AS_WRITTEN, NAME, RACY
from engine.workloads.report import CAUSES, load_line, report
from engine.workloads.schema.parsing import WorkloadInvalid, load
from engine.workloads.schema.workload import Workload
from engine.workloads.sweep import with_load

EXIT_STOPPED = 3
LATENCY_HELP = "added client-side latency per call, in ms (as `run --latency-ms`)"
# The refusal causes as the text table heads them (the --json keys are the long names).
SHORT = {
    "condition_refused": "condition",
    "transaction_conflict": "txconflict",
    "throttled": "throttled",
    "business": "business",
    "validation": "invalid",
    "other": "other",
    "unknown": "unknown",
}


def add_workload_parser(
    sub: Any, add_backend_args: Callable[[argparse.ArgumentParser], None], add_profile_args: Callable[..., None]
) -> None:
    parser = sub.add_parser("workload", help="your own workload: a YAML file of table, key popularity, mix and load")
    wsub = parser.add_subparsers(dest="workload_command", required=True, parser_class=type(parser))

    check = wsub.add_parser("check", help="validate a workload file: one line per problem, naming the field")
    check.add_argument("file")

    run = wsub.add_parser("run", help="run a workload and report per operation, hottest keys, capacity, invariants")
    run.add_argument("file")
    run.add_argument("--variant", choices=[AS_WRITTEN, RACY], default=AS_WRITTEN, help="default: as-written")
    _add_overrides(run)
    run.add_argument("--history", metavar="FILE", help="export every call to FILE (.jsonl or .csv)")
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object, nothing else")
    add_backend_args(run)
    add_profile_args(run)

    sweep = wsub.add_parser("sweep", help="a workload at several client counts or rates, both variants")
    sweep.add_argument("file")
    axis = sweep.add_mutually_exclusive_group(required=True)
    axis.add_argument("--clients", dest="sweep_clients", metavar="N,N,...", help="client counts, e.g. 1,4,16,64")
    axis.add_argument("--rate", dest="sweep_rates", metavar="R,R,...", help="open-loop rates, e.g. 100,500,2000")
    sweep.add_argument("--variants", default=f"{AS_WRITTEN},{RACY}", help="comma-separated (default: both)")
    sweep.add_argument("--ops", type=int, help="operations per client (default: the file's)")
    sweep.add_argument("--duration", type=float, help="time limit per run in seconds (default: the file's)")
    sweep.add_argument("--seed", type=int, help="random seed for the clients' choices")
    sweep.add_argument("--latency-ms", type=float, default=0.0, help=LATENCY_HELP)
    sweep.add_argument("--json", action="store_true", help="one JSON object per run, one a line")
    add_backend_args(sweep)
    add_profile_args(sweep)


def _add_overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", type=int, help="client threads (default: the file's load.clients)")
    p.add_argument("--rate", type=float, help="open-loop target rate (default: the file's load.rate)")
    p.add_argument("--ops", type=int, help="operations per client (default: the file's load.ops)")
    p.add_argument("--duration", type=float, help="time limit in seconds (default: the file's load.duration_s)")
    p.add_argument("--processes", type=int, default=1, help="client processes the clients are spread over")
    p.add_argument("--cluster", metavar="ADDRESS", help="run the clients on the workers of this Dask scheduler")
    p.add_argument("--seed", type=int, help="random seed for the clients' choices")
    p.add_argument("--max-attempts", type=int, default=3, help="botocore attempts per call (default 3)")
    p.add_argument("--max-calls", type=int, help="stop after this many calls (default on AWS: 20000)")
    p.add_argument("--latency-ms", type=float, default=0.0, help=LATENCY_HELP)


def cmd_workload(args: argparse.Namespace) -> int:
    return {"check": cmd_check, "run": cmd_run, "sweep": cmd_sweep}[args.workload_command](args)


def cmd_check(args: argparse.Namespace) -> int:
    try:
        w = load(args.file)
    except WorkloadInvalid as e:
        for line in e.lines():
            print(f"{args.file}: {line}", file=sys.stderr)
        return e.exit_code
    print(
        f"{args.file}: valid: {len(w.operations)} operations, {w.table.items} items of {w.table.item_size} bytes, "
        f"{w.load.mode} loop with {w.load.clients} clients; invariants: {', '.join(w.declared_invariants()) or 'none'}"
    )
    return 0


def config_for(w: Workload, variant: str, args: argparse.Namespace) -> RunConfig:
    ops = w.load.ops if w.load.ops is not None or w.load.duration_s is not None else None
    config = RunConfig(
        pattern=NAME,
        variant=variant,
        threads=w.load.clients,
        ops_per_client=ops,
        duration_s=w.load.duration_s,
        options={"spec": w.to_json()},
        retry=RetryPolicy("standard", getattr(args, "max_attempts", 3)),
        lost_response_share=w.lost_responses,
        latency_ms=getattr(args, "latency_ms", 0.0),
        seed=getattr(args, "seed", None),
        max_calls=getattr(args, "max_calls", None),
        processes=getattr(args, "processes", 1),
        cluster=getattr(args, "cluster", None),
        profile=profile_for(args),
    )
    config.validated()  # refused before any server starts
    return config


def run_workload(w: Workload, config: RunConfig, backend: Any, quiet: bool = True) -> tuple[Run, dict[str, Any]]:
    """Run one workload to its end on an entered backend; its summary with the workload's report under "workload"."""
    from engine.run.summary import summary

    run = Run(config, backend)
    start_and_wait(run, quiet, refused="refused", unknown="unknown")
    data = summary(run)
    data["workload"] = report(w, run.history, run.elapsed_s())
    return run, data


def cmd_run(args: argparse.Namespace) -> int:
    w = with_load(load(args.file), clients=args.clients, rate=args.rate, ops=args.ops, duration_s=args.duration)
    config = config_for(w, args.variant, args)
    if args.history is not None:
        args.history = history_target(args.history)
        check_history_path(args.history)
    backend = backend_for(args)
    if backend.kind is BackendKind.AWS and config.max_calls is None:
        config = dataclasses.replace(config, max_calls=AWS_DEFAULT_MAX_CALLS)
    with backend:
        if config.cluster is not None:
            from engine.clients.cluster.home import check_cluster

            check_cluster(config.cluster, backend)
        run, data = run_workload(w, config, backend, quiet=args.json)
    if args.history is not None:
        count = run.history.export(args.history, meta=export_meta(w, data))
        print(f"history: {count} calls written to {args.history}", file=sys.stderr)
    print(json.dumps(data, default=str) if args.json else render(data), flush=True)
    if run.state is RunState.FAILED:
        print(f"error: {run.error}", file=sys.stderr)
        return run.error.exit_code if run.error else 1
    return EXIT_STOPPED if run.state is RunState.STOPPED else 0


def export_meta(w: Workload, data: dict[str, Any]) -> dict[str, Any]:
    """A history file's header: the summary (its options carry the workload as JSON, what the run's clients read)
    and the workload again as a readable object."""
    return {"summary": data, "workload": w.model_dump(mode="json")}


def render(data: dict[str, Any]) -> str:
    """The run's summary, then the workload's own figures."""
    from engine.run.summary import render_text

    out = [render_text(data)]
    wl = data["workload"]
    out.append(
        f"workload {wl['name']} ({data['variant']}): refusals by cause, retries per success, latency from arrival"
    )
    head = f"  {'operation':<20} {'ops':>6} {'ok':>6} " + " ".join(f"{SHORT[c]:>10}" for c in CAUSES)
    out.append(head + f" {'retry/ok':>8} {'ok/s':>7} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7}")
    for name, op in wl["operations"].items():
        lat = op["latency_ms"]
        rps = op["retries_per_success"]
        out.append(
            f"  {name[:20]:<20} {op['attempts']:>6} {op['successes']:>6} "
            + " ".join(f"{op['refusals'][c]:>10}" for c in CAUSES)
            + f" {'-' if rps is None else f'{rps:.2f}':>8} {op['goodput_per_s']:>7.1f} "
            + " ".join(f"{'-' if lat[p] is None else f'{lat[p]:.1f}':>7}" for p in ("p50", "p95", "p99"))
        )
    out.extend(f"WARNING    {line}" for line in wl.get("warnings") or ())
    if wl["hot_keys"]:
        out.append("hottest keys by conflicts: " + ", ".join(f"{k['key']} {k['conflicts']}" for k in wl["hot_keys"]))
    cap = wl["capacity"]
    out.append(f"capacity   {cap['write_units_per_s']:g} WCU/s and {cap['read_units_per_s']:g} RCU/s in all")
    for kind, rows in (("write", cap["write_partitions"][:3]), ("read", cap["read_partitions"][:3])):
        for r in rows:
            share = r["peak_per_s"] / r["ceiling_per_s"]
            out.append(
                f"  {kind:<5} {r['partition']:<24} {r['per_s']:>8g}/s mean, {r['peak_per_s']:>8g}/s busiest second "
                f"({share:.0%} of the {r['ceiling_per_s']:,}/s partition ceiling)"
            )
    line = load_line(wl["load"])
    if line:
        out.append(line)
    return "\n".join(out)


def cmd_sweep(args: argparse.Namespace) -> int:
    from engine.commands.sweep import stop_on_signals
    from engine.workloads import sweep

    base = load(args.file)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    axis, text, flag = (
        ("clients", args.sweep_clients, "--clients") if args.sweep_clients else ("rate", args.sweep_rates, "--rate")
    )
    values = sweep.sweep_values(text, axis, flag)
    points = sweep.plan(base, axis, values, variants, ops=args.ops, duration_s=args.duration)
    configs = {(p.value, p.variant): config_for(p.workload, p.variant, args) for p in points}  # checked up front
    rows: list[dict[str, Any]] = []

    def on_row(row: dict[str, Any]) -> None:
        rows.append(row)
        if args.json:
            print(json.dumps(row, default=str), flush=True)

    with stop_on_signals() as stopped:
        with backend_for(args) as backend:
            sweep.run_points(
                points,
                axis,
                lambda p: Run(configs[(p.value, p.variant)], backend),
                on_row=on_row,
                stop=lambda: bool(stopped),
            )
    if not args.json:
        print(sweep.sweep_table(axis, rows), flush=True)
    if stopped:
        print(
            f"error: INCOMPLETE sweep: stopped after {len(rows)} of {len(points)} runs ({stopped[0]}; a run under "
            "way was stopped and verified, its row says 'stopped')",
            file=sys.stderr,
        )
        return 128 + int(stopped[1])
    return 0
