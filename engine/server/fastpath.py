"""moto's DynamoDB handler called directly, without Flask: the same handler and the same bytes, less machinery.

moto serves DynamoDB through a Flask app whose only route hands every request to `DynamoHandler.dispatch`.
Flask's request context, routing, after-request hooks and Response object cost as much per call as moto's
own work on a small item, and none of it changes the answer. `DirectDynamo` is a WSGI app that makes the
same `dispatch` call and builds the same status line and headers Flask + flask-cors would (see
`_flask_headers`); anything that is not a plain DynamoDB API call (another path or method, a CORS request)
goes to the Flask app unchanged.

`memoize_moto` also caches two things moto recomputes on every call, both pure functions of their input:
the list of a handler class's method names (`inspect.getmembers` per request) and parsed UpdateExpression
ASTs (moto parses each one twice per UpdateItem; readers only walk the tree, and the validator deep-copies
it before changing anything).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from botocore.exceptions import ClientError
from moto import settings
from moto.core.request import Request
from moto.dynamodb.responses import DynamoHandler
from werkzeug.http import HTTP_STATUS_CODES

_TARGET_PREFIX = "DynamoDB_20120810."
# Flask's answer to an exception escaping a view, byte for byte (werkzeug's InternalServerError page).
_INTERNAL_ERROR = (
    b"<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal Server Error</h1>\n"
    b"<p>The server encountered an internal error and was unable to complete your request. Either the server is "
    b"overloaded or there is an error in the application.</p>\n")


class _ServerRequest(Request):
    # As moto's Flask request class: a real server received it, so moto adds no Date header of its own.
    from_wsgi_server = True


class DirectDynamo:
    """WSGI app: DynamoDB API calls straight to moto's DynamoHandler, everything else to moto's Flask app."""

    def __init__(self, flask_app: Any) -> None:
        self._flask = flask_app
        self._cors = not settings.DISABLE_GLOBAL_CORS  # moto's app runs flask-cors unless this is set

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (environ.get("PATH_INFO") != "/" or environ.get("REQUEST_METHOD") != "POST"
                or not environ.get("HTTP_X_AMZ_TARGET", "").startswith(_TARGET_PREFIX)
                or "HTTP_ORIGIN" in environ or "HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK" in environ):
            return self._flask(environ, start_response)
        request = _ServerRequest(environ)
        try:
            try:
                status, headers, body = DynamoHandler.dispatch(request, request.raw_url, dict(request.headers))
            except ClientError as exc:  # as moto's convert_to_flask_response
                status, headers, body = 400, {}, exc.response["Error"]["Message"]
        except Exception:  # noqa: BLE001 - Flask answers 500 and logs; so do we
            self._flask.logger.exception("Exception on / [POST]")
            status, headers, body = 500, {"Content-Type": "text/html; charset=utf-8"}, _INTERNAL_ERROR
        data = body.encode() if isinstance(body, str) else bytes(body)
        start_response(f"{status} {HTTP_STATUS_CODES.get(status, 'UNKNOWN').upper()}", self._flask_headers(headers, data))
        return [data]

    def _flask_headers(self, headers: dict[str, Any], data: bytes) -> list[tuple[str, str]]:
        """The header list werkzeug's Response(headers=...) and flask-cors produce, in the same order."""
        out = [(str(k), str(v)) for k, v in headers.items()]
        names = [k.lower() for k, _ in out]
        if "content-type" not in names:
            out.append(("Content-Type", "text/html; charset=utf-8"))
            names.append("content-type")
        if "content-length" in names:
            out[names.index("content-length")] = ("Content-Length", str(len(data)))
        else:
            out.append(("Content-Length", str(len(data))))
        if self._cors:
            out.append(("Access-Control-Allow-Origin", "*"))
        return out


def memoize_moto() -> None:
    """Cache moto's per-call recomputations that are pure functions of their input (see module docstring)."""
    import moto.core.responses as core_responses
    import moto.dynamodb.models as models
    import moto.dynamodb.responses as responses
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser

    if getattr(core_responses, "_ddblab_memoized", False):
        return
    core_responses.method_names_from_class = functools.lru_cache(maxsize=64)(core_responses.method_names_from_class)
    parse = _CachedParser(UpdateExpressionParser)
    responses.UpdateExpressionParser = parse  # type: ignore[attr-defined]
    models.UpdateExpressionParser = parse  # type: ignore[attr-defined]
    core_responses._ddblab_memoized = True  # type: ignore[attr-defined]


class _CachedParser:
    """Stands in for UpdateExpressionParser where moto calls `.make(expression)`."""

    def __init__(self, parser: Any, size: int = 1024) -> None:
        self.make = functools.lru_cache(maxsize=size)(parser.make)
