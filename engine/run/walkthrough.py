"""Replaying a seed's "In practice" scene: real calls, printed in the seed's call-log format as they happen."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from botocore.exceptions import BotoCoreError, ClientError

from engine.backends.backend import Backend, RetryPolicy
from engine.backends.faults import FaultInjector, FaultPlan
from engine.backends.tables import PREFIX, Table, TableSpec, create_table, drop_table
from engine.errors import BadInput, LabError, TableNameTaken
from engine.patterns import Pattern, RunOptions, get_pattern
from engine.record.calllog import NO_RESULT, CallLog
from engine.record.calls import CONTENTION_CODES, Caller, CallError, TransactionCanceled, jittered
from engine.record.history import History

MAX_NAME_TRIES = 100  # names refused because another walkthrough claimed them a moment before
# A scene's set-up write is not what the scene shows: throttled (a lowered simulated ceiling, or AWS) or in a
# transaction's way, it waits and is sent again, as AWS advises, for this long at most.
SETUP_PATIENCE_S = 30.0


class SceneStopped(Exception):
    """A call the scene cannot go on without failed (a set-up write, or a read whose answer the scene prints)."""

    def __init__(self, op: str, error: CallError) -> None:
        super().__init__(f"{op} failed: {error.code}")
        self.op = op
        self.error = error


class Walk:
    """What a pattern's walkthrough uses: recorded calls that are also printed, and titled results."""

    def __init__(self, table: Table, log: CallLog, history: History) -> None:
        self.table = table
        self.log = log
        self.history = history
        self.caller = Caller(table.client, history, client_id=0)
        self.client = table.client
        self._rng = random.Random()  # set-up's backoff

    @property
    def name(self) -> str:
        return self.table.name

    def call(
        self,
        op: str,
        *,
        action: str = "walkthrough",
        key: str = "",
        show: bool = True,
        client_id: int = 0,
        **params: Any,
    ) -> dict[str, Any] | CallError:
        """Print the request (unless show=False), make it, and return the response or the error (not raised)."""
        if op not in ("TransactWriteItems", "TransactGetItems"):
            params.setdefault("TableName", self.table.name)
        if op == "GetItem" or (op in ("Query", "Scan") and "IndexName" not in params):
            # A walkthrough reads to show what the table holds: an eventually consistent read right after a write
            # may be stale, on AWS and under the simulated aws-like profile (where the scene then broke). A GSI
            # cannot be read consistently, and the GSI scenes show exactly that.
            params.setdefault("ConsistentRead", True)
        if show:
            self.log.request(op, params)
        caller = self.caller if client_id == 0 else Caller(self.table.client, self.history, client_id)
        try:
            return caller.call(action, op, key=key or _key_text(params), **params)
        except CallError as e:
            return e

    def put(self, item: dict[str, Any]) -> None:
        """A set-up PutItem (not printed); see setup."""
        self.setup("PutItem", Item=item)

    def setup(self, op: str, **params: Any) -> dict[str, Any]:
        """A set-up call (not printed), sent again after a backoff while refused for contention only."""
        deadline = time.monotonic() + SETUP_PATIENCE_S
        for attempt in itertools.count():
            response = self.call(op, action="set-up", show=False, **params)
            if not isinstance(response, CallError):
                return response
            if not _contention_only(response) or time.monotonic() >= deadline:
                raise SceneStopped(f"{op} (set-up)", response)
            time.sleep(jittered(self._rng, attempt, 0.01, 1.0))
        raise AssertionError("unreachable")

    def read(self, op: str = "GetItem", *, show: bool = True, client_id: int = 0, **params: Any) -> dict[str, Any]:
        """A read whose answer the scene goes on with: its response, or SceneStopped (never an error taken for an
        answer)."""
        response = self.call(op, show=show, client_id=client_id, **params)
        if isinstance(response, CallError):
            raise SceneStopped(op, response)
        return response

    def result(self, title: str, value: Any = NO_RESULT) -> None:
        self.log.result(title, value)

    def note(self, text: str) -> None:
        self.log.note(text)


def _contention_only(e: CallError) -> bool:
    # Unlike calls._contention, a transaction cancelled for TransactionConflict counts too: a scene's set-up is no
    # pattern that retries its own conflicts.
    if isinstance(e, TransactionCanceled):
        return all(r in ("None", "ThrottlingError", "TransactionConflict") for r in e.reasons)
    return e.code in CONTENTION_CODES


def _key_text(params: dict[str, Any]) -> str:
    key = params.get("Key") or params.get("Item") or {}
    return f"{key.get('PK', '')}|{key.get('SK', '')}" if key else ""


@dataclass(frozen=True)
class Scene:
    """A played scene: what it printed, its titled results and its calls, in order, and the error it stopped on
    (None when it played to its end)."""

    pattern: str
    seed: int
    variant: str | None  # None: the pattern's one scene, not a variant's own
    table: str
    text: str
    results: tuple[tuple[str, Any], ...]  # (title, JSON-ready value or NO_RESULT)
    history: History
    stopped: LabError | None


