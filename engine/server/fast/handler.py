"""moto's DynamoDB handler called directly, without Flask: the same handler and the same bytes, less machinery.

moto serves DynamoDB through a Flask app whose only route hands every request to `DynamoHandler.dispatch`.
Flask's request context, routing, after-request hooks and Response object cost about as much per call as
moto's own work on a small item, and none of it changes the answer. `DirectDynamo` is a WSGI app that makes
the same `dispatch` call and builds the same status line and headers Flask and flask-cors would; anything
that is not a plain DynamoDB API call (another path or method, a CORS request) goes to the Flask app.

`tune_moto` then removes work moto repeats on every call without changing any result (see its docstring).

Both reach into moto's internals, so they are used only with the moto release they were checked against,
byte for byte, with `python -m bench.server.throughput --equivalence` (VERIFIED_MOTO); with any other release
the server runs moto's Flask app as it comes.
"""

from __future__ import annotations

import functools
import io
import json
import re as _re
import string
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import moto.core.responses as _core_responses
from botocore.exceptions import ClientError
from moto import settings
from moto.dynamodb.responses import DynamoHandler
from werkzeug.datastructures import CombinedMultiDict
from werkzeug.http import HTTP_STATUS_CODES

from engine.server.faithful import mistakes
from engine.server.fast import add as fast_add
from engine.server.fast import condition as fast_condition
from engine.server.fast import direct_item, short_way
from engine.server.fast import item as fast_item
from engine.server.fast import lookup as fast_lookup
from engine.server.fast import parse as fast_parse
from engine.server.fast import serialize as fast_serialize
from engine.server.fast import setup as fast_setup
from engine.server.fast import update as fast_update
from engine.server.fast import walk as fast_walk
from engine.server.fast.request import ServerRequest, request_id_maker
from engine.server.wire import JSON_TYPE, TARGET_PREFIX, error_body

VERIFIED_MOTO = "5.2."  # the moto release line this module was checked against (see the module docstring)


def verified() -> bool:
    """True when the installed moto is the release line this module was checked against."""
    import moto

    return str(moto.__version__).startswith(VERIFIED_MOTO)


