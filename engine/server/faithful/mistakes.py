"""Client mistakes that reach deep into moto, or into the server's own checks, told apart from the server's bugs.

moto parses expressions with code that asserts and indexes its way through the text: `PK == :x` ends in an
AssertionError in its tokenizer, a ProjectionExpression `PK,` in an IndexError. DynamoDB answers each with a 400
ValidationException, so a crash *inside* moto's expression parsing is the client's malformed expression. A crash
anywhere else, and above all in the server's own code (engine/), stays a 500: those are bugs to see, not hide.

Also here: the request-body checks that no later step can make (a string that is no valid Unicode; JSON nested
too deeply for any step to walk), whose answers must come before anything reads or stores the body's strings.
"""

from __future__ import annotations

import json
import traceback
from types import TracebackType
from typing import Any

# Where moto parses and checks an expression, and which expression that is. A frame in one of these files means
# the exception rose while the client's expression was being read (or, for the update executor, applied as written).
_PARSER_FILES = (
    ("/moto/dynamodb/parsing/key_condition_expression.py", "KeyConditionExpression"),
    ("/moto/utilities/tokenizer.py", "KeyConditionExpression"),  # only the key condition's parser uses it
    ("/moto/dynamodb/comparisons.py", "ConditionExpression"),  # also a FilterExpression: see `expression_named`
    ("/moto/dynamodb/parsing/", "UpdateExpression"),  # its tokenizer, parser, validators and executors
)
# ProjectionExpression's parser lives in moto's responses module, among the handlers: only these functions.
_PROJECTION_FILE = "/moto/dynamodb/responses.py"
_PROJECTION_FUNCTIONS = frozenset({"check_projection_expression", "parse"})
_OURS = "/engine/"


class ExpressionSyntaxError(Exception):
    """A token DynamoDB's expression grammar has no place for (the server's own lexer found it): the client's
    mistake, answered with DynamoDB's "Syntax error; token: ..., near: ..."."""

    def __init__(self, token: str, near: str) -> None:
        super().__init__(f'Syntax error; token: "{token}", near: "{near}"')
        self.token, self.near = token, near


def expression_parsed(tb: TracebackType | None) -> str | None:
    """The kind of expression moto was reading when the exception rose ("KeyConditionExpression", ...), or None
    when it rose elsewhere. Decided by the innermost frame that is either moto's expression parsing or the
    server's own code (a crash in engine/ is ours, however it was reached); frames of the standard library and
    of moto's other modules in between do not decide."""
    for frame in reversed(traceback.extract_tb(tb)):
        where = frame.filename.replace("\\", "/")
        if _OURS in where and "/site-packages/" not in where:
            return None
        for part, kind in _PARSER_FILES:
            if part in where:
                return kind
        if where.endswith(_PROJECTION_FILE) and frame.name in _PROJECTION_FUNCTIONS:
            return "ProjectionExpression"
    return None


def expression_named(kind: str, params: Any) -> str:
    """The request's member a crash in `kind`'s parser was about: moto's condition parser also reads filters."""
    if kind == "ConditionExpression" and isinstance(params, dict) and "ConditionExpression" not in params:
        if "FilterExpression" in params:
            return "FilterExpression"
    return kind


def lone_surrogate(params: Any) -> bool:
    """True when a string of the parsed body (a key, a value or a name) holds a UTF-16 surrogate that is not
    part of a pair: no valid UTF-8 text, so DynamoDB refuses it, and moto would store what no one can read back.
    JSON's decoder joins an escaped pair into one character, so every surrogate left is a lone one."""
    try:
        json.dumps(params, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def may_hold_surrogate(body: bytes) -> bool:
    """A cheap look at the raw body: only a \\uD8xx-\\uDFxx escape or the UTF-8 lead byte 0xED (which also
    starts U+D000-U+D7FF) can give a surrogate, so most bodies need no further look."""
    return b"\\ud" in body or b"\\uD" in body or b"\xed" in body


# Far deeper than any request DynamoDB takes (attribute values nest 32 levels, two JSON levels each, under a few
# levels of request members): a RecursionError on a body this deep is the body's, not a bug's.
DEEP = 100


def nests_deeply(params: Any, limit: int = DEEP) -> bool:
    """True when the parsed body nests more than `limit` JSON levels (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(params, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return False


def malformed_signature(authorization: str) -> bool:
    """An AWS4 Authorization header whose credential has no region (moto reads the region as the third
    "/"-separated part of its first comma-separated part, and crashed without one). Only the shape is checked:
    the lab takes any key and signature, as DynamoDB Local does."""
    return "AWS4" in authorization and authorization.split(",", 1)[0].count("/") < 2
