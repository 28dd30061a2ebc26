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

import functools
import hashlib
import hmac
import json
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.server import control
from engine.server import simulated as contention
from engine.server.faithful import (
    duplicates,
    expression_syntax,
    key_types,
    limits,
    mistakes,
    moto_fixes,
    shapes,
    start_keys,
)
from engine.server.profile import EXACT, ProfileSpec
from engine.server.simulated.gsi_lag import GsiLag
from engine.server.simulated.item_keys import TRANSACTIONS as _TRANSACTIONS
from engine.server.wire import JSON_TYPE, Refused, error_body, refusal_body

TOKEN_WINDOW_S = 600.0  # DynamoDB keeps a ClientRequestToken for 10 minutes

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
    return status, error_body(code, message)


class FaithfulDynamoDB:
    """WSGI app: moto's DynamoDB behind one lock, plus the behaviour listed in the module docstring."""

    def __init__(
        self,
        moto_app: Callable[..., Iterable[bytes]],
        *,
        ttl_interval_s: float = 1.0,
        seed: int | None = None,
        lab_token: str = "",
        profile: ProfileSpec = EXACT,
    ) -> None:
        moto_fixes.install()  # moto's behaviour corrected where DynamoDB's differs (moto_fixes/)
        self._moto = moto_app
        self.lab_token = lab_token  # /_lab/config takes changes only with it (control.py); "" takes none
        self._lock = threading.Lock()
        self._tokens: dict[str, _TokenRecord] = {}
        self._in_flight: dict[str, float] = {}  # aws-like: a token's transaction until its answer leaves
        self._random = random.Random(seed)
        self.state = ServerState()
        self.gsi = GsiLag(self._lock)
        self.model = contention.AwsLike(profile, seed)  # tables of the aws-like profile (SIMULATED)
        self.ttl_interval_s = ttl_interval_s
        self._stop = threading.Event()
        self._sweeper = threading.Thread(target=self._sweep_forever, name="ttl-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        self._stop.set()
        self.gsi.close()

    # -- WSGI ----------------------------------------------------------------------------------------------

    def _is_judge(self, environ: dict[str, Any]) -> bool:
        """A request of the lab that started this server (its token: see Backend.judge_client)."""
        sent = environ.get("HTTP_X_DDBLAB_TOKEN", "")
        return bool(self.lab_token) and hmac.compare_digest(sent.encode(), self.lab_token.encode())

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith("/_lab/"):
            return self._control(path, environ, start_response)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        try:
            op = limits.operation(environ.get("HTTP_X_AMZ_TARGET", ""))
            if mistakes.malformed_signature(environ.get("HTTP_AUTHORIZATION", "")):
                raise limits.Refused(
                    "IncompleteSignatureException",
                    "The Authorization header's Credential must read KEY/DATE/REGION/dynamodb/aws4_request",
                )
            params = _parse(body)
            if type(params) is dict:
                shapes.check(op, params)  # every top-level member's JSON type and bounds, as the model has them
            limits.check(op, params)
            expression_syntax.check(params)  # a projection's and a key condition's grammar (moto's is loose)
        except Refused as refused:
            return _respond(start_response, *_error(refused.code, refused.message, refused.status))
        faults = self.state.faults
        # Injected faults are for the clients, not for the lab's judge (a run's set-up and verification).
        if (faults.latency_ms > 0 or faults.throttle_share > 0) and not self._is_judge(environ):
            if faults.latency_ms > 0:
                time.sleep(faults.latency_ms / 1000.0)
            if faults.throttle_share > 0 and self._random.random() < faults.throttle_share:
                return _respond(
                    start_response,
                    *_error(faults.throttle_code, "Rate of requests exceeds the allowed throughput (injected)"),
                )
        region = _region(environ)
        with self._lock:
            self.state.requests += 1
            try:
                duplicates.check(op, params, region)  # reads the tables' key schemas: under the lock
                key_types.check(op, params, region)
                if op == "Scan" or op == "Query":  # tested here: no call for the other operations
                    start_keys.check(params, region)
            except Refused as refused:
                return _respond(start_response, *_error(refused.code, refused.message, refused.status))
            table = None if self.model.table_changed(op) else self.model.profile(op, params, region)
            if op == "TransactWriteItems" and params.get("ClientRequestToken"):
                status, headers, out = self._transact_with_token(environ, body, params, region, table)
            elif op in moto_fixes.item_size.SIZED_WHOLE:
                moto_fixes.item_size.request_sized = True
                try:
                    status, headers, out = self._apply(op, environ, body, params, region, table)
                finally:
                    moto_fixes.item_size.request_sized = False
            else:
                status, headers, out = self._apply(op, environ, body, params, region, table)
            # aws-like: the answer waits, outside the lock (serve.py): its network time, a transaction's window
            if table is not None and (table.delays or (table.windows and op in _TRANSACTIONS)):
                delay = environ["ddblab.delay_s"] = self.model.delay_s(table)
                if op == "TransactWriteItems" and params.get("ClientRequestToken"):
                    self._in_flight[str(params["ClientRequestToken"])] = time.monotonic() + delay
        start_response(status, headers)
        return [out]

    def _apply(
        self, op: str, environ: dict[str, Any], body: bytes, params: dict[str, Any], region: str, table: Any
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        """One request through moto, with the aws-like model around it when its table has that profile."""
        gsi = self.gsi
        modelled = None
        if table is not None:
            try:
                modelled = self.model.begin(op, params, table)
            except Refused as refused:
                out = refusal_body(refused)
                return "400 Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(out)))], out
        if modelled is None:  # an exact table, or a request the model has nothing more to do for
            state = gsi.before(op, params, region)
            ok = False
            try:
                status, headers, out = self._call_moto(op, environ, body, params)
                ok = status.startswith("200")
            finally:
                gsi.after(state, ok)
            return status, headers, out
        try:
            state = gsi.before(op, params, region)
            try:
                if modelled.kept is None:
                    status, headers, out = self._call_moto(op, environ, body, params)
                else:  # a BatchWriteItem the model left some writes of out
                    status, headers, out = modelled.send(lambda sent: self._call_moto(op, environ, sent, None), body)
                modelled.ok = status.startswith("200")
                if not modelled.ok:
                    modelled.answer = out  # a transaction moto cancelled: its reasons say what it had prepared
                elif modelled.watch is not None:  # a TransactGetItems: cancelled if a write lands while under way
                    environ["ddblab.recheck"] = functools.partial(self._cancelled_late, modelled)
            finally:
                gsi.after(state, modelled.ok)
        finally:
            self.model.end(modelled)
        return status, headers, out

    def _cancelled_late(self, modelled: Any) -> tuple[str, list[tuple[str, str]], bytes] | None:
        """When a TransactGetItems' answer is due (serve.py): its cancellation, if a write landed on one of its
        items meanwhile; None to send the answer as it is."""
        with self._lock:
            refused = self.model.cancelled_late(modelled)
        if refused is None:
            return None
        out = refusal_body(refused)
        return "400 Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(out)))], out

    def _call_moto(
        self, op: str, environ: dict[str, Any], body: bytes, params: Any
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        """moto's answer to `body` (whose parse is `params`, or None when not parsed here)."""
        short = getattr(self._moto, "short", None)
        if short is not None and params is not None:
            try:
                answer = short(op, environ, body, params)
            except Exception as exc:  # moto crashed: as below
                return _crashed(exc, environ, op, params)
            if answer is not None:
                return answer
        import io

        env = dict(environ)
        env["wsgi.input"] = io.BytesIO(body)
        env["CONTENT_LENGTH"] = str(len(body))
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
            captured["status"], captured["headers"] = status, headers
            return lambda _data: None

        try:
            chunks = self._moto(env, capture)
        except Exception as exc:  # moto crashed (its Flask app propagates exceptions too: build_app)
            return _crashed(exc, environ, op, params if params is not None else _parse(body))
        try:
            out = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close:
                close()
        return captured["status"], captured["headers"], out

    def _transact_with_token(
        self, environ: dict[str, Any], body: bytes, params: dict[str, Any], region: str, table: Any
    ) -> tuple[str, list[tuple[str, str]], bytes]:
        token = params["ClientRequestToken"]
        digest = _digest({k: v for k, v in params.items() if k not in ("ClientRequestToken", "ReturnConsumedCapacity")})
        now = time.monotonic()
        in_flight = self._in_flight.get(token)
        if in_flight is not None and in_flight > now:  # its first transaction's answer has not left yet
            _, refusal = _error(
                "TransactionInProgressException", "The transaction with the given request token is already in progress."
            )
            return "400 Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(refusal)))], refusal
        if len(self._in_flight) > 10_000:
            self._in_flight = {t: until for t, until in self._in_flight.items() if until > now}
        record = self._tokens.get(token)
        if record and record.expires > now:
            if record.digest != digest:
                _, refusal = _error(
                    "IdempotentParameterMismatchException",
                    "Request token was used before with different parameters (within the last 10 minutes)",
                )
                return "400 Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(refusal)))], refusal
            return "200 OK", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(record.body)))], record.body
        status, headers, out = self._apply("TransactWriteItems", environ, body, params, region, table)
        if status.startswith("200"):
            self._tokens[token] = _TokenRecord(digest, now + TOKEN_WINDOW_S, out)
            if len(self._tokens) > 10_000:
                self._tokens = {t: r for t, r in self._tokens.items() if r.expires > now}
        return status, headers, out

    # -- control -------------------------------------------------------------------------------------------

    def _control(self, path: str, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        post = environ.get("REQUEST_METHOD") == "POST"
        try:
            control.authorize(environ, self.lab_token, need_token=post)
            if path == "/_lab/health":
                return _respond(start_response, 200, b'{"ok": true}', "application/json")
            if path == "/_lab/config" and post:
                change = control.parse_change(control.read_body(environ))
                # Checked whole before any of it is applied: a refused request changes nothing.
                faults = self.state.faults
                faults.latency_ms = change.get("latency_ms", faults.latency_ms)
                faults.throttle_share = change.get("throttle_share", faults.throttle_share)
                faults.throttle_code = change.get("throttle_code", faults.throttle_code)
                self.ttl_interval_s = change.get("ttl_interval_s", self.ttl_interval_s)
        except control.ControlRefused as refused:
            body = json.dumps({"error": refused.message}).encode()
            return _respond(start_response, refused.status, body, "application/json")
        if path == "/_lab/stats" and environ.get("QUERY_STRING", "").startswith("table="):
            from urllib.parse import unquote

            name = unquote(environ["QUERY_STRING"][len("table=") :])
            with self._lock:
                stats = self.model.table_stats(name)
            return _respond(start_response, 200, json.dumps(stats).encode(), "application/json")
        if path in ("/_lab/config", "/_lab/stats"):
            faults = self.state.faults
            info = {
                "latency_ms": faults.latency_ms,
                "throttle_share": faults.throttle_share,
                "throttle_code": faults.throttle_code,
                "ttl_interval_s": self.ttl_interval_s,
                "requests": self.state.requests,
                "ttl_deleted": self.state.ttl_deleted,
                "default_profile": self.model.default.tag_value(),
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


def _crashed(exc: Exception, environ: dict[str, Any], op: str, params: Any) -> tuple[str, list[tuple[str, str]], bytes]:
    from engine.server.fast.handler import crash_answer

    if isinstance(exc, RecursionError) and mistakes.nests_deeply(params):  # moto walks some members recursively
        status, out = _error("SerializationException", "The request body nests too deeply")
        return f"{status} Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(out)))], out
    # A crash on a body that breaks the API's shapes deep down (the top level is checked first): that body's 400.
    problem = shapes.deep_problem(op, params)
    if problem is not None:
        status, out = _error(problem.code, problem.message, problem.status)
        return f"{status} Bad Request", [("Content-Type", JSON_TYPE), ("Content-Length", str(len(out)))], out
    code, headers, text = crash_answer(exc, environ.get("HTTP_X_AMZ_TARGET", ""), params)
    out = text.encode()
    reason = "Bad Request" if code == 400 else "Internal Server Error"
    return f"{code} {reason}", [*headers.items(), ("Content-Length", str(len(out)))], out


def _region(environ: dict[str, Any]) -> str:
    # "AWS4-HMAC-SHA256 Credential=KEY/20260101/us-east-1/dynamodb/aws4_request, ..." as moto reads it
    auth = environ.get("HTTP_AUTHORIZATION", "")
    try:
        return auth.split("Credential=", 1)[1].split("/")[2]
    except IndexError:
        return "us-east-1"


_DECODE = json.JSONDecoder().decode  # json.loads's own decoder, without its per-call argument checks


def _parse(body: bytes) -> Any:
    try:
        if body[:1] == b"{" and 0 not in body[:4]:
            # What json.loads(bytes) does to a body of this start (detect_encoding: UTF-8), in 3 calls, not 16.
            params = _DECODE(body.decode("utf-8", "surrogatepass"))
            suspect = mistakes.may_hold_surrogate(body)
        else:  # e.g. UTF-16, whose surrogates the look at UTF-8 bytes would miss: always looked at
            params = json.loads(body) if body else {}
            suspect = bool(body)
        if suspect and mistakes.lone_surrogate(params):
            raise limits.Refused(
                "SerializationException",
                "The request body holds a string with a lone UTF-16 surrogate (e.g. \\ud800 without its pair), "
                "which is no valid UTF-8: send each character whole",
            )
        return params
    except ValueError:  # UnicodeDecodeError and RecursionError's cousin too
        raise Refused("SerializationException", "The request body is not valid JSON") from None
    except RecursionError:
        raise Refused("SerializationException", "The request body nests too deeply") from None


def _digest(params: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()


def _respond(start_response: StartResponse, status: int, body: bytes, content_type: str = JSON_TYPE) -> list[bytes]:
    reason = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 413: "Request Entity Too Large"}.get(
        status, "Error"
    )
    start_response(f"{status} {reason}", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
