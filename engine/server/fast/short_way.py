"""The short way for the hot DynamoDB calls: moto's action method called on a handler set up from the body
FaithfulDynamoDB already parsed, without moto's generic dispatch around it.

moto's dispatch builds a werkzeug Request, parses the body as a query string, finds the region and the account,
parses the JSON body again and walks it through the service model, looks the action up by name, and builds a
new service model to serialize the answer. For a plain DynamoDB call (a POST of a JSON object to "/", no query
string, no encoding, no CORS) each of those steps has the one outcome this module sets directly: the same
attributes on the handler, the same walk of the body through the operation's input shape (on the dict already
parsed, which gives what moto's parse of the same bytes gives), then moto's own `DynamoHandler.call_action`
(its errors, CRC and request id). Anything else returns None and goes moto's whole way (fastpath.DirectDynamo).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import moto.core.responses as core_responses
from moto import settings
from moto.core.parse import JSONParser
from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY
from moto.core.responses import ActionContext, ActionResult
from moto.core.serialize import XFormedAttributePicker, get_serializer_class
from moto.core.utils import get_service_model
from moto.dynamodb.responses import DynamoHandler
from werkzeug.datastructures import ImmutableMultiDict

from engine.server.fast import setup as fast_setup
from engine.server.fast.request import _URL_KEYS, FastEnvironHeaders, ServerRequest

ROUTED = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "Query",
        "TransactWriteItems",
        "TransactGetItems",
        "BatchGetItem",
        "BatchWriteItem",
    }
)
_TARGET_PREFIX = "DynamoDB_20120810."
_JSON_TYPE = "application/x-amz-json-1.0"  # botocore's Content-Type for DynamoDB
_SERVICE = get_service_model("dynamodb")
_SERIALIZER = get_serializer_class("dynamodb", "json")  # what moto picks for a request of Content-Type _JSON_TYPE


class _Operation:
    """What moto builds anew for every request of one operation, built once: its model and its body's parser."""

    __slots__ = ("name", "model", "parser", "_serializer")

    def __init__(self, name: str) -> None:
        self.name = name
        self.model = _SERVICE.operation_model(name)
        self.parser = JSONParser(self.model, map_type=DynamoHandler.PROTOCOL_PARSER_MAP_TYPE)
        self._serializer: Any = None

    def serializer(self) -> Any:
        """The serializer ActionResult.execute_result makes for this operation (with DynamoHandler's transformers
        and moto's pretty-print setting), made once; its path (where it is in the answer, pushed and popped as it
        goes) starts afresh for each answer, even after one that raised half-way."""
        if self._serializer is None:
            picker = XFormedAttributePicker(response_transformers=DynamoHandler.RESPONSE_KEY_PATH_TO_TRANSFORMER)
            self._serializer = _SERIALIZER(
                operation_model=self.model, pretty_print=settings.PRETTIFY_RESPONSES, value_picker=picker
            )
        self._serializer.path = [self.name]
        return self._serializer


_OPERATIONS = {name: _Operation(name) for name in ROUTED}
# os.environ's own dict (encoded keys), which its __contains__ reads through two Python calls and an encode; it is
# changed in place by every os.environ assignment and deletion.
_ENVIRON_DATA: Any = getattr(os.environ, "_data", os.environ)
_ACCOUNT_KEY: Any = os.environ.encodekey("MOTO_ACCOUNT_ID") if _ENVIRON_DATA is not os.environ else "MOTO_ACCOUNT_ID"


class ShortHandler(DynamoHandler):
    """moto's DynamoHandler for one routed call: the action is the one the X-Amz-Target names, and the answer is
    serialized with the operation's model built once (moto rebuilds the service model per answer)."""

    operation: _Operation

    def _get_action(self) -> str:
        return self.operation.name

    def serialized(self, action_result: ActionResult) -> Any:
        if type(action_result).execute_result is ActionResult.execute_result:
            # ActionResult.execute_result with the operation's serializer made once, not per answer.
            serialized = self.operation.serializer().serialize(action_result.result)
            status_code, headers, body = serialized["status_code"], serialized["headers"], serialized["body"]
        else:
            context = ActionContext(_SERVICE, self.operation.model, _SERIALIZER, self)
            status_code, headers, body = action_result.execute_result(context)
        headers.update(self.response_headers)
        return status_code, headers, body


def routable(op: str, environ: Mapping[str, Any], body: bytes, params: Any) -> bool:
    """True when moto's dispatch of this request takes the one path the short way takes (module docstring)."""
    return (
        op in ROUTED
        and type(params) is dict
        and environ.get("HTTP_X_AMZ_TARGET") == _TARGET_PREFIX + op
        and environ.get("PATH_INFO") == "/"
        and environ.get("REQUEST_METHOD") == "POST"
        and environ.get("CONTENT_TYPE") == _JSON_TYPE
        and not environ.get("QUERY_STRING")
        and "HTTP_HOST" in environ
        and "RAW_URI" not in environ  # moto's raw path is then that, not "/"
        and "HTTP_CONTENT_ENCODING" not in environ
        and "HTTP_ORIGIN" not in environ
        and "HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK" not in environ
        and PRESERVED_HEADER_NAMES_ENVIRON_KEY not in environ
        and _ACCOUNT_KEY not in _ENVIRON_DATA  # "MOTO_ACCOUNT_ID" not in os.environ, without its three calls
        # moto reads the body as a query string too: without "&" its only key is the text before the first "="
        # (starting with "{"), so no Action or AWSAccessKeyId can come from it.
        and b"&" not in body
        # moto decodes the body as UTF-8 where json.loads(bytes) would also take UTF-16 and a BOM.
        and body[:1] == b"{"
        and 0 not in body[:4]
        and settings.INITIAL_NO_AUTH_ACTION_COUNT == float("inf")
    )


def answer(op: str, environ: dict[str, Any], body: bytes, params: dict[str, Any]) -> Any:
    """moto's (status, headers, body) for a request `routable` accepted; None when its URL was never seen (the
    first request of each URL goes moto's whole way, which computes it)."""
    full_url = ServerRequest._urls.get(tuple(map(environ.get, _URL_KEYS)))
    if full_url is None:
        return None
    operation = _OPERATIONS[op]
    handler = ShortHandler()
    handler.operation = operation
    headers = FastEnvironHeaders(environ)
    # What moto's setup_class sets, with the values it would find for such a request (fast_setup.py).
    handler.is_werkzeug_request = True
    handler.normalized_request = None  # type: ignore[assignment]  # read only to route a call without X-Amz-Target
    handler.form_data = ImmutableMultiDict()
    handler.raw_body = body
    handler.querystring = handler.data = {}
    handler.uri = full_url
    handler.parsed_url = core_responses.urlparse(full_url)
    handler.path = handler.raw_path = "/"
    handler.method = "POST"
    handler.uri_match = {}
    handler.headers = headers
    handler.response_headers = {"server": "amazon.com"}
    agent = environ.get("HTTP_USER_AGENT", "")  # as headers.get("User-Agent", ""), without the name's lookup
    handler.region = fast_setup.region_from(handler, full_url, agent, environ.get("HTTP_AUTHORIZATION"))
    handler.partition = core_responses.get_partition(handler.region)  # cached by tune_moto
    handler.params = operation.parser._parse_shape(operation.model.input_shape, params)
    handler.access_key = handler.get_access_key()
    handler.current_account = fast_setup.current_account(headers, handler.access_key)
    fast_setup.mark_visited(handler.current_account, handler.access_key, "dynamodb", handler.region)
    return DynamoHandler.call_action(handler)
