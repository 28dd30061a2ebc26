"""The lab's own exceptions: one small hierarchy, foreign errors mapped to it at the edge.

Every LabError carries a `fix`: the CLI and the dashboard print "problem — fix" and never a traceback.
"""

from __future__ import annotations

import re

_ARN = re.compile(r"arn:aws[a-zA-Z-]*:[^\s\"',]+")
# An account id is masked only where one can be: an ARN's account field (":123456789012:", also in an ARN cut short
# or without its "arn:"), or right after a word naming it ("account 1234…", "AccountId: '1234…'", "owner=1234…", a
# list "accounts 1111… and 2222…"). Any other 12 digits (a count, an amount, a request id) are left as they are.
_ACCOUNT_FIELD = re.compile(r"(?<=:)\d{12}(?=:)")
_ACCOUNT_AFTER_WORD = re.compile(
    r"(?i)(?:account|owner|principal)s?(?:[ _-]?ids?)?[\"']?\s*(?:[:=#]\s*)?[\"']?"
    r"\d{12}(?!\d)(?:[\"']?(?:\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+)[\"']?\d{12}(?!\d))*"
)
_TWELVE_DIGITS = re.compile(r"(?<!\d)\d{12}(?!\d)")


_URL_USERINFO = re.compile(r"(?<=://)[^/@\s'\"]*@")


def redact(text: str) -> str:
    """No raw ARNs or account ids in what we print or export (AWS error messages carry both), and no user:password
    of a URL (an endpoint URL may carry one)."""
    text = _ARN.sub("arn:aws:…", _URL_USERINFO.sub("***@", text))
    text = _ACCOUNT_FIELD.sub(_mask, text)
    return _ACCOUNT_AFTER_WORD.sub(lambda m: _TWELVE_DIGITS.sub(_mask, m.group()), text)


def _mask(account: re.Match[str]) -> str:
    return "********" + account.group()[-4:]


SHOWN = 60  # characters of an echoed value a message keeps
_LONGEST = 80  # a value up to this long is echoed whole: cutting a few characters would hide more than it saves
_LONGEST_MESSAGE = 500
_RUN = re.compile(rf"\S{{{_LONGEST + 1},}}")
_OPENS_AFTER = " \t=([:"  # a quote opens a value after these (so an apostrophe in a word never does)
_CLOSES_BEFORE = " \t,.;:)]"


def clip(text: str) -> str:
    """`text` with every long value it echoes cut to its first characters and its length: a 100 KB --variant or a
    5,000-digit number would make the one line of an error unreadable (and bury its fix)."""
    text = _clip_values(text)
    # Values with spaces and no quotes: the line itself is cut, rather than left to fill a screen.
    return text if len(text) <= _LONGEST_MESSAGE else f"{text[:_LONGEST_MESSAGE]}… ({len(text):,} characters)"


def _clip_values(text: str) -> str:
    """Values quoted by repr (their own quote escaped inside) cut, and long runs without a space between them; a
    scan, not a regex, so a text of many quotes that never close stays linear."""
    out: list[str] = []
    i, n, plain, unclosed = 0, len(text), 0, set[str]()
    while i < n:
        quote = text[i]
        if quote not in "'\"" or quote in unclosed or (i and text[i - 1] not in _OPENS_AFTER):
            i += 1
            continue
        j = i + 1
        while j < n and not (text[j] == quote and (j + 1 == n or text[j + 1] in _CLOSES_BEFORE)):
            j += 2 if text[j] == "\\" else 1
        if j >= n:
            unclosed.add(quote)  # no later one of this quote can close either
            i += 1
            continue
        value = text[i + 1 : j]
        out.append(_clip_runs(text[plain:i]))
        long = len(value) > _LONGEST
        out.append(f"{quote}{value[:SHOWN]}…{quote} ({len(value):,} characters)" if long else text[i : j + 1])
        i = plain = j + 1
    out.append(_clip_runs(text[plain:]))
    return "".join(out)


def _clip_runs(text: str) -> str:
    return _RUN.sub(lambda m: f"{m[0][:SHOWN]}… ({len(m[0]):,} characters)", text)


class LabError(Exception):
    """Something the user can act on; the message names the problem, `fix` says what to do."""

    exit_code = 1

    def __init__(self, problem: str, fix: str = "") -> None:
        problem = clip(redact(problem))
        super().__init__(problem)
        self.problem = problem
        self.fix = clip(redact(fix))

    def __str__(self) -> str:
        return f"{self.problem} — {self.fix}" if self.fix else self.problem


class BadInput(LabError):
    """An argument or a setting is out of range, unknown or malformed."""

    exit_code = 2


class BackendUnavailable(LabError):
    """The DynamoDB endpoint cannot be reached or refused our credentials."""


class BadCredentials(BackendUnavailable):
    """No credentials, or ones the backend rejects: unknown key id, wrong secret, expired token, bad profile."""


class PermissionDenied(BackendUnavailable):
    """The credentials are valid but may not make a call the lab needs (AccessDenied)."""


class AwsNotConfirmed(LabError):
    """A run would touch real AWS and the user has not opted in."""

    exit_code = 2


class ForeignTable(LabError):
    """A table exists that the lab did not create; we will not write to it unasked."""

    exit_code = 2


class TableNameTaken(LabError):
    """CreateTable was refused because the name is in use: someone else's table, never to be touched."""


class ServerDied(LabError):
    """The embedded DynamoDB process stopped while a run was using it."""


class ClientsLost(LabError):
    """A client process or thread ended without finishing its work: the run is incomplete, so it is not judged."""


class ServerStartFailed(LabError):
    """The embedded DynamoDB process did not come up."""


class HistoryFileError(LabError):
    """An imported history file is not a lab history (truncated, not JSONL, wrong fields)."""

    exit_code = 2


def server_died() -> ServerDied:
    """The embedded server went away during a run: one message wherever the run notices."""
    return ServerDied(
        "the embedded DynamoDB stopped during the run", "the calls recorded so far are kept; start a new run"
    )


def one_line(e: BaseException | None, limit: int | None = 200) -> str:
    """An exception as one line (of at most `limit` characters), for the one-line messages the lab shows."""
    text = " ".join(str(e).split()) if e is not None else ""
    return (text[:limit] if limit else text) or type(e).__name__
