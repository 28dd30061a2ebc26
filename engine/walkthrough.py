"""Replaying a seed's "In practice" scene: real calls, printed in the seed's call-log format as they happen."""

from __future__ import annotations

from typing import Any, TextIO

from engine.backend import Backend, RetryPolicy
from engine.calllog import NO_RESULT, CallLog
from engine.calls import Caller, CallError
from engine.faults import FaultInjector, FaultPlan
from engine.history import History
from engine.patterns import Pattern, RunOptions, get_pattern
from engine.tables import PREFIX, Table, drop_table, open_table


class Walk:
    """What a pattern's walkthrough uses: recorded calls that are also printed, and titled results."""

    def __init__(self, table: Table, log: CallLog, history: History) -> None:
        self.table = table
        self.log = log
        self.history = history
        self.caller = Caller(table.client, history, client_id=0)
        self.client = table.client

    @property
    def name(self) -> str:
        return self.table.name

    def call(self, op: str, *, action: str = "walkthrough", key: str = "", show: bool = True,
             client_id: int = 0, **params: Any) -> dict[str, Any] | CallError:
        """Print the request (unless show=False), make it, and return the response or the error (not raised)."""
        if op not in ("TransactWriteItems", "TransactGetItems"):
            params.setdefault("TableName", self.table.name)
        if show:
            self.log.request(op, params)
        caller = self.caller if client_id == 0 else Caller(self.table.client, self.history, client_id)
        try:
            return caller.call(action, op, key=key or _key_text(params), **params)
        except CallError as e:
            return e

    def result(self, title: str, value: Any = NO_RESULT) -> None:
        self.log.result(title, value)

    def note(self, text: str) -> None:
        self.log.note(text)


def outcome(response: dict[str, Any] | CallError) -> str:
    """The seed prints "OK" or the exception's name."""
    return response.code if isinstance(response, CallError) else "OK"


def _key_text(params: dict[str, Any]) -> str:
    key = params.get("Key") or params.get("Item") or {}
    return f"{key.get('PK', '')}|{key.get('SK', '')}" if key else ""


def run_walkthrough(pattern_ref: str | int, backend: Backend, stream: TextIO | None = None,
                    *, keep_table: bool = False) -> tuple[str, History]:
    """Run one pattern's walkthrough on a fresh table; returns the printed text and the recorded calls."""
    pattern_cls: type[Pattern] = get_pattern(pattern_ref)
    pattern = pattern_cls()
    client = backend.client(threads=16, retry=RetryPolicy("standard", 3))
    injector = FaultInjector(client, FaultPlan())
    options = RunOptions(pattern_cls.safe_variant(), 1, 1,
                         pattern_cls.resolve_options(pattern_cls.safe_variant(), {}))
    name = f"{PREFIX}p{pattern_cls.seed}-{pattern_cls.name}"
    table = open_table(client, f"p{pattern_cls.seed}-{pattern_cls.name}", pattern.table_spec(options),
                       name=_free_name(client, name))
    log = CallLog(stream)
    history = History()
    try:
        pattern.walkthrough(Walk(table, log, history))
    finally:
        if not keep_table:
            drop_table(table)
        injector.close()
    return log.text(), history


def _free_name(client: Any, name: str) -> str:
    existing = set(client.list_tables().get("TableNames", []))
    if name not in existing:
        return name
    i = 2
    while f"{name}-{i}" in existing:
        i += 1
    return f"{name}-{i}"
