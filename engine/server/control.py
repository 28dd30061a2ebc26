"""Who may change the embedded server's settings (/_lab/config), and which values it takes.

The server listens on 127.0.0.1, where any web page the user has open can reach it: a cross-site `fetch` in
no-cors mode needs no permission to POST. So a change is taken only when all of these hold:
- `Host` names this machine's loopback (127.0.0.1, localhost, [::1]) and the server's own port, so a DNS-
  rebinding page, whose requests carry its own host name, is refused;
- there is no `Origin`, or it is this server's own origin (the lab's clients send none; a browser always does);
- `X-Ddblab-Token` carries the per-server token, which the lab hands to the server it starts and no web page
  can know (and which a no-cors request cannot send: it is not a CORS-safelisted header);
- every value is finite and within its stated range, and no name is unknown. Otherwise nothing changes.
"""

from __future__ import annotations

import hmac
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import BadInput

TOKEN_HEADER = "X-Ddblab-Token"
TOKEN_ENV = "DDBLAB_LAB_TOKEN"  # how a parent hands the token to the server it starts (never on argv)
MAX_CONTROL_BODY = 64 * 1024
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "[::1]"})
THROTTLE_CODES = ("ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded")


class ControlRefused(Exception):
    """A control request that is not taken: HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class Range:
    low: float
    high: float
    unit: str = ""

    def take(self, name: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ControlRefused(400, f"{name} must be a number from {self.low:g} to {self.high:g}{self.unit}")
        try:
            number = float(value)
        except ValueError:
            raise ControlRefused(400, f"{name} must be a number, got {str(value)[:40]!r}") from None
        if not math.isfinite(number) or not self.low <= number <= self.high:
            raise ControlRefused(
                400, f"{name} must be finite and from {self.low:g} to {self.high:g}{self.unit}, got {number!r}"
            )
        return number


# Every setting /_lab/config takes, with the range it must lie in.
RANGES: dict[str, Range] = {
    "latency_ms": Range(0.0, 10_000.0, " ms"),
    "throttle_share": Range(0.0, 1.0),
    "ttl_interval_s": Range(0.05, 3600.0, " s"),
}


def authorize(environ: Mapping[str, Any], token: str, *, need_token: bool) -> None:
    """Raise ControlRefused unless the request comes from this machine, not a web page (module docstring);
    `need_token` for requests that change something."""
    port = str(environ.get("SERVER_PORT", ""))
    host = str(environ.get("HTTP_HOST", ""))
    name, _, host_port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if name.lower() not in _LOOPBACK or host_port != port:
        raise ControlRefused(403, f"Host {host[:80]!r} is not this server's loopback address and port")
    origin = environ.get("HTTP_ORIGIN")
    if origin is not None and origin not in {f"http://{n}:{port}" for n in _LOOPBACK}:
        raise ControlRefused(403, f"cross-origin request from {str(origin)[:80]!r} refused")
    if not need_token:
        return
    given = str(environ.get("HTTP_X_DDBLAB_TOKEN", ""))
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        raise ControlRefused(403, f"missing or wrong {TOKEN_HEADER} (the lab passes it to the server it starts)")


def read_body(environ: Mapping[str, Any]) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ControlRefused(400, "Content-Length is not a number") from None
    if length > MAX_CONTROL_BODY:
        raise ControlRefused(413, f"a control request is at most {MAX_CONTROL_BODY} bytes, got {length}")
    return environ["wsgi.input"].read(length) if length > 0 else b""


def parse_change(body: bytes) -> dict[str, Any]:
    """The settings a /_lab/config body asks for, all checked; ControlRefused names the first bad one."""
    try:
        change = json.loads(body or b"{}")
    except ValueError:
        raise ControlRefused(400, "the body is not JSON") from None
    except RecursionError:  # e.g. 100,000 "[": no settings object nests at all
        raise ControlRefused(400, "the body nests too deeply: send one flat JSON object of settings") from None
    if not isinstance(change, dict):
        raise ControlRefused(400, "the body must be a JSON object of settings")
    out: dict[str, Any] = {}
    for name, value in change.items():
        if name in RANGES:
            out[name] = RANGES[name].take(name, value)
        elif name == "throttle_code":
            if value not in THROTTLE_CODES:
                raise ControlRefused(400, f"throttle_code must be one of {', '.join(THROTTLE_CODES)}")
            out[name] = value
        else:
            known = ", ".join([*RANGES, "throttle_code"])
            raise ControlRefused(400, f"unknown setting {str(name)[:40]!r}; known: {known}")
    return out


PLAIN_MOTO_ENV = "DDBLAB_PLAIN_MOTO"
_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off", "")


def plain_moto_wanted() -> bool:
    """DDBLAB_PLAIN_MOTO read as a yes/no switch; any other value is refused (BadInput), not taken as yes."""
    value = os.environ.get(PLAIN_MOTO_ENV, "")
    # "0" and "false" are non-empty strings: read as truthy they turned the fast path off, the opposite of asked.
    if value.strip().lower() in _YES:
        return True
    if value.strip().lower() in _NO:
        return False
    raise BadInput(
        f"{PLAIN_MOTO_ENV}={value!r} is not a yes/no value",
        f"set {PLAIN_MOTO_ENV} to 1, true, yes or on for plain moto (no fast path), or to 0, false, no, off or "
        "empty (or unset it) for the fast path",
    )
