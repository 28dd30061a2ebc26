"""python -m engine  list | run | walkthrough | serve | sweep

Exit status: 0 when the command completed (whatever the invariants say), 2 for bad arguments, 1 when it
could not run (unreachable endpoint, missing or rejected credentials, a missing permission, server died).
Errors are one line naming the problem and the fix.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from engine.backend import RETRY_MODES, Backend, BackendKind, BackendSpec, RetryPolicy
from engine.errors import BadInput, LabError
from engine.patterns import all_patterns, get_pattern
from engine.runner import AWS_DEFAULT_MAX_CALLS, DEFAULT_MAX_THREADS, Run, RunConfig, RunState
from engine.server.profile import KNOBS, ProfileSpec, ServerProfile


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse's usage dump is noise for a typo: one line with the problem and where to look.
        self.exit(2, f"error: {message} — see `{self.prog} --help`\n")


def _positive_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _add_backend_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("backend (default: the embedded DynamoDB, started for this command)")
    g.add_argument("--endpoint-url", help="any DynamoDB-compatible endpoint, e.g. http://127.0.0.1:8000")
    g.add_argument("--aws", action="store_true", help="real AWS DynamoDB (needs --confirm-aws)")
    g.add_argument("--confirm-aws", action="store_true", help="yes, create tables and make calls on real AWS")
    g.add_argument("--region", help="AWS region (default: AWS_REGION or us-east-1)")


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


def _profile(args: argparse.Namespace) -> ProfileSpec:
    return ProfileSpec.parse(args.profile, _options(args.profile_set) if args.profile_set else None)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m engine", description="A live laboratory for DynamoDB concurrency.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sub.add_parser("list", help="list the patterns, their variants and knobs")

    run = sub.add_parser("run", help="run N concurrent clients of one pattern variant and check its invariants")
    run.add_argument("pattern", help="name or seed number, e.g. optimistic-locking or 23")
    run.add_argument("--variant", help="default: the pattern's safe variant")
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
    run.add_argument("--duration", type=_number, help="time limit in seconds (with or instead of --ops)")
    run.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a pattern knob (see list)")
    run.add_argument("--gsi-lag-ms", type=_number, help="simulated GSI lag (gsi-consistency; embedded server)")
    run.add_argument("--retry-mode", default="standard", choices=RETRY_MODES, help="botocore retry mode")
    run.add_argument("--max-attempts", type=_positive_int, default=3, help="botocore attempts per call (default 3)")
    run.add_argument(
        "--lost-responses",
        type=_number,
        metavar="SHARE",
        help="share of writes whose response is lost after the server applied them (0..1)",
    )
    run.add_argument("--latency-ms", type=_number, default=0.0, help="added client-side latency per call")
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
        help=f"stop the run after this many calls (default on AWS: {AWS_DEFAULT_MAX_CALLS})",
    )
    run.add_argument("--history", metavar="FILE", help="export every call to FILE (.jsonl or .csv)")
    run.add_argument("--json", action="store_true", help="print the summary as one JSON object, nothing else")
    _add_backend_args(run)
    _add_profile_args(run)

    walk = sub.add_parser("walkthrough", help="replay a seed's 'In practice' scene in the seed's call-log format")
    walk.add_argument("pattern", help="name or seed number (22..29), or 'all'")
    walk.add_argument(
        "--variant", help="a variant's own scene, e.g. 23 --variant version-attribute (seed 004's version attribute)"
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
    sweep.add_argument("--ops", type=_positive_int, default=20)
    sweep.add_argument(
        "--repeats", type=_positive_int, default=1, help="runs per point; the table shows mean [min–max] (default 1)"
    )
    sweep.add_argument("--variants", help="comma-separated variants (default: all of the pattern's)")
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
    demos.add_argument("--out", default=None, metavar="DIR", help="where to write them (default: the repo's demos/)")
    demos.add_argument("--threads", type=_positive_int, default=4, help="client threads per demo (default 4)")
    demos.add_argument("--ops", type=_positive_int, default=6, help="operations per client (default 6)")
    demos.add_argument("--seed", type=_positive_int, default=7, help="random seed for the clients' choices (default 7)")
    _add_backend_args(demos)
    _add_profile_args(demos)
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
        }[args.command](args)
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


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


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise BadInput(f"--set {pair!r} is not NAME=VALUE", "write it like --set accounts=4")
        options[name.strip()] = value.strip()
    return options


def _backend(args: argparse.Namespace) -> Backend:
    spec = BackendSpec.parse(args.endpoint_url, aws=args.aws, confirm_aws=args.confirm_aws, region=args.region)
    profile = _profile(args)
    if profile.simulated and spec.kind is BackendKind.AWS:
        raise BadInput("--profile aws-like simulates AWS on the embedded server; on AWS it is real", "drop --profile")
    return Backend(spec, profile=profile)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    options: dict[str, Any] = _options(args.set)
    if args.gsi_lag_ms is not None:
        options["gsi_lag_ms"] = args.gsi_lag_ms
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
    config.validated()  # bad input fails here, before any server starts
    return config


def cmd_run(args: argparse.Namespace) -> int:
    from engine.summary import render_text, summary

    config = config_from_args(args)
    if not 0.0 <= args.throttle_share <= 1.0:
        raise BadInput(f"--throttle-share must be from 0 to 1, got {args.throttle_share}", "e.g. --throttle-share 0.2")
    if args.history:
        _check_history_path(args.history)
    backend = _backend(args)
    if backend.kind is BackendKind.AWS and config.max_calls is None:
        config = dataclasses.replace(config, max_calls=AWS_DEFAULT_MAX_CALLS)
    if args.throttle_share and backend.kind is not BackendKind.EMBEDDED:
        raise BadInput(
            "--throttle-share needs the embedded server (it injects the throttling)",
            "leave out --endpoint-url/--aws, or leave out --throttle-share",
        )
    with backend:
        if args.throttle_share and backend.server is not None:
            backend.server.configure(throttle_share=args.throttle_share)
        if config.cluster is not None:
            from engine.cluster import check_cluster

            check_cluster(config.cluster, backend)  # an unreachable cluster is one line, before any table
        if backend.kind is BackendKind.AWS:
            info = backend.describe()  # before the first write: where this is going, never credentials
            print(
                f"AWS account {info.get('account')} region {info['region']}: creating a tagged ddblab-* "
                f"pay-per-request table; at most {config.max_calls} calls",
                file=sys.stderr,
            )
        run = Run(config, backend).start()
        _wait_with_progress(run, quiet=args.json)
        data = summary(run)
    print(json.dumps(data, default=str) if args.json else render_text(data), flush=True)
    if args.history:
        try:
            count = run.history.export(args.history, meta={"summary": data})
        except OSError as e:
            raise LabError(
                f"could not write the history to {args.history!r}: {e.strerror}",
                "the summary above is complete; rerun with a writable --history path",
            ) from None
        print(f"history: {count} calls written to {args.history}", file=sys.stderr)
    if run.state is RunState.FAILED:
        print(f"error: {run.error}", file=sys.stderr)
        return run.error.exit_code if run.error else 1
    return 0


def _check_history_path(path: str) -> None:
    """Before the run, so a typo never costs the calls it recorded."""
    if os.path.isdir(path):
        raise BadInput(
            f"--history {path!r} is a folder", f"give a file in it, e.g. --history {os.path.join(path, 'run.jsonl')}"
        )
    if not path.lower().endswith((".jsonl", ".csv")):
        raise BadInput(f"--history {path!r} must end in .jsonl or .csv", "e.g. --history run.jsonl")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise BadInput(f"--history {path!r}: cannot write in {folder}", "give a path in a writable folder")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise BadInput(f"--history {path!r} exists and cannot be overwritten", "give another file name")


def _wait_with_progress(run: Run, quiet: bool) -> None:
    show = not quiet and sys.stderr.isatty()
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: run.stop())
    try:
        while not run.wait(0.5):
            if show:
                p = run.progress()
                print(
                    f"\r{p['state']:<9} {p['elapsed_s']:6.1f}s  calls {p['calls']:>7}  ok {p['ok']:>7}  "
                    f"fail {p['fail']:>6}  info {p['info']:>4}  {p['calls_per_s']:7.0f}/s",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        print("\nstopping: the clients finish their current call, then the run is verified", file=sys.stderr)
        run.stop()
        run.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if show:
            print(file=sys.stderr)


# -- walkthrough -----------------------------------------------------------------------------------------------


def cmd_walkthrough(args: argparse.Namespace) -> int:
    from engine.walkthrough import run_walkthrough

    refs = list(all_patterns()) if args.pattern == "all" else [get_pattern(args.pattern).name]
    if args.variant is not None:
        if len(refs) > 1:
            raise BadInput("--variant needs one pattern, not 'all'", "e.g. walkthrough 23 --variant version-attribute")
        get_pattern(refs[0]).resolve_options(args.variant, {})  # unknown: refused before any server starts
    with _backend(args) as backend:
        if backend.profile.simulated:
            print(f"server profile: {backend.profile.describe()}\n")
        for ref in refs:
            pattern = get_pattern(ref)
            if len(refs) > 1:
                print(f"##### {pattern.seed} · {pattern.title}\n")
            run_walkthrough(ref, backend, sys.stdout, variant=args.variant)
    return 0


# -- serve -----------------------------------------------------------------------------------------------------

MIN_TTL_INTERVAL_S = 0.05
MAX_TTL_INTERVAL_S = 86_400.0


def cmd_serve(args: argparse.Namespace) -> int:
    from engine.server.serve import build_app, make_http_server

    if not 1 <= args.port <= 65535:
        raise BadInput(f"port {args.port} is out of range", "use 1 to 65535")
    if not MIN_TTL_INTERVAL_S <= args.ttl_interval <= MAX_TTL_INTERVAL_S:
        raise BadInput(
            f"--ttl-interval {args.ttl_interval:g} is out of range (a sweep that often would keep a core busy)"
            if args.ttl_interval < MIN_TTL_INTERVAL_S
            else f"--ttl-interval {args.ttl_interval:g} is out of range",
            f"use {MIN_TTL_INTERVAL_S:g} to {MAX_TTL_INTERVAL_S:g} seconds (default 1)",
        )
    if not args.host or any(c.isspace() or not c.isprintable() for c in args.host):
        raise BadInput(f"--host {args.host!r} is not a host name or address", "e.g. --host 127.0.0.1")
    import secrets

    from engine.server.control import TOKEN_ENV, TOKEN_HEADER

    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    profile = _profile(args)
    app = build_app(ttl_interval_s=args.ttl_interval, lab_token=token, profile=profile)
    try:
        server = make_http_server(args.host, args.port, app)
    except OSError as e:
        app.close()
        if e.errno in (98, 48):
            raise BadInput(
                f"port {args.port} on {args.host} is already in use",
                "pick another --port, or stop the program that holds it",
            ) from None
        raise BadInput(f"cannot listen on {args.host}:{args.port}: {e.strerror}", "check --host and --port") from None
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"warning: listening on {args.host}: other machines can reach this server", file=sys.stderr)
    print(
        f"embedded DynamoDB on http://{args.host}:{server.server_port} (endpoint_url for boto3); Ctrl-C to stop",
        flush=True,
    )
    print(f"profile: {profile.describe()}", flush=True)
    if not os.environ.get(TOKEN_ENV):  # set it in the environment to choose it, and to keep it off the screen
        print(f"settings (POST /_lab/config) take the header {TOKEN_HEADER}: {token}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()
        app.close()
    return 0


# -- sweep -----------------------------------------------------------------------------------------------------

MAX_SWEEP_OPS = 100_000


def thread_counts(text: str) -> list[int]:
    """ "1,2,4,8" as sorted distinct counts from 1 to the thread cap; BadInput for anything else, empty included."""
    like = "e.g. --threads 1,2,4,8"
    parts = [t.strip() for t in text.split(",")]
    if not any(parts):
        raise BadInput("--threads is empty: a sweep needs at least one thread count", like)
    try:
        counts = sorted({int(t) for t in parts if t})
    except ValueError:
        raise BadInput(f"--threads {text[:60]!r} is not a comma-separated list of whole numbers", like) from None
    if counts[0] < 1 or counts[-1] > DEFAULT_MAX_THREADS:
        raise BadInput(f"--threads {text[:60]!r}: every count must be from 1 to {DEFAULT_MAX_THREADS}", like)
    return counts


def cmd_sweep(args: argparse.Namespace) -> int:
    from engine.sweep import plan, render_sweep, summarize, sweep

    counts = thread_counts(args.threads)
    pattern = get_pattern(args.pattern)
    if not 1 <= args.ops <= MAX_SWEEP_OPS:
        raise BadInput(f"--ops {args.ops} is out of range", f"use 1 to {MAX_SWEEP_OPS} operations per client")
    variants = [v.strip() for v in args.variants.split(",") if v.strip()] if args.variants else list(pattern.variants)
    for name in variants:
        if name not in pattern.variants:
            raise BadInput(
                f"pattern {pattern.name!r} has no variant {name!r}", f"use some of: {', '.join(pattern.variants)}"
            )
    for variant in variants:  # every run of the sweep is checked before the server starts
        RunConfig(pattern=pattern.name, variant=variant, threads=counts[-1], ops_per_client=args.ops).validated()
    next(plan(counts, variants, args.repeats))  # bad --repeats fails here, before any server starts
    with _backend(args) as backend:
        frame = sweep(
            backend,
            pattern.name,
            counts,
            ops_per_client=args.ops,
            profile=backend.profile,
            repeats=args.repeats,
            variants=variants,
            progress=None if args.json else lambda msg: print(msg, file=sys.stderr),
        )
    if args.json:
        points = summarize(frame)
        records = json.loads(points.to_json(orient="records")) if not points.empty else []
        for record in records:
            mine = frame[(frame["variant"] == record["variant"]) & (frame["threads"] == record["threads"])]
            record["per_run"] = json.loads(mine.to_json(orient="records"))
        print(json.dumps(records))
    else:
        print(render_sweep(frame, pattern.name))
    failed = frame[frame["state"] == RunState.FAILED.value] if not frame.empty else frame
    if len(failed):
        print(f"error: the sweep stopped at a failed run: {failed['error'].iloc[0]}", file=sys.stderr)
        return 1
    return 0


# -- demos -----------------------------------------------------------------------------------------------------


def cmd_demos(args: argparse.Namespace) -> int:
    from pathlib import Path

    from engine.demos import DEFAULT_DIR, record_demos

    out = Path(args.out) if args.out else DEFAULT_DIR
    with _backend(args) as backend:
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
