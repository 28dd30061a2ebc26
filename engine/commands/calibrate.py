"""python -m engine calibrate: measure a DynamoDB (an account's, or any endpoint) and write the aws-like profile
that matches it (engine/run/calibrate.py has the probes and the fit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.backends.backend import Backend, BackendKind, BackendSpec, RetryPolicy
from engine.errors import BadInput


def cmd_calibrate(args: argparse.Namespace) -> int:
    from engine.backends.tables import TableSpec, drop_table, open_table
    from engine.run import calibrate, op_latency

    if not args.endpoint_url and not args.aws:
        raise BadInput(
            "calibrate measures a DynamoDB, and none was named",
            "give --aws --confirm-aws (an account) or --endpoint-url URL (e.g. `python -m engine serve`)",
        )
    spec = BackendSpec.parse(args.endpoint_url, aws=args.aws, confirm_aws=args.confirm_aws, region=args.region)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise BadInput(f"the folder of --out {args.out!r} does not exist", "create it, or write somewhere else")
    plan = calibrate.plan()
    print(
        f"calibrate: at most {plan.requests:,} requests on a lab table of its own (created, then deleted), about"
        f" {plan.write_units:,.0f} write and {plan.read_units:,.0f} read request units: about ${plan.cost_usd:.4f}"
        f" at on-demand list prices (us-east-1, ${calibrate.PRICE_WRITE} / ${calibrate.PRICE_READ} per million)",
        flush=True,
    )
    print("  " + "; ".join(f"{part}: {count:,}" for part, count in plan.parts), flush=True)
    if not args.yes:
        if not sys.stdin.isatty():
            raise BadInput("calibrate asks before it starts, and nobody can answer here", "add --yes")
        if input("go ahead? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing was done")
            return 0
    with Backend(spec) as backend, op_latency.local_reference() as reference:
        region = backend.client().meta.region_name if spec.kind is BackendKind.AWS else (args.region or "local")
        client = backend.client(threads=4 * calibrate.PARALLEL, retry=RetryPolicy("standard", 1))
        table = open_table(client, "calibrate", TableSpec())
        try:
            result = calibrate.run(table, reference, progress=lambda step: print(f"  probing {step} ...", flush=True))
        finally:
            drop_table(table)
    doc = calibrate.write_profile(out, result, region, spec.endpoint_url or "aws")
    for knob, value in doc["knobs"].items():
        interval = doc["intervals_95"].get(knob)
        within = f"  (95 %: {interval[0]:g} to {interval[1]:g})" if interval else ""
        print(f"  {knob:<16} {value:g}{within}")
    print("  latency per operation, ms added (median, 99th percentile):")
    for op, figures in doc["latency"].items():
        print(f"    {op:<20} {figures['median_ms']:g}  {figures['p99_ms']:g}")
    for note in result.notes:
        print(f"  note: {note}")
    print(f"wrote {out}: use it with --profile-file {out} (runs say 'calibrated from {out.name}')")
    return 0
