"""A run's summary: the stable --json schema, and the same facts as readable text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.patterns.base import GiveUp
from engine.record.calls import THROTTLED
from engine.record.codes import conflicts
from engine.record.history import History, dumps
from engine.run.state import RunState

if TYPE_CHECKING:  # the summary reads a run; it never makes one
    from engine.run.runner import Run

THROTTLE_CODES = THROTTLED  # one list: the codes clients retry as throttling are the ones counted as such
CAUSES = ("condition_refused", "transaction_conflict", "throttled")


def live_causes(counts: Mapping[str, Any], business: Mapping[str, str] | None = None) -> dict[str, int]:
    """conflicts_by_cause as far as History.counts() can tell while a run goes on: refusals by error code (less
    business refusals by action). A cancelled transaction's cause is in its reasons, read only at the end, so
    cancellations count apart ("cancelled") until then."""
    errors: Mapping[str, int] = counts.get("errors") or {}
    refusals: Mapping[tuple[str, str], int] = counts.get("refusals") or {}
    business = business or {}
    not_business = {
        code: n - sum(m for (action, c), m in refusals.items() if c == code and business.get(action) == code)
        for code, n in errors.items()
    }
    return {
        "condition_refused": not_business.get("ConditionalCheckFailedException", 0),
        "transaction_conflict": not_business.get("TransactionConflictException", 0),
        "throttled": sum(n for code, n in not_business.items() if code in THROTTLE_CODES),
        "cancelled": not_business.get("TransactionCanceledException", 0),
    }


def conflicts_by_cause(history: History, business: dict[str, str] | None = None) -> dict[str, int]:
    """Refused calls by why: a condition another client's write made false, a transaction that collided with
    another one (TransactionConflict), the server's throughput ceiling (after botocore's own retries). A
    cancelled transaction counts under its reasons' cause; business refusals (sold out) are left out."""
    causes = dict.fromkeys(CAUSES, 0)
    frame = history.snapshot()
    if frame.empty:
        return causes
    errors = frame["error"].astype(str)
    refused = frame[errors != ""]
    business = business or {}
    cancelled: list[int] = []
    for seq, action, code in zip(refused["seq"], refused["action"].astype(str), refused["error"].astype(str)):
        if code == "TransactionCanceledException":
            cancelled.append(int(seq))
        elif code == "TransactionConflictException":
            causes["transaction_conflict"] += 1
        elif code in THROTTLE_CODES:
            causes["throttled"] += 1
        elif code == "ConditionalCheckFailedException" and business.get(action) != code:
            causes["condition_refused"] += 1
    actions = dict(zip(frame["seq"].astype(int), frame["action"].astype(str)))
    for seq, detail in zip(cancelled, history.details(cancelled)):
        reasons = detail.get("reasons", ())
        if "TransactionConflict" in reasons:
            causes["transaction_conflict"] += 1
        elif "ThrottlingError" in reasons:
            causes["throttled"] += 1
        elif business.get(actions.get(seq, "")) != "TransactionCanceledException":
            causes["condition_refused"] += 1
    return causes


def cancellation_reasons(history: History) -> dict[str, int]:
    """Cancelled transactions (TransactionCanceledException) by the reasons DynamoDB gave, one count per reason
    code per cancelled call: how many collided (TransactionConflict), were refused (ConditionalCheckFailed),
    throttled, and so on. The error count alone hides which."""
    frame = history.snapshot()
    if frame.empty:
        return {}
    cancelled = [
        int(s) for s, e in zip(frame["seq"], frame["error"].astype(str)) if e == "TransactionCanceledException"
    ]
    reasons: dict[str, int] = {}
    for detail in history.details(cancelled):
        for code in sorted(set(detail.get("reasons", ())) - {"None"}):
            reasons[code] = reasons.get(code, 0) + 1
    return dict(sorted(reasons.items()))


def gave_up(history: History, rule: GiveUp | None, options: Mapping[str, Any]) -> dict[str, Any] | None:
    """The operations the clients abandoned (their last attempt refused for a reason they retry), or None for a
    pattern whose clients never give up: {"operations": n, "what": "changes", "why": "..."}."""
    if rule is None:
        return None
    frame = history.snapshot()
    refused = [int(s) for s in frame.loc[frame["outcome"].astype(str) == "fail", "seq"]] if not frame.empty else []
    codes = dict(zip(frame["seq"].astype(int), frame["error"].astype(str))) if refused else {}
    actions = dict(zip(frame["seq"].astype(int), frame["action"].astype(str))) if refused else {}
    n = sum(
        1 for seq, detail in zip(refused, history.details(refused)) if rule.gave_up(actions[seq], codes[seq], detail)
    )
    try:
        why = rule.why.format(**options)
    except (KeyError, IndexError, ValueError):
        why = rule.why
    return {"operations": n, "what": rule.what, "why": why}


