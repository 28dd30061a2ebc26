"""python -m engine sweep: every variant of a pattern at several thread counts, as a table or JSON."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engine.commands.backend_args import backend_for, pattern_options
from engine.digits import ONLY, foreign_digits
from engine.errors import BadInput
from engine.patterns import get_pattern
from engine.run.config import DEFAULT_MAX_THREADS
from engine.run.runner import RunConfig, RunState

MAX_SWEEP_OPS = 100_000
SWEEP_OPS = 20  # operations per client when neither --ops nor --duration is given


def thread_counts(text: str) -> list[int]:
    """ "1,2,4,8" as sorted counts from 1 to the thread cap; BadInput for anything else, empty or a count named
    twice included."""
    like = "e.g. --threads 1,2,4,8"
    parts = [t.strip() for t in text.split(",")]
    if not any(parts):
        raise BadInput("--threads is empty: a sweep needs at least one thread count", like)
    if foreign_digits(text):
        raise BadInput(f"--threads {text!r} has digits other than 0-9", ONLY)
    try:
        counts = sorted({int(t) for t in parts if t})
    except ValueError:
        raise BadInput(f"--threads {text[:60]!r} is not a comma-separated list of whole numbers", like) from None
    if counts[0] < 1 or counts[-1] > DEFAULT_MAX_THREADS:
        raise BadInput(f"--threads {text[:60]!r}: every count must be from 1 to {DEFAULT_MAX_THREADS}", like)
    given = [t for t in parts if t]
    if len(given) != len(counts):  # "2,2" ran one point, without a word
        raise BadInput(f"--threads {text[:60]!r} names a count twice", "name each thread count once, e.g. 1,2,4,8")
    return counts


def cmd_sweep(args: argparse.Namespace) -> int:
    from engine.run.sweep import json_records, plan, render_sweep, sweep

    counts = thread_counts(args.threads)
    pattern = get_pattern(args.pattern)
    ops = SWEEP_OPS if args.ops is None and args.duration is None else args.ops
    if ops is not None and not 1 <= ops <= MAX_SWEEP_OPS:
        raise BadInput(f"--ops {ops} is out of range", f"use 1 to {MAX_SWEEP_OPS} operations per client")
    options = pattern_options(args.set, args.gsi_lag_ms)
    shape = {"duration_s": args.duration, "options": options, "latency_ms": args.latency_ms}
    variants = list(pattern.variants)
    if args.variants is not None:
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        if not variants:  # "," named none: not all of them
            raise BadInput(
                f"--variants {args.variants!r} names no variant", f"use some of: {', '.join(pattern.variants)}"
            )
    if len(set(variants)) != len(variants):  # "guarded,guarded" ran each point twice, as --repeats 2 would
        raise BadInput(
            f"--variants {args.variants!r} names a variant twice", "name each variant once; --repeats runs more"
        )
    for name in variants:
        if name not in pattern.variants:
            raise BadInput(
                f"pattern {pattern.name!r} has no variant {name!r}", f"use some of: {', '.join(pattern.variants)}"
            )
    for variant in variants:  # every run of the sweep is checked before the server starts
        RunConfig(pattern=pattern.name, variant=variant, threads=counts[-1], ops_per_client=ops, **shape).validated()
    planned = len(list(plan(counts, variants, args.repeats)))  # bad --repeats fails here, before any server starts
    with stop_on_signals() as stopped:
        with backend_for(args) as backend:
            frame = sweep(
                backend,
                pattern.name,
                counts,
                ops_per_client=ops,
                profile=backend.profile,
                **shape,
                repeats=args.repeats,
                variants=variants,
                progress=None if args.json else lambda msg: print(msg, file=sys.stderr),
                stop=lambda: bool(stopped),
            )
    finished = int((frame["state"] != RunState.STOPPED.value).sum()) if not frame.empty else 0
    complete = not stopped and finished == planned
    what = "points" if args.repeats == 1 else "runs"
    if args.json:
        records = json_records(frame)
        for record in records:
            record["sweep_complete"] = complete  # a reader of the file alone can tell a stopped sweep
            record[f"sweep_{what}_planned"] = planned
        print(json.dumps(records), flush=True)
    else:
        print(render_sweep(frame, pattern.name), flush=True)
    if stopped:
        print(
            f"error: INCOMPLETE sweep: stopped after {finished} of {planned} {what} "
            f"({stopped[0]}; a run under way was stopped and verified, its row says 'stopped')",
            file=sys.stderr,
        )
        return 128 + stopped[1]
    failed = frame[frame["state"] == RunState.FAILED.value] if not frame.empty else frame
    if len(failed):
        print(f"error: the sweep stopped at a failed run: {failed['error'].iloc[0]}", file=sys.stderr)
        return 1
    return 0


@contextmanager
def stop_on_signals() -> Iterator[list[Any]]:
    """Ctrl-C and SIGTERM stop the sweep in order, so its finished rows are printed: the list then holds the
    signal's name and number. A second Ctrl-C interrupts at once."""
    stopped: list[Any] = []

    def on_signal(signum: int, _frame: object) -> None:
        if stopped and signum == signal.SIGINT:
            raise KeyboardInterrupt
        if not stopped:
            stopped.extend([signal.Signals(signum).name, signum])

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopped
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
