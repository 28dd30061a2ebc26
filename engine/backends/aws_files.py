"""The AWS config and credentials files, checked before anything starts.

botocore parses both in every process that makes a client, the embedded server's too, so one it cannot parse
stopped the server and was reported as a server that "did not start". A file botocore reads as none (missing, a
folder, unreadable, an empty variable) is left alone: it would not stop anything.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping

from botocore.configloader import raw_config_parse
from botocore.exceptions import ConfigNotFound, ConfigParseError

from engine.errors import BadInput

# (variable, botocore's default when it is not set)
FILES = (("AWS_CONFIG_FILE", "~/.aws/config"), ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"))


def check_aws_files(environ: Mapping[str, str] | None = None) -> None:
    """BadInput naming the first AWS file botocore would fail to parse: its variable, its path, the line at fault
    and the fix; nothing when both parse or botocore would read neither."""
    env = os.environ if environ is None else environ
    for variable, default in FILES:
        given = env.get(variable)
        path = default if given is None else given  # an empty value is a path too: botocore then reads no file
        try:
            raw_config_parse(path)  # what botocore does with it, expansion of ~ and $VARS included
        except ConfigNotFound:
            continue
        except ConfigParseError as e:
            raise _refusal(variable, given, default, e.kwargs.get("error")) from None


def _refusal(variable: str, given: str | None, default: str, error: object) -> BadInput:
    what = f"{variable}={given!r}" if given is not None else f"{default} (read because {variable} is not set)"
    fix = (
        f"unset {variable} or fix the file"
        if given is not None
        else f"fix the file or move it aside (the lab's local servers need none: {variable}=/dev/null skips it)"
    )
    return BadInput(
        f"{what}: botocore cannot parse it ({_why(error)}), and no AWS client can start, the embedded server's "
        "included",
        f"{fix}; it must be INI: [section] headers, then name = value lines",
    )


def _why(error: object) -> str:
    # Never the offending line itself: in a credentials file it may be a secret key.
    if isinstance(error, UnicodeDecodeError):
        return f"byte {error.start + 1} is not text"
    if isinstance(error, configparser.MissingSectionHeaderError):
        return f"line {error.lineno} comes before any [section] header"
    if isinstance(error, configparser.ParsingError) and error.errors:
        return f"line {error.errors[0][0]} is not a name = value line"
    if isinstance(error, configparser.DuplicateOptionError):
        return f"line {error.lineno} sets {error.option!r} again in [{error.section}]"
    if isinstance(error, configparser.DuplicateSectionError):
        return f"line {error.lineno} opens [{error.section}] again"
    if isinstance(error, ValueError):  # botocore's own parse of an indented block under a setting
        return "an indented block under a setting holds a line that is not name = value"
    return "it is not an INI file"