def gave_up_text(given_up: Mapping[str, Any] | None) -> str | None:
    """One line for the summary and the dashboard: what the clients abandoned, or None when nothing was."""
    if not given_up or not given_up.get("operations"):
        return None
    return (
        f"{given_up['operations']:,} {given_up['what']} given up, {given_up['why']}: never done, and the verdicts "
        "judge only the work that was"
    )


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
        # why a stopped run ended before its planned end (the user; its call budget); None otherwise
        "stop_reason": run.stop_reason if run.state is RunState.STOPPED else None,
        "error": str(run.error) if run.error else None,
        "duration_s": round(duration, 3),
        "calls": counts["calls"],
        "calls_per_s": round(counts["calls"] / duration, 1) if duration > 0 else 0.0,
        "client_cpu_cores": run.client_cpu(),  # per client process: near 1.0, it is CPU-bound
        "outcomes": {"ok": counts["ok"], "fail": counts["fail"], "info": counts["info"]},
        "errors": dict(sorted(counts["errors"].items())),
        "cancellation_reasons": cancellation_reasons(run.history),
        "conflicts": conflicts(counts["errors"], counts["refusals"], run.pattern_cls.business_refusals),
        "conflicts_by_cause": conflicts_by_cause(run.history, dict(run.pattern_cls.business_refusals)),
        # The embedded server's profile for this run's table; aws-like is SIMULATED, and says so.
        "profile": cfg.profile.as_dict(),
        "simulated": run.server_stats,
        "retries": counts["retries"],
        "retry_policy": {"mode": cfg.retry.mode, "max_attempts": cfg.retry.max_attempts},
        "faults": {"lost_response_share": cfg.lost_response_share, "latency_ms": cfg.latency_ms},
        "options": dict(run.options.values),
        "client_crashes": sum(1 for e in run.worker_errors if e["kind"] == "crash"),
        "client_errors": [
            {k: v for k, v in e.items() if k != "trace"} for e in run.worker_errors if e["kind"] != "crash"
        ][:20],
        # operations a safe client abandoned after its retries (None: the pattern's clients never give up)
        "gave_up": gave_up(run.history, run.pattern_cls.gives_up, dict(run.options.values)),
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
    profile = data.get("profile") or {}
    if profile.get("simulated"):
        knobs = " ".join(f"{k}={v:g}" for k, v in profile.get("knobs", {}).items())
        out.append(f"profile    aws-like, SIMULATED by the embedded server ({knobs})")
        stats = data.get("simulated") or {}
        if stats:
            out.append(
                "simulated  "
                + "   ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(stats.items()) if k != "requests")
                + f"   (of {stats.get('requests', 0)} requests to the table)"
            )
    if data.get("state") == "stopped":
        planned = f" ({data['threads']} × {data['ops_per_client']} ops were planned)" if data["ops_per_client"] else ""
        out.append(
            f"STOPPED    {data.get('stop_reason') or 'stopped early'}, after {data['calls']:,} calls{planned}: the "
            "verdicts below judge the calls made, not a whole run"
        )
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
    causes = data.get("conflicts_by_cause") or {}
    if any(causes.values()):
        out.append(
            f"by cause   condition refused {causes.get('condition_refused', 0)}   "
            f"transaction conflict {causes.get('transaction_conflict', 0)}   throttled {causes.get('throttled', 0)}"
        )
    if data["errors"]:
        reasons = data.get("cancellation_reasons") or {}

        def why(code: str) -> str:
            if code != "TransactionCanceledException" or not reasons:
                return ""
            return " (reasons: " + ", ".join(f"{r} {n}" for r, n in reasons.items()) + ")"

        out.append("errors     " + ", ".join(f"{code} {n}{why(code)}" for code, n in data["errors"].items()))
    if data["client_crashes"]:
        out.append(f"crashes    {data['client_crashes']} client(s) crashed mid-operation (injected)")
    for err in data["client_errors"][:5]:
        out.append(err["message"] if err.get("kind") == "lost" else f"client {err['client']} stopped: {err['message']}")
    given_up = gave_up_text(data.get("gave_up"))
    if given_up:
        out.append(f"gave up    {given_up}")
    if data["invariants"]:
        out.append("invariants")
        width = max(len(inv["name"]) for inv in data["invariants"])
        column = max(len(verdict_of(inv)) for inv in data["invariants"])  # CANNOT JUDGE is wider than PASS
        for inv in data["invariants"]:
            verdict = verdict_of(inv)
            out.append(
                f"  {verdict:<{column}}  {inv['name']:<{width}}  expected {_short(inv['expected'])}, "
                f"observed {_short(inv['observed'])}"
                + (f"  ({inv['violations']} violations)" if inv["violations"] else "")
            )
            out.append(f"        {inv['explanation']}")
    return "\n".join(out)


def verdict_of(inv: dict[str, Any]) -> str:
    """PASS, FAIL or CANNOT JUDGE (holds None: the history cannot decide; never counted as a PASS)."""
    holds = inv.get("holds")
    return "CANNOT JUDGE" if holds is None else "PASS" if holds else "FAIL"


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
