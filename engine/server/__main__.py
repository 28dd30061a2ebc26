"""Child-process entry: python -m engine.server --host H --port P [--parent-pid PID].

Prints one line "LISTENING <port>" on stdout once it accepts connections (port 0 picks a free port, so the
parent never races another process for it), then serves until SIGTERM/SIGINT or the parent's death.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys

from engine.server.control import TOKEN_ENV
from engine.server.host.orphan import die_with_parent
from engine.server.host.serve import build_app, make_http_server
from engine.server.profile import ProfileSpec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--parent-pid", type=int, default=0)
    parser.add_argument("--ttl-interval", type=float, default=1.0)
    parser.add_argument("--profile", default="exact", help="default profile, as a ddblab:profile tag value")
    args = parser.parse_args(argv)
    if args.parent_pid:
        die_with_parent(args.parent_pid)
    profile = ProfileSpec.from_tag(args.profile)
    app = build_app(ttl_interval_s=args.ttl_interval, lab_token=os.environ.pop(TOKEN_ENV, ""), profile=profile)
    try:
        server = make_http_server(args.host, args.port, app)
    except OSError as e:
        print(f"ERROR {e.strerror or e}", flush=True)
        return 3
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # moto's modules and botocore's service models are about 90,000 objects that live as long as the process:
    # out of the collector's sight, a full collection walks only the tables' items (less CPU per request).
    gc.freeze()
    print(f"LISTENING {server.server_port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
