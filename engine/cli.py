"""python -m engine  list | run | walkthrough | serve | sweep | demos | workload (the last five in engine/commands/)

Exit status: 0 when the command completed (whatever the invariants say), 2 for bad arguments, 1 when it
could not run (unreachable endpoint, missing or rejected credentials, a missing permission, server died),
3 for a run stopped before its planned end (verified on the calls made), 130 for Ctrl-C and 143 for SIGTERM
before there was a run to stop (one line: "interrupted", "terminated"), 141 when the reader of its output went
away (`| head`; a --history file is written first). Errors are one line naming the problem and the fix.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from typing import NoReturn

from engine import interrupts
from engine.backends.backend import RETRY_MODES, BackendKind, RetryPolicy

# Under their old names, so the run command's code reads as it did before the other commands moved out.
from engine.commands.backend_args import backend_for as _backend
from engine.commands.backend_args import pattern_options
from engine.commands.backend_args import profile_for as _profile
from engine.commands.calibrate import cmd_calibrate
from engine.commands.demos import cmd_demos
from engine.commands.explain import cmd_explain
from engine.commands.run_io import check_history_path, history_target, start_and_wait
from engine.commands.serve import cmd_serve
from engine.commands.sweep import SWEEP_OPS, cmd_sweep
from engine.commands.walkthrough import cmd_walkthrough
from engine.commands.workload import add_workload_parser, cmd_workload
from engine.digits import ONLY, foreign_digits
from engine.errors import BadInput, LabError, clip
from engine.patterns import all_patterns
from engine.run.config import AWS_DEFAULT_MAX_CALLS, DEFAULT_MAX_THREADS, ValidRun
from engine.run.runner import Run, RunConfig, RunState
from engine.server.profile import KNOBS, ServerProfile
from engine.stdout_guard import OutputLost

EXIT_STOPPED = 3  # the run was verified, but on the calls made before a stop (Ctrl-C, SIGTERM) or its call budget


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's usage dump is noise for a typo: one line with the problem and where to look (and argparse
        # echoes the value it refused whole, a 100 KB one too).
        self.exit(2, f"error: {clip(message)} — see `{self.prog} --help`\n")


def _positive_int(text: str) -> int:
    if foreign_digits(text):
        raise argparse.ArgumentTypeError(f"{text!r} has digits other than 0-9: {ONLY}")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _number(text: str) -> float:
    if foreign_digits(text):
        raise argparse.ArgumentTypeError(f"{text!r} has digits other than 0-9: {ONLY}")
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _text(text: str) -> str:
    # An empty value (often an unset shell variable, --history "$OUT") was taken as the flag left out: no export,
    # the default variant, the embedded server, all without a word.
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty value: give one, or leave the flag out")
    return text


def _add_backend_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("backend (default: the embedded DynamoDB, started for this command)")
    g.add_argument("--endpoint-url", type=_text, help="any DynamoDB-compatible endpoint, e.g. http://127.0.0.1:8000")
    g.add_argument("--aws", action="store_true", help="real AWS DynamoDB (needs --confirm-aws)")
    g.add_argument("--confirm-aws", action="store_true", help="yes, create tables and make calls on real AWS")
    g.add_argument("--region", type=_text, help="AWS region (default: AWS_REGION or us-east-1)")


def _add_profile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--profile",
        choices=[v.value for v in ServerProfile],
        default="exact",
        help="embedded server profile: exact (atomic, instant) or aws-like (adds SIMULATED transaction "
        "conflicts, stale reads, per-key throttling and network time)",
    )
    p.add_argument(
        "--profile-set",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help=f"an aws-like knob: {', '.join(f'{k} ({v[0]:g})' for k, v in KNOBS.items())}",
    )
    p.add_argument(
        "--profile-file",
        type=_text,
        metavar="FILE",
        help="an aws-like profile `calibrate` wrote: its measured knobs, labelled 'calibrated from FILE'",
    )


def _add_shape_args(p: argparse.ArgumentParser) -> None:
    """What `run` and `sweep` share beyond the thread count and ops: the time limit, the knobs and the latencies."""
    p.add_argument("--duration", type=_number, help="time limit in seconds (with or instead of --ops)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a pattern knob (see list)")
    p.add_argument("--gsi-lag-ms", type=_number, help="simulated GSI lag (gsi-consistency; embedded server)")
    p.add_argument("--latency-ms", type=_number, default=0.0, help="added client-side latency per call")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="A live laboratory for DynamoDB concurrency.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("list", help="list the patterns, their variants and knobs")

    run = sub.add_parser("run", help="run N concurrent clients of one pattern variant and check its invariants")
    run.add_argument("pattern", help="name or seed number, e.g. optimistic-locking or 23")
    run.add_argument("--variant", type=_text, help="default: the pattern's safe variant")
    run.add_argument("--threads", type=_positive_int, default=8, help="client threads (default 8)")
    run.add_argument(
        "--processes",
        type=_positive_int,
        default=1,
        help="client processes the threads are spread over (default 1; about one per core lets "
        "many threads keep calls in flight against a far-away DynamoDB)",
    )
    run.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run the clients on the workers of the Dask cluster whose scheduler is at ADDRESS "
        "(e.g. tcp://127.0.0.1:8786), spread over its workers; see the README, 'When one machine is not enough'",
    )
    run.add_argument("--ops", type=_positive_int, help="operations per client (default: the pattern's)")
    _add_shape_args(run)
    run.add_argument("--retry-mode", default="standard", choices=RETRY_MODES, help="botocore retry mode")
    run.add_argument("--max-attempts", type=_positive_int, default=3, help="botocore attempts per call (default 3)")
    run.add_argument(
        "--lost-responses",
        type=_number,
        metavar="SHARE",
        help="share of writes whose response is lost after the server applied them (0..1)",
    )
    run.add_argument(
        "--throttle-share",
        type=_number,
        default=0.0,
        metavar="SHARE",
        help="share of calls the embedded server answers with ThrottlingException (0..1)",
    )
    run.add_argument("--table", help="use this table name (default: a new ddblab-* table)")
    run.add_argument("--keep-table", action="store_true", help="keep the table after the run")
    run.add_argument(
        "--allow-foreign-table",
        action="store_true",
        help="write to an existing --table the lab did not create (it is never deleted)",
    )
    run.add_argument("--max-threads", type=_positive_int, default=DEFAULT_MAX_THREADS, help="thread cap")
    run.add_argument("--seed", type=_positive_int, help="random seed for the clients' choices")
    run.add_argument(
        "--max-calls",
        type=_positive_int,
        help=(
            "stop the run after this many calls: no client starts another operation, and each ends the one it is "
            f"in, so a few more calls may be made (default on AWS: {AWS_DEFAULT_MAX_CALLS})"
        ),
    )
    run.add_argument("--history", type=_text, metavar="FILE", help="export every call to FILE (.jsonl or .csv)")
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object, nothing else")
    _add_backend_args(run)
    _add_profile_args(run)

    walk = sub.add_parser("walkthrough", help="replay a seed's 'In practice' scene in the seed's call-log format")
    walk.add_argument("pattern", help="name or seed number (22..29), or 'all'")
    walk.add_argument(
        "--variant",
        type=_text,
        help="a variant's own scene, e.g. 23 --variant version-attribute (seed 004's version attribute)",
    )
    walk.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per scene, one a line: profile, titled results in order, calls; nothing else",
    )
    _add_backend_args(walk)
    _add_profile_args(walk)

    serve = sub.add_parser("serve", help="run the embedded DynamoDB alone until Ctrl-C")
    serve.add_argument("--port", type=_positive_int, default=8000)
    serve.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1 (loopback only)")
    serve.add_argument("--ttl-interval", type=_number, default=1.0, help="seconds between TTL sweeps")
    _add_profile_args(serve)

    sweep = sub.add_parser(
        "sweep", help="every variant of a pattern at several thread counts: harm, conflicts, retries"
    )
    sweep.add_argument("pattern")
    sweep.add_argument("--threads", default="1,2,4,8,16,32", help="comma-separated thread counts")
    sweep.add_argument(
        "--ops",
        type=_positive_int,
        help=f"operations per client (default {SWEEP_OPS}, or none with --duration alone)",
    )
    _add_shape_args(sweep)
    sweep.add_argument(
        "--repeats", type=_positive_int, default=1, help="runs per point; the table shows mean [min–max] (default 1)"
    )
    sweep.add_argument("--variants", type=_text, help="comma-separated variants (default: all of the pattern's)")
    sweep.add_argument(
        "--json",
        action="store_true",
        help="one object per point: the means, NAME_min/_max/_std of the spread figures, and per_run",
    )
    _add_backend_args(sweep)
    _add_profile_args(sweep)

    demos = sub.add_parser(
        "demos", help="re-record the demos/ histories (every pattern, every variant) that the dashboard replays"
    )
    demos.add_argument(
        "--out", type=_text, default=None, metavar="DIR", help="where to write them (default: the repo's demos/)"
    )
    demos.add_argument("--threads", type=_positive_int, default=4, help="client threads per demo (default 4)")
    demos.add_argument("--ops", type=_positive_int, default=6, help="operations per client (default 6)")
    demos.add_argument("--seed", type=_positive_int, default=7, help="random seed for the clients' choices (default 7)")
    _add_backend_args(demos)
    _add_profile_args(demos)

    cal = sub.add_parser(
        "calibrate", help="measure a DynamoDB with a bounded set of probes and write the aws-like profile it matches"
    )
    cal.add_argument(
        "--out", type=_text, default="calibrated-profile.json", metavar="FILE", help="the profile file to write"
    )
    cal.add_argument("--yes", action="store_true", help="start without asking (the request count is still printed)")
    _add_backend_args(cal)
    add_workload_parser(sub, _add_backend_args, _add_profile_args)

    why = sub.add_parser("explain", help="why a recorded run broke its rules: witnesses and a linearizability check")
    why.add_argument("file", type=_text, help="a .jsonl history exported by the lab")
    why.add_argument("--budget", type=float, default=5.0, help="seconds the linearizability check may take (default 5)")
    why.add_argument("--json", action="store_true", help="one object: the witnesses by invariant key, and the check")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return {
            "list": cmd_list,
            "run": cmd_run,
            "walkthrough": cmd_walkthrough,
            "serve": cmd_serve,
            "sweep": cmd_sweep,
            "demos": cmd_demos,
            "explain": cmd_explain,
            "calibrate": cmd_calibrate,
            "workload": cmd_workload,
        }[args.command](args)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM before a command's own handler (interrupts.Terminated)
        return interrupts.report(e)


# -- list ------------------------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    for pattern in all_patterns().values():
        print(f"{pattern.seed}  {pattern.name:<22} {pattern.title}")
        for variant in pattern.variants.values():
            print(f"      --variant {variant.name:<18} {'safe' if variant.safe else 'RACY'}  {variant.description}")
        for option in pattern.options.values():
            special = [
                f"{v}: {pattern.variant_default(v, option.name)}"
                for v in pattern.variants
                if pattern.variant_default(v, option.name) != option.default
            ]
            extra = f" (default in {'; '.join(special)})" if special else ""
            print(f"      --set {f'{option.name}={option.default}':<24} {option.help}{extra}")
    return 0


# -- run -------------------------------------------------------------------------------------------------------


def config_from_args(args: argparse.Namespace) -> ValidRun:
    options = pattern_options(args.set, args.gsi_lag_ms)
    config = RunConfig(
        pattern=args.pattern,
        variant=args.variant,
        threads=args.threads,
        ops_per_client=args.ops,
        duration_s=args.duration,
        options=options,
        retry=RetryPolicy(args.retry_mode, args.max_attempts),
        lost_response_share=args.lost_responses,
        latency_ms=args.latency_ms,
        table_name=args.table,
        keep_table=args.keep_table,
        allow_foreign_table=args.allow_foreign_table,
        max_threads=args.max_threads,
        seed=args.seed,
        max_calls=args.max_calls,
        processes=args.processes,
        cluster=args.cluster,
        profile=_profile(args),
    )
    return config.validated()  # bad input fails here, before any server starts


def cmd_run(args: argparse.Namespace) -> int:
    from engine.run.summary import render_text, summary

    valid = config_from_args(args)
    if not 0.0 <= args.throttle_share <= 1.0:
        raise BadInput(f"--throttle-share must be from 0 to 1, got {args.throttle_share}", "e.g. --throttle-share 0.2")
    if args.history is not None:
        args.history = history_target(args.history)
        check_history_path(args.history)
    backend = _backend(args)
    if backend.kind is BackendKind.AWS and valid.config.max_calls is None:
        valid = valid.with_max_calls(AWS_DEFAULT_MAX_CALLS)
    config = valid.config
    if args.throttle_share and backend.kind is not BackendKind.EMBEDDED:
        raise BadInput(
            "--throttle-share needs the embedded server (it injects the throttling)",
            "leave out --endpoint-url/--aws, or leave out --throttle-share",
        )
    if config.cluster is not None:
        from engine.clients.cluster.home import check_cluster

        # An unreachable cluster is one line, before the embedded server starts (seconds sooner) and any table.
        check_cluster(config.cluster, backend)
    with backend:
        if args.throttle_share and backend.server is not None:
            backend.server.configure(throttle_share=args.throttle_share)
        if backend.kind is BackendKind.AWS:
            info = backend.describe()  # before the first write: where this is going, never credentials
            print(
                f"AWS account {info.get('account')} region {info['region']}: creating a tagged ddblab-* "
                f"pay-per-request table; no operation starts after {config.max_calls} calls",
                file=sys.stderr,
            )
        run = Run(valid, backend)
        start_and_wait(run, quiet=args.json)
        data = summary(run)
    # The file first: a reader that goes away while the summary prints (`| head`, quitting `less`) ends the CLI
    # there, and the calls would be lost with it.
    count, failure = 0, None
    if args.history is not None:
        try:
            count = run.history.export(args.history, meta={"summary": data})
        except OSError as e:
            failure = e.strerror or str(e)
    try:
        print(json.dumps(data, default=str) if args.json else render_text(data), flush=True)
    except OutputLost as e:
        if args.history is None or failure is not None:
            raise
        # The calls are safe: the one line says where (the "history:" line below is not reached).
        raise OutputLost(e.problem, f"the {count} calls are in {args.history}; {e.fix}") from None
    if failure is not None:
        raise LabError(
            f"could not write the history to {args.history!r}: {failure}",
            "the summary above is complete; rerun with a writable --history path",
        )
    if args.history is not None:
        print(f"history: {count} calls written to {args.history}", file=sys.stderr)
    if run.state is RunState.FAILED:
        print(f"error: {run.error}", file=sys.stderr)
        return run.error.exit_code if run.error else 1
    return EXIT_STOPPED if run.state is RunState.STOPPED else 0
