"""What an imported history may hold: every field the lab reads, by type and range, checked in one place.

A history file is untrusted input: it is kept in the dashboard's shared registry and drawn by every browser
session, so a value of the wrong type, or an absurd one (a timestamp near the int64 range makes time bins
by the billion), must be refused before anything is kept. Each check raises HistoryFileError with one line
naming the field; a file that passes costs memory in proportion to its number of calls.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import HistoryFileError

FIX = "import a .jsonl file exported by the lab (python -m engine run ... --history FILE.jsonl)"

# Bounds for one call. A run lasts at most a day (RunConfig), a call at most minutes (timeouts × attempts).
MAX_SPAN_NS = 2 * 86_400 * 10**9  # a call's timestamps, from the run's start
MAX_LATENCY_NS = 3_600 * 10**9
MAX_CLIENTS = 10_000  # client ids 0..MAX_CLIENTS-1 (a lane each in the timeline)
MAX_RETRIES = 1_000
MAX_ACTION = 64
MAX_KEY = 2_048  # DynamoDB's own limit on a partition key
MAX_ERROR = 128
MAX_REQUEST = 400 * 1024  # DynamoDB's item size limit: a request text is no longer than its item, roughly
MAX_DETAIL_BYTES = 16 * 1024
MAX_DETAIL_KEYS = 64
MAX_NUMBER = 2**53  # beyond it a float loses integers; no count, version or token of the lab gets near
# Distinct values the History's columns can hold (array codes: op 'B', action and error 'H').
MAX_DISTINCT = {"op": 255, "action": 65_535, "error": 65_535}
_OP = re.compile(r"[A-Za-z]{1,40}")


def _fail(where: str, what: str) -> HistoryFileError:
    return HistoryFileError(f"{where}: {what}", FIX)


class TooManyDigits(float):
    """A JSON integer longer than Python reads (int max_str_digits, 4,300): infinity to every check, so the field
    holding it is refused as out of range, and shown by its length."""

    digits: int

    def __new__(cls, text: str) -> TooManyDigits:
        number = super().__new__(cls, math.inf)
        number.digits = len(text.lstrip("-"))
        return number

    def __repr__(self) -> str:
        return f"a {self.digits:,}-digit number"


def _read_int(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return TooManyDigits(text)


def loads(line: str | bytes) -> Any:
    """One line of JSON. An integer too long for Python fails the whole line with "Exceeds the limit": read again,
    it stands in its field as TooManyDigits, so the check of that field names it (only then: a hook on every
    integer would slow every import)."""
    try:
        return json.loads(line)
    except ValueError as error:
        try:
            return json.loads(line, parse_int=_read_int)
        except ValueError:
            raise error from None


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_int(value) and abs(value) <= MAX_NUMBER) or (
        isinstance(value, float) and math.isfinite(value) and abs(value) <= MAX_NUMBER
    )


def whole(value: Any, where: str, lo: int, hi: int) -> int:
    if not is_int(value) or not lo <= value <= hi:
        raise _fail(where, f"must be a whole number from {lo:,} to {hi:,}, got {_shown(value)}")
    return int(value)


def text(value: Any, where: str, longest: int, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > longest:
        kind = "text" + (" or null" if optional else "")
        raise _fail(where, f"must be {kind} of at most {longest:,} characters, got {_shown(value)}")
    return value


def json_value(value: Any, where: str, depth: int = 0) -> None:
    """Plain JSON with finite numbers of sane size (json.loads takes NaN, Infinity and 400-digit integers)."""
    if value is None or isinstance(value, (bool, str)):
        return
    if isinstance(value, (int, float)):
        if not is_number(value):
            shown = repr(value) if isinstance(value, TooManyDigits) else f"the number {_shown(value)}"
            raise _fail(where, f"holds {shown}, out of range (at most {MAX_NUMBER:.0e}, finite)")
        return
    if depth >= 8:
        raise _fail(where, "is nested more than 8 levels deep")
    if isinstance(value, list):
        for item in value:
            json_value(item, where, depth + 1)
        return
    if isinstance(value, dict):
        for item in value.values():
            json_value(item, where, depth + 1)
        return
    raise _fail(where, f"holds a value of type {type(value).__name__}")


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:37] + "..."


# The detail fields the lab writes and reads back (patterns' verify, the dashboard's views), by the kind the engine
# writes; any other field only has to be plain JSON.
def _is_count(value: Any) -> bool:
    # null where the lab records "not known" (a snapshot that expects no particular count); views read it as missing
    return value is None or is_number(value)


def _is_flag(value: Any) -> bool:
    return isinstance(value, bool) or (is_int(value) and value in (0, 1))


def _is_text(value: Any) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= 2_048)


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= 100 and all(isinstance(v, str) and len(v) <= 200 for v in value)


def _is_item(value: Any) -> bool:
    return value is None or isinstance(value, dict)


_NUMBERS = (
    "version read_version read number amount token taken op hold attempt since_write_ms credits_after stock_after "
    "balance qty remaining views now mono_ns expected_count jobs next credits stock"
)
DETAIL_KINDS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    **{key: ("a number or null", _is_count) for key in _NUMBERS.split()},
    **{
        key: ("true or false", _is_flag)
        for key in "stale paused overwrote created reuse resend lost_response ambiguous_retry order_present".split()
    },
    **{
        key: ("text or null", _is_text)
        for key in "told record charge reply request from email status user owner order customer name".split()
    },
    "reasons": ("a list of error codes", _is_texts),
    "attempts": ("a list of error codes", _is_texts),
    "old_item": ("an item (an object) or null", _is_item),
}


# -- one call ----------------------------------------------------------------------------------------------------

CALL_FIELDS = ("client", "action", "op", "key", "invoke_ns", "complete_ns", "outcome")
OUTCOMES = ("ok", "fail", "info")


def check_call(row: Any, number: int) -> dict[str, Any]:
    """One line of a history file as the keyword arguments of a Call (outcome as text); HistoryFileError naming
    the line and the field otherwise."""
    line = f"line {number} of the history file"
    if not isinstance(row, dict):
        raise _fail(line, "is not a JSON object (a call)")
    missing = [name for name in CALL_FIELDS if name not in row]
    if missing:
        raise _fail(line, f"lacks the fields of a call ({', '.join(missing)})")
    invoke = whole(row["invoke_ns"], f"{line}, invoke_ns", 0, MAX_SPAN_NS)
    complete = whole(row["complete_ns"], f"{line}, complete_ns", 0, MAX_SPAN_NS)
    if not 0 <= complete - invoke <= MAX_LATENCY_NS:
        raise _fail(line, f"completes {(complete - invoke) / 1e9:.3g} s after it starts (from 0 to 3,600 s)")
    op = text(row["op"], f"{line}, op", 40)
    if not _OP.fullmatch(op or ""):
        raise _fail(f"{line}, op", f"must be a DynamoDB operation name like PutItem, got {_shown(op)}")
    outcome = row["outcome"]
    if outcome not in OUTCOMES:
        raise _fail(f"{line}, outcome", f"must be one of ok, fail, info, got {_shown(outcome)}")
    detail = row.get("detail")
    if detail is None:
        detail = {}
    if not isinstance(detail, dict) or len(detail) > MAX_DETAIL_KEYS:
        raise _fail(f"{line}, detail", f"must be an object of at most {MAX_DETAIL_KEYS} fields")
    json_value(detail, f"{line}, detail")
    for key, value in detail.items():
        kind = DETAIL_KINDS.get(key)
        if kind is not None and not kind[1](value):
            raise _fail(f"{line}, detail.{key}", f"must be {kind[0]}, got {_shown(value)}")
    if len(json.dumps(detail)) > MAX_DETAIL_BYTES:
        raise _fail(f"{line}, detail", f"is longer than {MAX_DETAIL_BYTES:,} characters")
    return {
        "client": whole(row["client"], f"{line}, client", 0, MAX_CLIENTS - 1),
        "action": text(row["action"], f"{line}, action", MAX_ACTION),
        "op": op,
        "key": text(row["key"], f"{line}, key", MAX_KEY),
        "invoke_ns": invoke,
        "complete_ns": complete,
        "outcome": outcome,
        "error": text(row.get("error"), f"{line}, error", MAX_ERROR, optional=True) or None,
        "retries": whole(row.get("retries") or 0, f"{line}, retries", 0, MAX_RETRIES),
        "detail": detail,
        "request": text(row.get("request"), f"{line}, request", MAX_REQUEST, optional=True),
    }


# -- the summary -------------------------------------------------------------------------------------------------

Check = Callable[[Any, str], Any]


def _optional(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def _whole(lo: int, hi: int) -> Check:
    return lambda value, where: whole(value, where, lo, hi)


def _number(lo: float, hi: float) -> Check:
    def check(value: Any, where: str) -> float:
        if not is_number(value) or not lo <= value <= hi:
            raise _fail(where, f"must be a number from {lo:g} to {hi:g}, got {_shown(value)}")
        return float(value) if isinstance(value, float) else value

    return check


def _text(longest: int) -> Check:
    return lambda value, where: text(value, where, longest)


def _one_of(*choices: str) -> Check:
    def check(value: Any, where: str) -> str:
        if value not in choices:
            raise _fail(where, f"must be one of {', '.join(choices)}, got {_shown(value)}")
        return str(value)

    return check


def _verdict(value: Any, where: str) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise _fail(where, f"must be true, false or null (cannot judge), got {_shown(value)}")
    return value


def _small_json(longest: int) -> Check:
    """An expected/observed figure: any plain JSON value, short."""

    def check(value: Any, where: str) -> Any:
        json_value(value, where)
        if len(repr(value)) > longest:
            raise _fail(where, f"is longer than {longest:,} characters")
        return value

    return check


def _list(check: Check, longest: int) -> Check:
    def checked(value: Any, where: str) -> list[Any]:
        if not isinstance(value, list) or len(value) > longest:
            raise _fail(where, f"must be a list of at most {longest:,} items")
        return [check(item, f"{where}[{i}]") for i, item in enumerate(value)]

    return checked


def _record(fields: Mapping[str, Check], *, name: str = "an object") -> Check:
    """An object with these fields, each optional. A field this version does not know (a newer lab's) is kept
    when it is short plain JSON, so an export of the import loses nothing, and dropped otherwise."""

    def checked(value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _fail(where, f"must be {name}, got {_shown(value)}")
        if len(value) > 200:
            raise _fail(where, "has more than 200 fields")
        out = {}
        for key, item in value.items():
            if key in fields:
                out[key] = fields[key](item, f"{where}.{key}")
            elif isinstance(key, str) and len(key) <= 64 and _plain_and_short(item):
                out[key] = item
        return out

    return checked


def _plain_and_short(value: Any) -> bool:
    try:
        json_value(value, "")
    except HistoryFileError:
        return False
    return len(repr(value)) <= 2_000


def _mapping(key_longest: int, check: Check, longest: int) -> Check:
    def checked(value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict) or len(value) > longest:
            raise _fail(where, f"must be an object of at most {longest} fields")
        for key in value:
            text(key, f"{where} (a field name)", key_longest)
        return {key: check(item, f"{where}.{key}") for key, item in value.items()}

    return checked


def _scalar(value: Any, where: str) -> Any:
    if value is None or isinstance(value, bool) or is_number(value):
        return value
    return text(value, where, 200)


_COUNT = _whole(0, 10**12)
INVARIANT = _record(
    {
        "name": _text(300),
        "key": _text(100),
        "holds": _verdict,
        "verdict": _text(20),
        "expected": _small_json(2_000),
        "observed": _small_json(2_000),
        "explanation": _text(4_000),
        "violations": _COUNT,
        "calls": _list(_whole(0, 10**9), 1_000),
    },
    name="an invariant (an object)",
)
SUMMARY = _record(
    {
        "pattern": _text(64),
        "variant": _text(64),
        "threads": _whole(1, MAX_CLIENTS),
        "processes": _whole(1, 1_024),
        "ops_per_client": _optional(_whole(1, 10**9)),
        "duration_limit_s": _optional(_number(0, 86_400)),
        "backend": _text(16),
        "endpoint_url": _optional(_text(2_048)),
        "table": _optional(_text(255)),
        "state": _one_of("pending", "preparing", "running", "verifying", "done", "stopped", "failed", "imported"),
        "error": _optional(_text(2_000)),
        "duration_s": _number(0, MAX_SPAN_NS / 1e9),
        "calls": _COUNT,
        "calls_per_s": _number(0, 1e9),
        "client_cpu_cores": _list(_number(0, 1_024), 1_024),
        "outcomes": _record({"ok": _COUNT, "fail": _COUNT, "info": _COUNT}),
        "errors": _mapping(MAX_ERROR, _COUNT, 1_000),
        "conflicts": _COUNT,
        "retries": _COUNT,
        "retry_policy": _record({"mode": _text(16), "max_attempts": _whole(1, 100)}),
        "faults": _record({"lost_response_share": _optional(_number(0, 1)), "latency_ms": _number(0, 3_600_000)}),
        "options": _mapping(64, _scalar, 100),
        "client_crashes": _COUNT,
        "client_errors": _list(
            _record({"client": _whole(0, MAX_CLIENTS), "kind": _text(16), "message": _text(500)}), 100
        ),
        "invariants": _list(INVARIANT, 200),
    },
    name="an object (the run's summary)",
)


def check_summary(value: Any) -> dict[str, Any]:
    """The summary in a history file's header, every field the lab reads checked; unknown fields dropped."""
    if value is None:
        return {}
    return SUMMARY(value, "the file's summary")


def check_meta(value: Any) -> dict[str, Any]:
    """A header's meta: its summary checked, its `exported_from` short text, anything else short plain JSON."""
    if value is None:
        return {}
    meta = _record({"summary": lambda v, where: check_summary(v), "exported_from": _text(40)})(
        value, "the history file's header: meta"
    )
    return meta