def run_walkthrough(
    pattern_ref: str | int,
    backend: Backend,
    stream: TextIO | None = None,
    *,
    keep_table: bool = False,
    variant: str | None = None,
) -> tuple[str, History]:
    """Run one pattern's walkthrough (or the one of `variant`, when it has its own) on a fresh table; returns
    the printed text and the recorded calls, or raises the LabError the scene stopped on."""
    scene = play_scene(pattern_ref, backend, stream, keep_table=keep_table, variant=variant)
    if scene.stopped is not None:
        raise scene.stopped
    return scene.text, scene.history


def play_scene(
    pattern_ref: str | int,
    backend: Backend,
    stream: TextIO | None = None,
    *,
    keep_table: bool = False,
    variant: str | None = None,
) -> Scene:
    """run_walkthrough's scene as a record, a stopped one included (its error is in `stopped`, not raised)."""
    pattern_cls: type[Pattern] = get_pattern(pattern_ref)
    pattern = pattern_cls()
    check_variant(pattern_cls, variant)
    scene = pattern.walkthrough_for(variant)
    safe = pattern_cls.safe_variant()
    # The table names the profile, as a run's does: a `serve` at --endpoint-url otherwise plays its own default.
    spec = backend.with_profile(
        pattern.table_spec(RunOptions(safe, 1, 1, pattern_cls.resolve_options(safe, {}))), backend.profile
    )
    client = backend.client(threads=16, retry=RetryPolicy("standard", 3))
    injector = FaultInjector(client, FaultPlan())
    table = _fresh_table(client, f"{PREFIX}p{pattern_cls.seed}-{pattern_cls.name}", spec)
    log = CallLog(stream)
    history = History()
    stopped: LabError | None = None
    try:
        scene(Walk(table, log, history))
    except SceneStopped as e:
        log.note(f"... the scene stopped: {e}")
        stopped = LabError(f"the {pattern_cls.name} scene stopped: {e}", _stopped_fix(e.error.code))
    except (ClientError, BotoCoreError) as e:
        code = e.response.get("Error", {}).get("Code", "") if isinstance(e, ClientError) else type(e).__name__
        log.note(f"... the scene stopped: {code}")
        stopped = LabError(f"the {pattern_cls.name} scene stopped on an error: {e}", _stopped_fix(code))
    finally:
        if not keep_table:
            drop_table(table)
        injector.close()
    return Scene(
        pattern=pattern_cls.name,
        seed=pattern_cls.seed,
        variant=variant,
        table=table.name,
        text=log.text(),
        results=tuple(log.results()),
        history=history,
        stopped=stopped,
    )


def _stopped_fix(code: str) -> str:
    if code in CONTENTION_CODES:
        return (
            "the backend refused it for contention past the scene's patience: with the aws-like profile, raise its "
            "lowered ceilings (--profile-set write_units=..., read_units=...) or play it on the exact profile"
        )
    return "check that the backend is up and answering (the lines above are what the scene did), and play it again"


def scene_variants(pattern_cls: type[Pattern]) -> list[str]:
    """The variants with a walkthrough scene of their own (most patterns have one scene for all)."""
    pattern = pattern_cls()
    return [v for v in pattern_cls.variants if pattern.walkthrough_for(v) != pattern.walkthrough]


def check_variant(pattern_cls: type[Pattern], variant: str | None) -> None:
    """BadInput for a --variant the walkthrough would not play: unknown, or one without a scene of its own (the
    default scene would be played under its name)."""
    if variant is None:
        return
    pattern_cls.resolve_options(variant, {})  # an unknown variant is refused with the names it could be
    own = scene_variants(pattern_cls)
    if variant not in own:
        raise BadInput(
            f"pattern {pattern_cls.name!r} has no walkthrough scene of its own for variant {variant!r} "
            "(its default scene would play under that name)",
            f"use --variant {' or '.join(own)}, or leave out --variant" if own else "leave out --variant",
        )


def _fresh_table(client: Any, name: str, spec: TableSpec) -> Table:
    """A new table of this walkthrough's own: `name` (so the log reads like the seed's), else `name-2`, `name-3`...

    The CreateTable call is the claim. Two walkthroughs started together (two dashboard sessions, two CLIs on
    one server) may both see `name` free; one create wins, the other is refused and claims the next name.
    open_table is not used: it would adopt the winner's table while it is still empty. Listing first only
    spares refused creates for names long taken.
    """
    listed = set(client.list_tables().get("TableNames", []))
    for candidate in itertools.islice((n for n in _names(name) if n not in listed), MAX_NAME_TRIES):
        try:
            return create_table(client, candidate, spec)
        except TableNameTaken:
            continue
    raise LabError(
        f"no free table name after {MAX_NAME_TRIES} tries of {name}-N",
        "delete old ddblab-p* tables on this backend, or try again",
    )


def _names(name: str) -> Iterator[str]:
    yield name
    for i in itertools.count(2):
        yield f"{name}-{i}"
