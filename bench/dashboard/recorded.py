"""A recorded history (tests/data) repeated later and later in time: the large runs that the dashboard's
benchmark and its chart tests draw, built from real calls rather than invented ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.record.history import Call, History, read_jsonl


class Repeated:
    """A recorded run's calls, call i being call i % len of the recording, shifted later by whole spans."""

    def __init__(self, path: Path) -> None:
        source, meta = read_jsonl(path)
        self.calls = source.calls()
        self.span = max(c.complete_ns for c in self.calls) + 1_000_000
        self.summary: dict[str, Any] = meta.get("summary") or {}

    def extend(self, history: History, n_calls: int) -> None:
        """Append calls until the history has n_calls."""
        while len(history) < n_calls:
            i = len(history)
            c = self.calls[i % len(self.calls)]
            shift = (i // len(self.calls)) * self.span
            history.append(
                Call(
                    client=c.client,
                    action=c.action,
                    op=c.op,
                    key=c.key,
                    invoke_ns=c.invoke_ns + shift,
                    complete_ns=c.complete_ns + shift,
                    outcome=c.outcome,
                    error=c.error,
                    retries=c.retries,
                    detail=c.detail,
                    request=c.request,
                )
            )

    def history(self, n_calls: int) -> History:
        """A new history of n_calls calls."""
        history = History(t0_ns=0)
        self.extend(history, n_calls)
        return history
