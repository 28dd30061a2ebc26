"""python -m engine demos: re-record the histories of demos/ that the dashboard's History page replays."""

from __future__ import annotations

import argparse
import sys

from engine.commands.backend_args import backend_for


def cmd_demos(args: argparse.Namespace) -> int:
    from pathlib import Path

    from engine.run.demos import DEFAULT_DIR, check_demos, record_demos

    out = DEFAULT_DIR if args.out is None else Path(args.out)
    check_demos(out, threads=args.threads, ops_per_client=args.ops, seed=args.seed)  # before the server starts
    with backend_for(args) as backend:
        written = record_demos(
            backend,
            out,
            threads=args.threads,
            ops_per_client=args.ops,
            seed=args.seed,
            progress=lambda msg: print(f"recording {msg}", file=sys.stderr, flush=True),
        )
    size = sum(p.stat().st_size for p in written)
    print(f"{len(written)} demos in {out}: {size / 1024:,.0f} KiB")
    return 0
