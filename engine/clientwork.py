"""One client's work, run to its end: how it failed (a crash, a call error, a bug), or None. Shared by the runner's
threads and the pool's client processes, so that neither needs the other."""

from __future__ import annotations

import traceback
from typing import Any

from engine.calls import CallError, ClientContext, ClientCrash
from engine.patterns.base import Pattern


def client_failure(pattern: Pattern, ctx: ClientContext) -> dict[str, Any] | None:
    """Run one client to its end; how it failed (kind, message, trace), or None when it did not."""
    ctx.count_cpu()  # from here: the whole client, up to its last op, crash or return included
    try:
        pattern.client(ctx)
    except ClientCrash as e:
        return {"kind": "crash", "message": str(e), "trace": None}
    except CallError as e:
        return {"kind": "error", "message": f"{e.call.op} {e.code}", "trace": None}
    except Exception as e:
        return {"kind": "error", "message": f"{type(e).__name__}: {e}", "trace": traceback.format_exc(limit=4)}
    finally:
        ctx.count_cpu()
    return None
