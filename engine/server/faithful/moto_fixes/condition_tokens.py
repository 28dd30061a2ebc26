"""A ConditionExpression or FilterExpression is read with DynamoDB's tokens. moto's lexer took any run of letters,
digits, '-' and the characters between 'Z' and 'a' as a path, so `n = 1` compared n with an attribute named "1"
and `1 = 1` held, where DynamoDB refuses the request: a name in an expression starts with a letter (or is a #name),
and a constant is a :value. It also read one digit of a list index (`l[10]`, which DynamoDB takes, was refused)
and only spaces between tokens (a condition written over two lines was refused)."""

from __future__ import annotations

import re
from typing import Any

from engine.server.faithful.mistakes import ExpressionSyntaxError

_SPACE = r"[ \t\n\r]"  # what DynamoDB skips between tokens, and around a path's '.', '[' and ']' (not U+00A0)
_NAME = rf"(?:#[A-Za-z0-9_]+|[A-Za-z][A-Za-z0-9_]*)(?:{_SPACE}*\[{_SPACE}*(?:0|[1-9][0-9]*){_SPACE}*\])*"
_TOKENS = (
    ("WHITESPACE", re.compile(rf"{_SPACE}+")),
    ("COMPARATOR", re.compile(r"<>|<=|>=|=|<|>")),  # the long ones first
    ("OPERAND", re.compile(rf":[A-Za-z0-9_]+|{_NAME}(?:{_SPACE}*\.{_SPACE}*{_NAME})*")),
    ("COMMA", re.compile(",")),
    ("LEFT_PAREN", re.compile(r"\(")),
    ("RIGHT_PAREN", re.compile(r"\)")),
)


def _lex_one_node(self: Any, remaining: str) -> tuple[Any, str]:
    """moto's `_lex_one_node` with DynamoDB's tokens; what no token matches is refused as DynamoDB does, naming the
    token and what stands before it."""
    for nonterminal, pattern in _TOKENS:
        match = pattern.match(remaining)
        if match:
            text = match.group()
            node = self.Node(
                nonterminal=getattr(self.Nonterminal, nonterminal),
                kind=self.Kind.LITERAL,
                text=text,
                value=re.sub(_SPACE, "", text),  # moto splits a path's value at '.' and '['
                children=[],
            )
            return node, remaining[len(text) :]
    token = re.match(r"[^ ,()<>=]+|.", remaining)
    assert token is not None  # `remaining` is never empty here
    before = self.condition_expression[: len(self.condition_expression) - len(remaining)].split()
    near = " ".join([*before[-1:], token.group()])
    raise ExpressionSyntaxError(token.group(), near)


def install() -> None:
    """Put the lexer in place of moto's, once per process."""
    from moto.dynamodb.comparisons import ConditionExpressionParser

    if ConditionExpressionParser._lex_one_node is not _lex_one_node:
        ConditionExpressionParser._lex_one_node = _lex_one_node  # type: ignore[method-assign, assignment]
