"""python -m engine serve: the embedded DynamoDB alone, on a port, until Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from engine.backends.aws_files import check_aws_files
from engine.commands.backend_args import profile_for
from engine.errors import BadInput

MIN_TTL_INTERVAL_S = 0.05
MAX_TTL_INTERVAL_S = 86_400.0


def cmd_serve(args: argparse.Namespace) -> int:
    from engine.server.host.serve import build_app, make_http_server

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
    check_aws_files()  # moto's boto3 parses them when the app is built: one line, not a traceback
    import secrets

    from engine.server.control import TOKEN_ENV, TOKEN_HEADER

    token = os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(24)
    profile = profile_for(args)
    app = build_app(ttl_interval_s=args.ttl_interval, lab_token=token, profile=profile)
    server = None
    # Ctrl-C's handler is set before the address line (whoever reads it may send Ctrl-C at once), and even where
    # SIGINT started ignored (a script's `serve &`), as run and sweep do: the script's Ctrl-C then stops its server
    # rather than leave it holding the port. One try from the app's start closes the server and the app either way.
    try:
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            server = make_http_server(args.host, args.port, app)
        except OSError as e:
            if e.errno in (98, 48):
                raise BadInput(
                    f"port {args.port} on {args.host} is already in use",
                    "pick another --port, or stop the program that holds it",
                ) from None
            raise BadInput(
                f"cannot listen on {args.host}:{args.port}: {e.strerror}", "check --host and --port"
            ) from None
        if args.host not in ("127.0.0.1", "localhost", "::1"):
            print(f"warning: listening on {args.host}: other machines can reach this server", file=sys.stderr)
        print(
            f"embedded DynamoDB on http://{args.host}:{server.server_port} (endpoint_url for boto3); Ctrl-C to stop",
            flush=True,
        )
        print(f"profile: {profile.describe()}", flush=True)
        if not os.environ.get(TOKEN_ENV):  # set it in the environment to choose it, and to keep it off the screen
            print(f"settings (POST /_lab/config) take the header {TOKEN_HEADER}: {token}", flush=True)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        if server is not None:
            server.server_close()
        app.close()
    return 0
