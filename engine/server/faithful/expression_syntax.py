"""The grammar of a ProjectionExpression and a KeyConditionExpression, checked before moto reads them.

moto's readers of these two take what they understand and drop the rest: `PK = :x AND` was answered as
`PK = :x`, `a..b` and `n.>+` as projections that match nothing (200s where DynamoDB answers a 400 syntax error),
and others crashed (`PK == :x`). Only the grammar is checked here, and leniently (any name of letters, digits
and underscores not starting with a digit, spaces between tokens, parentheses around any condition); what the
names and values mean (key attributes, operators a key allows, reserved words) stays moto's business.
"""

from __future__ import annotations

import functools
import re

from engine.server.faithful.limits import Refused

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#\w+|[^\W\d]\w*)|(?P<value>:\w+)|(?P<number>\d+)|(?P<op><>|<=|>=|[=<>])|(?P<punct>[.,()\[\]]))"
)
_END = ("end", "<EOF>", 0)


class _Syntax(Exception):
    def __init__(self, token: str, near: str) -> None:
        super().__init__(token)
        self.token = token
        self.near = near


class _Reader:
    """Tokens of an expression, read one at a time; a character no token starts with is a syntax error."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while True:
            found = _TOKEN.match(text, pos)
            if found is None:
                rest = text[pos:].lstrip()
                if rest:
                    start = len(text) - len(rest)
                    raise _Syntax(rest[0], self.near(start))
                break
            kind = found.lastgroup or "punct"
            self.tokens.append((kind, found.group(kind), found.start(kind)))
            pos = found.end()
        self.at = 0

    def near(self, start: int) -> str:
        return self.text[max(0, start - 8) : start + 8].strip()

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.at] if self.at < len(self.tokens) else _END

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        self.at += 1
        return token

    def fail(self) -> _Syntax:
        kind, text, start = self.peek()
        return _Syntax(text, self.near(start) if kind != "end" else self.text.strip()[-16:])

    def expect(self, text: str) -> None:
        if self.peek()[1] != text:
            raise self.fail()
        self.take()

    def keyword(self, word: str) -> bool:
        kind, text, _ = self.peek()
        return kind == "name" and text.upper() == word

    def path(self) -> None:
        """name ('.' name | '[' digits ']')*"""
        if self.peek()[0] != "name" or self.keyword("AND") or self.keyword("BETWEEN"):
            raise self.fail()
        self.take()
        while self.peek()[1] in (".", "["):
            if self.take()[1] == ".":
                if self.peek()[0] != "name":
                    raise self.fail()
                self.take()
            else:
                if self.peek()[0] != "number":
                    raise self.fail()
                self.take()
                self.expect("]")


def _projection(reader: _Reader) -> None:
    reader.path()
    while reader.peek()[1] == ",":
        reader.take()
        reader.path()


_KEY_OPERATORS = frozenset({"=", "<", "<=", ">", ">="})
_NOT_KEY_OPERATORS = frozenset({"OR", "NOT", "IN", "<>", "ATTRIBUTE_EXISTS", "ATTRIBUTE_NOT_EXISTS", "CONTAINS"})


class _KeyOperator(Exception):
    """An operator DynamoDB's key conditions do not have (OR, NOT, <>...)."""


def _key_operand(reader: _Reader) -> None:
    if reader.peek()[0] == "value":
        reader.take()
    else:
        reader.path()


def _key_term(reader: _Reader) -> None:
    kind, text, _ = reader.peek()
    if text.upper() in _NOT_KEY_OPERATORS:
        raise _KeyOperator(text)
    if text == "(":
        reader.take()
        _key_condition(reader)
        reader.expect(")")
        return
    if reader.keyword("BEGINS_WITH"):
        reader.take()
        reader.expect("(")
        _key_operand(reader)
        reader.expect(",")
        _key_operand(reader)
        reader.expect(")")
        return
    _key_operand(reader)
    kind, text, _ = reader.peek()
    if text.upper() in _NOT_KEY_OPERATORS:
        raise _KeyOperator(text)
    if reader.keyword("BETWEEN"):
        reader.take()
        _key_operand(reader)
        if not reader.keyword("AND"):
            raise reader.fail()
        reader.take()
        _key_operand(reader)
        return
    if kind != "op" or text not in _KEY_OPERATORS:
        raise reader.fail()
    reader.take()
    _key_operand(reader)


def _key_condition(reader: _Reader) -> None:
    _key_term(reader)
    while reader.keyword("AND"):
        reader.take()
        _key_term(reader)
    if reader.keyword("OR") or reader.keyword("NOT") or reader.peek()[1] == "<>":
        raise _KeyOperator(reader.peek()[1])


@functools.lru_cache(maxsize=1024)
def problem(member: str, text: str) -> str | None:
    """DynamoDB's message for a syntax error in `text` read as `member`, or None when its grammar holds.
    The same expressions come back on every call of a workload: cached."""
    try:
        reader = _Reader(text)
        (_projection if member == "ProjectionExpression" else _key_condition)(reader)
        if reader.peek()[0] != "end":
            raise reader.fail()
    except _Syntax as syntax:
        return f'Invalid {member}: Syntax error; token: "{syntax.token}", near: "{syntax.near}"'
    except _KeyOperator as operator:
        return f"Invalid operator used in KeyConditionExpression: {operator.args[0].upper()}"
    return None


def check(params: dict[str, object]) -> None:
    """Refuse a request whose ProjectionExpression or KeyConditionExpression breaks its grammar."""
    for member in ("ProjectionExpression", "KeyConditionExpression"):
        text = params.get(member)
        if type(text) is str and text:
            refusal = problem(member, text)
            if refusal is not None:
                raise Refused("ValidationException", refusal)
