"""A run's summary: the stable --json schema, and the same facts as readable text."""

from __future__ import annotations

from typing import Any

from engine.history import dumps
from engine.runner import Run, conflicts


def summary(run: Run) -> dict[str, Any]:
    """The --json object. Scripts depend on these keys: add, never rename."""
    counts = run.history.counts()
    duration = run.elapsed_s()
    cfg = run.config
    backend = run.backend
    return {
        "pattern": cfg.pattern,
        "variant": cfg.variant,
        "threads": cfg.threads,
        "processes": cfg.processes,
        "cluster": cfg.cluster,  # the Dask scheduler whose workers ran the clients (--cluster), or None
        "ops_per_client": cfg.ops_per_client,
        "duration_limit_s": cfg.duration_s,
        "backend": backend.kind.value,
        "endpoint_url": backend.endpoint_url,
        "table": run.table.name if run.table else cfg.table_name,
        "state": run.state.value,
        "error": str(run.error) if run.error else None,
        "duration_s": round(duration, 3),
        "calls": counts["calls"],
        "calls_per_s": round(counts["calls"] / duration, 1) if duration > 0 else 0.0,
        "client_cpu_cores": run.client_cpu(),  # per client process: near 1.0, it is CPU-bound
        "outcomes": {"ok": counts["ok"], "fail": counts["fail"], "info": counts["info"]},
        "errors": dict(sorted(counts["errors"].items())),
        "conflicts": conflicts(counts["errors"], counts["refusals"], run.pattern_cls.business_refusals),
        "retries": counts["retries"],
        "retry_policy": {"mode": cfg.retry.mode, "max_attempts": cfg.retry.max_attempts},
        "faults": {"lost_response_share": cfg.lost_response_share, "latency_ms": cfg.latency_ms},
        "options": dict(run.options.values),
        "client_crashes": sum(1 for e in run.worker_errors if e["kind"] == "crash"),
        "client_errors": [
            {k: v for k, v in e.items() if k != "trace"} for e in run.worker_errors if e["kind"] != "crash"
        ][:20],
        "invariants": [inv.as_dict() for inv in run.invariants],
    }


def render_text(data: dict[str, Any]) -> str:
    """The human summary printed by `python -m engine run`."""
    ops = data["ops_per_client"] or "∞"
    limit = f" (≤ {data['duration_limit_s']:g} s)" if data["duration_limit_s"] else ""
    where = f"{data['backend']} {data['endpoint_url'] or ''}".strip()
    spread = f" in {data['processes']} processes" if data.get("processes", 1) > 1 else ""
    if data.get("cluster"):
        spread = f" on the workers of {data['cluster']}"
    out = [
        f"{data['pattern']} / {data['variant']}: {data['threads']} threads{spread} × {ops} ops{limit} on {where}, "
        f"table {data['table']}"
    ]
    if data["error"]:
        out.append(f"ERROR: {data['error']}")
    o = data["outcomes"]
    out.append(f"calls      {data['calls']} in {data['duration_s']:.2f} s ({data['calls_per_s']:.0f} calls/s)")
    if data.get("client_cpu_cores"):
        out.append(f"client CPU {client_cpu_text(data['client_cpu_cores'])}")
    out.append(f"outcomes   ok {o['ok']}   fail {o['fail']}   info {o['info']} (unknown: response lost)")
    out.append(
        f"conflicts  {data['conflicts']}   retries (botocore) {data['retries']}   "
        f"retry policy {data['retry_policy']['mode']}/{data['retry_policy']['max_attempts']}"
    )
    if data["errors"]:
        out.append("errors     " + ", ".join(f"{code} {n}" for code, n in data["errors"].items()))
    if data["client_crashes"]:
        out.append(f"crashes    {data['client_crashes']} client(s) crashed mid-operation (injected)")
    for err in data["client_errors"][:5]:
        out.append(f"client {err['client']} stopped: {err['message']}")
    if data["invariants"]:
        out.append("invariants")
        width = max(len(inv["name"]) for inv in data["invariants"])
        for inv in data["invariants"]:
            verdict = "PASS" if inv["holds"] else "FAIL"
            out.append(
                f"  {verdict}  {inv['name']:<{width}}  expected {_short(inv['expected'])}, "
                f"observed {_short(inv['observed'])}"
                + (f"  ({inv['violations']} violations)" if inv["violations"] else "")
            )
            out.append(f"        {inv['explanation']}")
    return "\n".join(out)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


SATURATED = 0.85  # of a core: a client process that busy has little left to start another call with


def client_cpu_text(cores: list[float]) -> str:
    """ "0.97 of a core", or "0.95, 0.97 of a core each (2 processes)", and what a saturated process means."""
    text = (
        f"{cores[0]:.2f} of a core"
        if len(cores) == 1
        else f"{', '.join(f'{c:.2f}' for c in cores)} of a core each ({len(cores)} processes)"
    )
    if max(cores) >= SATURATED:
        text += ": CPU-bound (Python runs one thread at a time per process), so more threads add few calls"
    return text