def crash_answer(exc: Exception, target: str, params: Any = None) -> tuple[int, dict[str, str], str]:
    """moto crashed on a request. Where it crashed inside its expression parsing, the expression was malformed
    (moto asserts its way through `PK == :x`, and indexes past the end of "a AND"): a client mistake, answered as
    DynamoDB does. Anything else, and any crash in the server's own code, is ours: InternalServerError, and one
    line on stderr rather than a traceback (mistakes.py)."""
    import sys

    kind = mistakes.expression_parsed(exc.__traceback__)
    if isinstance(exc, mistakes.ExpressionSyntaxError):  # only condition and filter texts go through that lexer
        message = f"Invalid {mistakes.expression_named('ConditionExpression', params)}: {exc}"
        return 400, {"Content-Type": JSON_TYPE}, error_body("ValidationException", message).decode()
    if kind is not None:
        code, status = "ValidationException", 400
        message = (
            f"Invalid {mistakes.expression_named(kind, params)}: Syntax error "
            f"({type(exc).__name__} in the expression parser); check the expression's grammar"
        )
    else:
        code, status = "InternalServerError", 500
        message = "Internal server error"
        print(f"ddblab server: {target} failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr, flush=True)
    return status, {"Content-Type": JSON_TYPE}, error_body(code, message).decode()


class DirectDynamo:
    """WSGI app: DynamoDB API calls straight to moto's DynamoHandler, everything else to moto's Flask app."""

    def __init__(self, flask_app: Any) -> None:
        self._flask = flask_app
        self._cors = not settings.DISABLE_GLOBAL_CORS  # moto's app runs flask-cors unless this is set

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if (
            environ.get("PATH_INFO") != "/"
            or environ.get("REQUEST_METHOD") != "POST"
            or not environ.get("HTTP_X_AMZ_TARGET", "").startswith(TARGET_PREFIX)
            or "HTTP_ORIGIN" in environ
            or "HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK" in environ
        ):
            return self._flask(environ, start_response)
        request = prepared(environ)
        try:
            # moto's Flask route passes the headers as a dict; setup_class reads them only for an empty body,
            # where the short way makes the same dict itself.
            given = None if request.plain else request.headers.as_dict()
            answer = DynamoHandler.dispatch(request, request.raw_url, given)
        except ClientError as exc:  # as moto's convert_to_flask_response
            answer = 400, {}, exc.response["Error"]["Message"]
        # Any other exception goes up to FaithfulDynamoDB, as it does from moto's Flask app (serve.build_app).
        status, headers, data = self._flask_answer(answer)
        start_response(status, headers)
        return [data]

    def short(
        self, op: str, environ: dict[str, Any], body: bytes, params: Any
    ) -> tuple[str, list[tuple[str, str]], bytes] | None:
        """The answer __call__ would give this request, through direct_item.py (a plain PutItem, GetItem or counter
        ADD, without moto's handler) or else short_way.py; None when neither takes it."""
        if not short_way.routable(op, environ, body, params):
            return None
        if op in direct_item.OPERATIONS:
            direct = direct_item.answer(op, environ, params)
            if direct is None:
                pass
            elif direct[0] == 200:
                # _flask_answer's list for moto's success headers (a Content-Type, no Content-Length), built at once.
                data = direct[2].encode()
                listed = [*direct[1].items(), ("Content-Length", str(len(data)))]
                if self._cors:
                    listed.append(("Access-Control-Allow-Origin", "*"))
                return "200 OK", listed, data
            else:
                return self._flask_answer(direct)
        try:
            answer = short_way.answer(op, environ, body, params)
        except ClientError as exc:
            answer = 400, {}, exc.response["Error"]["Message"]
        return None if answer is None else self._flask_answer(answer)

    def _flask_answer(self, answer: tuple[int, dict[str, Any], Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        """moto's (status, headers, body) as Flask sends it: status line, header list, bytes."""
        status, headers, body = answer
        data = body.encode() if isinstance(body, str) else bytes(body)
        reason = HTTP_STATUS_CODES.get(status, "UNKNOWN").upper()
        return f"{status} {reason}", self._flask_headers(headers, data), data

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


def prepared(environ: dict[str, Any]) -> ServerRequest:
    """The request moto's handler gets for this environ, with what werkzeug would read from a JSON body set at once."""
    request = ServerRequest(environ)
    length = environ.get("CONTENT_LENGTH", "")
    if environ.get("CONTENT_TYPE") == JSON_TYPE and "HTTP_CONTENT_ENCODING" not in environ and length.isdigit():
        # What werkzeug's request.data would read through its stream wrappers and form parser (which takes
        # nothing from a JSON body): the body's Content-Length bytes.
        request._cached_data = environ["wsgi.input"].read(int(length))
        # What werkzeug's _load_form_data makes of a body that is no form (moto reads request.form and .files):
        # the stream over that body and two empty multidicts, set without building the form parser.
        empty = request.parameter_storage_class
        form = empty()
        request.__dict__.update(stream=io.BytesIO(request._cached_data), form=form, files=empty())
        if not environ.get("QUERY_STRING"):  # and werkzeug's args (none) and values (args and form) of a POST
            args = empty()
            request.__dict__.update(args=args, values=CombinedMultiDict([args, form]))
            request.plain = True  # setup_class may take the short way (fast_setup.py)
    return request


def tune_moto() -> None:
    """Remove work moto repeats on every request; each change leaves every result as it was.

    - The list of a handler class's method names: `inspect.getmembers` per request; cached per class.
    - UpdateExpression ASTs: parsed twice per UpdateItem; cached per expression string. Callers only walk
      the tree; the one that changes it (the validator) deep-copies it first, and for a cached tree that copy
      is now `pickle.loads` of a snapshot taken at parse time, a few times faster than `copy.deepcopy`; the
      validator's two walks that read only the tree and the names are skipped once they passed (fast_update.py).
    - The node types each of the validator's ten tree walkers handles: rebuilt at every node of the tree
      from its `_processing_map()` (a dict literal, the same for every walker of a class); now once per class.
    - ConditionExpression tokens: lexed with a dozen regexes per token, twice per conditional write; cached
      per expression string (tokens are immutable tuples; each caller gets a fresh deque of them).
    - The 52-character request id: one 416-bit draw instead of 52 `choice` calls, on moto's own seeded random
      source (fast_request.py).
    - JSON errors (every DynamoDB error, e.g. ConditionalCheckFailedException) first built an XML body with
      xmltodict, then overwrote it with the JSON one; now only the JSON one is built.
    - The validator's tree walks: at every node of every walk, isinstance against abstract classes (slow) and a
      fresh `_processing_map()` to find the node's processor; now looked up once per (walker, node class).
    - The response serializer's value picker: for every member of every structure (each attribute value of an
      item is one), six alias providers were built to list the keys the value might be stored under; for a
      plain dict those keys depend only on the member's name and shape, so they are listed once per shape and
      looked up with `dict.get` (fast_serialize.py).
    - The request parser: per node of the request, a handler looked up by formatting its name, and per
      structure (each attribute value is one) every member of the shape with its JSON name; now both once per
      shape. Pure functions of a string on every request (the URL's parse, a region's partition, the action's
      snake_case name) are cached.
    - The request id was searched for in every body with a regex (for moto's XML services); a JSON body
      without "<RequestId>" comes out of that search unchanged, so it is no longer searched.
    - ConditionExpressions: parsed twice per conditional write (the handler, then the table), each time into
      the same tree of conditions; now once per (expression, names, value names), and each request's tree is
      that one with the request's own values put in (fast_condition.py).
    - The access key in the Authorization header: found with a regex whose greedy "AWS.*" backtracks over the
      whole header (about 40 µs); a header without 20 upper-case letters or digits in a row cannot match it
      (the lab's key is "ddblab"), and is now told so at once.
    - setup_class, about a third of a PutItem: for a plain JSON POST (fast_setup.py) the steps with one possible
      outcome are skipped, the region is found once per (URL, User-Agent), and an access key's account is looked
      for only in the IAM backends that exist (moto creates the missing ones, empty, to look in them).
    - UpdateItem deep-copied the item before the update and compared it, attribute by attribute, with the one
      after, only to build ReturnValues: with ReturnValues NONE the copy is skipped and moto's code goes its way
      for a new item, with the same answer (fast_update.skip_old_item_copy). The backend then deep-copied it
      again for a stream record: skipped on a table without a stream (fast_update.skip_item_copy_without_stream).
    - UpdateItem `ADD name :v` of an integer to a number of an existing item, ReturnValues NONE (the counters'
      update): the sum written to the item directly, without moto's parse, ten tree walks and executor (fast_add.py).
    - PutItem (plain or conditional) and GetItem of an item of strings, numbers and booleans: moto's validations,
      which all pass for such an item, skipped, a condition parsed once, and the answer serialized without the
      walk of the output shape (fast_item.py, fast_answer.py).
    - Import statements run per request (a few microseconds each): in the answer's conversion to plain types, at
      each of its steps (fast_serialize.dynamo_to_dict, otherwise moto's own function), and IAMRequest in the
      authorization step; each now imported once.
    - The backend of every request and the hash and comparisons of a string key: read without moto's nested
      __getitem__s and its cast_value's type tests (fast_lookup.py).
    """
    import moto.core.authorization as authorization
    import moto.core.exceptions as core_exceptions
    import moto.core.parse as parse
    import moto.core.responses as core_responses
    import moto.core.serialize as serialize
    import moto.dynamodb.comparisons as comparisons
    import moto.dynamodb.models as models
    import moto.dynamodb.models.utilities as utilities
    import moto.dynamodb.parsing.validators as validators
    import moto.dynamodb.responses as responses
    from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser, Node  # type: ignore[attr-defined]
    from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
    from moto.moto_api._internal import mock_random

    if getattr(core_responses, "_ddblab_tuned", False):
        return
    core_responses._ddblab_tuned = True  # type: ignore[attr-defined]

    fast_lookup.install()
    DynamoHandler.setup_class = fast_setup.setup_class_for_plain(DynamoHandler.setup_class)  # type: ignore[method-assign]
    responses.copy = fast_update.OLD_ITEM_COPY  # type: ignore[assignment]
    DynamoHandler.update_item = fast_update.skip_old_item_copy(DynamoHandler.update_item)  # type: ignore[method-assign, assignment]
    DynamoHandler.update_item = fast_add.add_integer(DynamoHandler.update_item)  # type: ignore[method-assign, assignment]
    DynamoHandler.put_item = fast_item.put_plain(DynamoHandler.put_item)  # type: ignore[method-assign]
    DynamoHandler.get_item = fast_item.get_plain(DynamoHandler.get_item)  # type: ignore[method-assign]
    models.DynamoDBBackend.update_item = fast_update.skip_item_copy_without_stream(  # type: ignore[method-assign]
        models.DynamoDBBackend.update_item
    )
    responses.dynamo_to_dict = utilities.dynamo_to_dict = fast_serialize.dynamo_to_dict
    authorization.ActionAuthenticatorMixin._authenticate_and_authorize_normal_action = _authorize_normal_action  # type: ignore[method-assign]
    DynamoHandler.get_current_account = fast_setup.get_current_account  # type: ignore[method-assign]
    core_responses.method_names_from_class = functools.lru_cache(maxsize=64)(core_responses.method_names_from_class)

    parser = fast_update.CachedUpdateExpressionParser(UpdateExpressionParser.make)
    responses.UpdateExpressionParser = parser  # type: ignore[attr-defined, unused-ignore]
    models.UpdateExpressionParser = parser  # type: ignore[attr-defined, unused-ignore]
    validators.deepcopy = fast_update.copy_ast  # type: ignore[assignment]
    validators.UpdateExpressionValidator.validate = fast_update.validate_checking_structure_once(  # type: ignore[method-assign, assignment]
        validators.UpdateExpressionValidator.validate
    )
    Node.find_clauses = fast_update.find_clauses_once(Node.find_clauses)

    DepthFirstTraverser.nodes_to_be_processed = fast_walk.node_types  # type: ignore[method-assign, unused-ignore]
    DepthFirstTraverser.traverse_node_recursively = fast_walk.traverse  # type: ignore[method-assign, unused-ignore]
    resolving = validators.ExpressionAttributeResolvingProcessor
    resolving.pre_processing_of_child = fast_walk.resolving_pre_processing_of_child  # type: ignore[method-assign]
    serialize.ResponseSerializer.get_value = fast_serialize.picked(serialize.ResponseSerializer.get_value)  # type: ignore[method-assign]
    serialize.JSONSerializer._serialize_type_structure = fast_serialize.structure(  # type: ignore[method-assign]
        serialize.JSONSerializer._serialize_type_structure
    )

    lex = comparisons.ConditionExpressionParser._lex_condition_expression
    tokens = functools.lru_cache(maxsize=1024)(
        lambda expression: tuple(lex(comparisons.ConditionExpressionParser(expression, None, None)))
    )
    comparisons.ConditionExpressionParser.parse = fast_condition.parsed_once(  # type: ignore[method-assign, assignment]
        comparisons.ConditionExpressionParser.parse
    )
    comparisons.ConditionExpressionParser._lex_condition_expression = (  # type: ignore[method-assign]
        lambda self: deque(tokens(self.condition_expression))
    )

    core_responses.gen_amzn_requestid_long = request_id_maker(mock_random)  # type: ignore[attr-defined, unused-ignore]
    core_responses.BaseResponse.access_key_regex = _AccessKeyPattern(core_responses.BaseResponse.access_key_regex)  # type: ignore[assignment]
    core_responses.BaseResponse._enrich_response = staticmethod(_enrich_response)  # type: ignore[method-assign]
    core_responses.urlparse = functools.lru_cache(maxsize=256)(core_responses.urlparse)  # type: ignore[assignment]
    core_responses.get_partition = functools.lru_cache(maxsize=256)(core_responses.get_partition)
    core_responses.camelcase_to_underscores = functools.lru_cache(maxsize=1024)(core_responses.camelcase_to_underscores)
    parse.JSONParser._parse_shape = fast_parse.parse_shape  # type: ignore[method-assign]
    parse.JSONParser._parse_structure = fast_parse.parse_structure  # type: ignore[method-assign]
    parse.JSONParser._parse_map = fast_parse.parse_map  # type: ignore[method-assign]

    def json_error_init(self: Any, error_type: str, message: str, _: str = "", **__: Any) -> None:
        super(core_exceptions._RESTError, self).__init__()  # werkzeug's HTTPException
        self.error_type = error_type
        self.message = message
        self.description = json.dumps({"__type": error_type, "message": message})
        self.content_type = "application/json"

    core_exceptions.JsonRESTError.__init__ = json_error_init  # type: ignore[method-assign]


_IAM_REQUEST: list[type] = []  # moto.iam.access_control.IAMRequest, once imported


def _authorize_normal_action(self: Any, resource: str = "*") -> None:
    """ActionAuthenticatorMixin._authenticate_and_authorize_normal_action, importing IAMRequest once, not per call."""
    if not _IAM_REQUEST:
        from moto.iam.access_control import IAMRequest

        _IAM_REQUEST.append(IAMRequest)
    self._authenticate_and_authorize_action(_IAM_REQUEST[0], resource)


# Upper-case letters and digits to "1", any other ASCII character to "0": a run of 20 "1"s is a run of 20 of them.
_KEY_CHARS = {c: ("1" if chr(c) in string.ascii_uppercase + string.digits else "0") for c in range(128)}


class _AccessKeyPattern:
    """BaseResponse.access_key_regex, which can only match 20 upper-case letters or digits in a row: a text without
    such a run gets None without the regex's backtracking search."""

    def __init__(self, pattern: Any) -> None:
        self._pattern = pattern

    def search(self, text: str, *args: Any) -> Any:
        if "1" * 20 not in text.translate(_KEY_CHARS):
            return None
        return self._pattern.search(text, *args)


def _enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
    """BaseResponse._enrich_response, without the regex search of a body that cannot hold a <RequestId>."""
    if "status" in headers:
        headers["status"] = str(headers["status"])
    request_id = _core_responses.gen_amzn_requestid_long(headers)
    if isinstance(body, str) and "<RequestId>" in body:  # moto's re.sub raises (ignored) on any other body
        body = _re.sub(r"(?<=<RequestId>).*(?=<\/RequestId>)", request_id, body)
    return headers, body
