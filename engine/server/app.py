"""moto's DynamoDB made faithful: a WSGI middleware around moto's app.

What it adds, and why:
- One lock around each whole request. moto checks a condition and then writes without a lock, and its
  transactions deep-copy and restore whole tables; under threads that loses updates. Serialising requests
  makes every conditional write, update and transaction atomic and linearizable, as DynamoDB promises.
- ClientRequestToken on TransactWriteItems: the same token with the same parameters within 10 minutes
  succeeds again without applying twice; with other parameters it fails with
  IdempotentParameterMismatchException. moto ignores the token.
- TTL expiry: a sweeper deletes items whose TTL attribute lies in the past (moto never expires them).
- GSI propagation lag, simulated and per table (see gsi_lag.py), for the eventual-consistency demo.
- Injected server faults (latency, throttling) set through /_lab/config, for the reliability demos.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.server import undo
from engine.server.gsi_lag import GsiLag

TOKEN_WINDOW_S = 600.0  # DynamoDB keeps a ClientRequestToken for 10 minutes
_JSON = "application/x-amz-json-1.0"
_PREFIX = "com.amazonaws.dynamodb.v20120810#"

StartResponse = Callable[..., Any]


@dataclass
class Faults:
    """Server-side faults; changed at run time through POST /_lab/config."""

    latency_ms: float = 0.0  # added to every DynamoDB request, outside the lock (like network time)
    throttle_share: float = 0.0  # share of requests answered with ThrottlingException, not applied
    throttle_code: str = "ThrottlingException"


@dataclass
class _TokenRecord:
    digest: str
    expires: float
    body: bytes


@dataclass
class ServerState:
    faults: Faults = field(default_factory=Faults)
    requests: int = 0
    ttl_deleted: int = 0


def _error(code: str, message: str, status: int = 400) -> tuple[int, bytes]:
    return status, json.dumps({"__type": _PREFIX + code, "message": message}).encode()


class FaithfulDynamoDB:
    """WSGI app: moto's DynamoDB behind one lock, plus the behaviour listed in the module docstring."""

    def __init__(
        self, moto_app: Callable[..., Iterable[bytes]], *, ttl_interval_s: float = 1.0, seed: int | None = None
    ) -> None:
        undo.install()  # transactions restore the items they touched, not whole-table copies
        self._moto = moto_app
        self._lock = threading.Lock()
        self._tokens: dict[str, _TokenRecord] = {}
        self._random = random.Random(seed)
        self.state = ServerState()
        self.gsi = GsiLag(self._lock)
        self.ttl_interval_s = ttl_interval_s
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep_forever, name="ttl-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        self._stop.set()
        self.gsi.close()

    # -- WSGI ----------------------------------------------------------------------------------------------

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_lab/"):
            return self._control(path, environ, start_response)
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        op = target.rpartition(".")[2]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        faults = self.state.faults
        if faults.latency_ms > 0:
            time.sleep(faults.latency_ms / 1000.0)
        if faults.throttle_share > 0 and op and self._random.random() < faults.throttle_share:
            return _respond(
                start_response,
                *_error(faults.throttle_code, "Rate of requests exceeds the allowed throughput (injected)"),
            )
        try:
            params = json.loads(body) if body else {}
        except ValueError:
            params = {}
        with self._lock:
            self.state.requests += 1
            if op == "TransactWriteItems" and params.get("ClientRequestToken"):
                return self._transact_with_token(environ, start_response, body, params)
            with self.gsi.around(op, params, _region(environ)) as result:
                status, headers, out = self._call_moto(environ, body)
                result["ok"] = status.startswith("200")
        start_response(status, headers)
        return [out]

    def _call_moto(self, environ: dict[str, Any], body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
        import io

        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(body)
        env["CONTENT_LENGTH"] = str(len(body))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            captured["status"], captured["headers"] = status, headers
            return lambda _data: None

        chunks = self._moto(env, capture)
        try:
            out = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close:
                close()
        return captured["status"], captured["headers"], out

    def _transact_with_token(
        self, environ: dict[str, Any], start_response: StartResponse, body: bytes, params: dict[str, Any]
    ) -> Iterable[bytes]:
        token = params["ClientRequestToken"]
        digest = _digest({k: v for k, v in params.items() if k not in ("ClientRequestToken", "ReturnConsumedCapacity")})
        now = time.monotonic()
        record = self._tokens.get(token)
        if record and record.expires > now:
            if record.digest != digest:
                return _respond(
                    start_response,
                    *_error(
                        "IdempotentParameterMismatchException",
                        "Request token was used before with different parameters (within the last 10 minutes)",
                    ),
                )
            return _respond(start_response, 200, record.body)
        with self.gsi.around("TransactWriteItems", params, _region(environ)) as result:
            status, headers, out = self._call_moto(environ, body)
            result["ok"] = status.startswith("200")
        if result["ok"]:
            self._tokens[token] = _TokenRecord(digest, now + TOKEN_WINDOW_S, out)
            if len(self._tokens) > 10_000:
                self._tokens = {t: r for t, r in self._tokens.items() if r.expires > now}
        start_response(status, headers)
        return [out]

    # -- control -------------------------------------------------------------------------------------------

    def _control(self, path: str, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if path == "/_lab/health":
            return _respond(start_response, 200, b'{"ok": true}', "application/json")
        if path == "/_lab/config" and environ.get("REQUEST_METHOD") == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            try:
                change = json.loads(environ["wsgi.input"].read(length) or b"{}")
                faults = self.state.faults
                for name in ("latency_ms", "throttle_share"):
                    if name in change:
                        setattr(faults, name, float(change[name]))
                if "throttle_code" in change:
                    faults.throttle_code = str(change["throttle_code"])
                if "ttl_interval_s" in change:
                    self.ttl_interval_s = max(0.05, float(change["ttl_interval_s"]))
            except (ValueError, TypeError) as e:
                return _respond(start_response, 400, json.dumps({"error": str(e)}).encode(), "application/json")
        if path in ("/_lab/config", "/_lab/stats"):
            faults = self.state.faults
            info = {
                "latency_ms": faults.latency_ms,
                "throttle_share": faults.throttle_share,
                "throttle_code": faults.throttle_code,
                "ttl_interval_s": self.ttl_interval_s,
                "requests": self.state.requests,
                "ttl_deleted": self.state.ttl_deleted,
            }
            return _respond(start_response, 200, json.dumps(info).encode(), "application/json")
        return _respond(start_response, 404, b'{"error": "unknown lab path"}', "application/json")

    # -- TTL -----------------------------------------------------------------------------------------------

    def _sweep_forever(self) -> None:
        while not self._stop.wait(self.ttl_interval_s):
            try:
                self.sweep_ttl()
            except Exception:
                pass

    def sweep_ttl(self, now: float | None = None) -> int:
        """Delete items whose TTL attribute is a number of epoch seconds in the past. Returns how many."""
        from moto.dynamodb.models import dynamodb_backends

        now = time.time() if now is None else now
        deleted = 0
        with self._lock:
            for account in list(dynamodb_backends.keys()):
                for region in list(dynamodb_backends[account].keys()):
                    backend = dynamodb_backends[account][region]
                    for table in list(backend.tables.values()):
                        ttl = table.ttl or {}
                        attr = ttl.get("AttributeName")
                        if ttl.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING") or not attr:
                            continue
                        for item in table.all_items():
                            value = item.attrs.get(attr)
                            if value is None or value.type != "N":
                                continue
                            try:
                                expired = float(value.value) < now
                            except ValueError:
                                continue
                            if expired:
                                table.delete_item(item.hash_key, item.range_key)
                                self.gsi.forget(table.name, item)
                                deleted += 1
            self.state.ttl_deleted += deleted
        return deleted


def _region(environ: dict[str, Any]) -> str:
    # "AWS4-HMAC-SHA256 Credential=KEY/20260101/us-east-1/dynamodb/aws4_request, ..." as moto reads it
    auth = environ.get("HTTP_AUTHORIZATION", "")
    try:
        return auth.split("Credential=", 1)[1].split("/")[2]
    except IndexError:
        return "us-east-1"


def _digest(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _respond(start_response: StartResponse, status: int, body: bytes, content_type: str = _JSON) -> list[bytes]:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    start_response(f"{status} {reason}", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
