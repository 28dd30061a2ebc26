"""A call as text, in the seed's log format: the call log and the hover text of the timeline."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dashboard.state.frames import details, strings
from dashboard.text.words import client_name, plural


def result_value(outcome: str, error: str) -> str:
    if outcome == "ok":
        return '"OK"'
    if outcome == "info":
        return f'"unknown: {error or "response lost"}"'
    return f'"{error or "failed"}"'


def text_or_none(value: Any) -> str | None:
    """A text column's value: None when missing (None, or NaN in a pandas string column) or empty."""
    return value if isinstance(value, str) and value else None


def call_block(row: Mapping[str, Any]) -> str:
    """One call: its request block (`>>> UpdateItem table` ...) then `=== #seq client c action ===` and the result."""
    request = text_or_none(row.get("request")) or f">>> {row.get('op', '?')}\n    key:        {row.get('key', '')}"
    detail = row.get("detail") or {}
    extra = ""
    if isinstance(detail, Mapping):
        if detail.get("reasons"):
            extra += f"\nreasons: {json.dumps(detail['reasons'])}"
        if detail.get("lost_response"):
            extra += "\n(response lost after the server applied it: injected)"
        if detail.get("attempts"):
            extra += f"\nattempts: {', '.join(str(a) for a in detail['attempts'])}"
    retries = f", {plural(int(row['retries']), 'retry', 'retries')}" if int(row.get("retries", 0) or 0) else ""
    title = (
        f"=== #{int(row['seq'])} {client_name(int(row['client']))} {row.get('action', '')} · "
        f"{float(row['latency_ms']):.1f} ms at {float(row['start_s']):.3f} s{retries} ==="
    )
    return f"{request}\n\n{title}\n{result_value(str(row['outcome']), str(row.get('error') or ''))}{extra}"


def last_calls(frame: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """These calls in the order they were invoked; the last `limit` when capped."""
    sub = frame.sort_values("start_s", kind="stable")
    return sub.tail(limit) if limit is not None and len(sub) > limit else sub


def call_log(frame: pd.DataFrame, limit: int | None = None) -> str:
    """The seed-format log of these calls, in the order they were invoked; the last `limit` when capped."""
    return "\n\n".join(call_block(row) for row in last_calls(frame, limit).to_dict("records"))


_MAX_HOVER_LINES = 12
_MAX_HOVER_WIDTH = 110


def _hover_request(request: str) -> str:
    lines = request.splitlines()
    if len(lines) > _MAX_HOVER_LINES:
        lines = lines[: _MAX_HOVER_LINES - 1] + [f"    ... (+{len(lines) - _MAX_HOVER_LINES + 1} lines)"]
    lines = [ln if len(ln) <= _MAX_HOVER_WIDTH else ln[: _MAX_HOVER_WIDTH - 1] + "…" for ln in lines]
    return "<br>".join(html.escape(ln).replace("  ", "&nbsp;&nbsp;") for ln in lines)


def hover_texts(rows: pd.DataFrame, labels: Sequence[str]) -> list[str]:
    """Plotly hover HTML: the call as the seed logs it (request, then the result), clipped to a readable size.

    Request texts, actions, results and labels repeat (a counter run sends one request thousands of times), so
    each distinct one is escaped once: a replay redraws thousands of hovers on every tick.
    """
    n = len(rows)
    if n == 0:
        return []
    requests = rows["request"].tolist() if "request" in rows else [None] * n
    ops, keys = strings(rows["op"]), strings(rows["key"])
    actions, outcomes, errors = strings(rows["action"]), strings(rows["outcome"]), strings(rows["error"])
    seq, client = rows["seq"].tolist(), rows["client"].tolist()
    lat, start = rows["latency_ms"].tolist(), rows["start_s"].tolist()
    retries = rows["retries"].tolist() if "retries" in rows else [0] * n
    ds = details(rows)
    heads: dict[str, str] = {}
    escaped_actions: dict[str, str] = {}
    tails: dict[tuple[str, str, str], tuple[str, str]] = {}
    out = []
    for i in range(n):
        request = text_or_none(requests[i]) or f">>> {ops[i]}\n    key:        {keys[i]}"
        head = heads.get(request)
        if head is None:
            head = heads[request] = _hover_request(request)
        action = escaped_actions.get(actions[i])
        if action is None:
            action = escaped_actions[actions[i]] = html.escape(actions[i])
        tail_key = (outcomes[i], errors[i], labels[i])
        tail = tails.get(tail_key)
        if tail is None:
            tail = tails[tail_key] = (html.escape(result_value(outcomes[i], errors[i])), html.escape(labels[i]))
        d = ds[i]
        extra = ""
        if d:
            if d.get("reasons"):
                extra += "<br>reasons: " + html.escape(", ".join(map(str, d["reasons"])))
            if d.get("lost_response"):
                extra += "<br>(response lost after the server applied it)"
        more = f", {plural(int(retries[i]), 'retry', 'retries')}" if retries[i] else ""
        out.append(
            f"{head}<br><br>=== #{int(seq[i])} {client_name(int(client[i]))} {action} · "
            f"{lat[i]:.1f} ms at {start[i]:.3f} s{more} ===<br>{tail[0]}{extra}<br><b>{tail[1]}</b>"
        )
    return out
