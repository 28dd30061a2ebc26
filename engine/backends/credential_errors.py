"""Why a DynamoDB-compatible server refused the lab's credentials or permissions, in the user's words with the
fix: rejected keys, an expired token, a clock too far off, a denied action, credentials botocore could not load.
Only the action leaves AWS's messages; the caller's and the table's ARNs never do."""

from __future__ import annotations

import re

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConfigParseError,
    CredentialRetrievalError,
    NoCredentialsError,
    PartialCredentialsError,
    ProfileNotFound,
    RefreshWithMFAUnsupportedError,
    SSOError,
    TokenRetrievalError,
)

from engine.errors import BadCredentials, LabError, PermissionDenied, one_line

# Error codes for credentials a server will not take, in the user's words. STS spells them one way,
# DynamoDB another, and DynamoDB-compatible servers answer like DynamoDB.
_REJECTED: dict[str, str] = {
    "InvalidClientTokenId": "the access key id is not valid",
    "UnrecognizedClientException": "the access key id or security token is not valid",
    "SignatureDoesNotMatch": "the secret access key does not match the access key id",
    "InvalidSignatureException": "the secret access key does not match the access key id",
    "IncompleteSignature": "the request signature is incomplete",
    "MissingAuthenticationToken": "the request carried no credentials",
    "MissingAuthenticationTokenException": "the request carried no credentials",
    "ExpiredToken": "the session token has expired",
    "ExpiredTokenException": "the session token has expired",
    "RequestExpired": "the request signature is too old (this machine's clock is off)",
}
_EXPIRED = frozenset({"ExpiredToken", "ExpiredTokenException"})
_DENIED = frozenset({"AccessDenied", "AccessDeniedException"})
# botocore's own failures to load credentials: the message names the profile or variable at fault.
_NOT_LOADED = (PartialCredentialsError, CredentialRetrievalError, RefreshWithMFAUnsupportedError, ConfigParseError)
_ACTION = re.compile(r"perform: ([A-Za-z0-9-]+:[A-Za-z0-9*]+)")

AWS_CREDENTIALS_FIX = (
    "run `aws configure`, or set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) to valid credentials"
)
TOKEN_FIX = "refresh the session token (`aws sso login`, or new temporary credentials), then run again"
CLOCK_FIX = "set this machine's clock right (AWS accepts signatures up to 5 minutes off), then run again"
ENDPOINT_CREDENTIALS_FIX = (
    "the lab signs endpoint calls with a fixed dummy key: use a server that accepts any "
    "credentials (DynamoDB Local, LocalStack, `python -m engine serve`), or leave out "
    "--endpoint-url for the embedded server"
)
LAB_PERMISSIONS = "dynamodb:ListTables, and dynamodb:* on tables named ddblab-*"


def error_code(e: ClientError) -> str:
    return e.response.get("Error", {}).get("Code", "") or "an error"


def refused(e: ClientError, *, aws: bool, where: str) -> LabError | None:
    """Rejected credentials or a denied permission as one message with its fix; None for other errors."""
    code = error_code(e)
    if code in _DENIED:
        action = _denied_action(e)
        fix = (
            f"grant this IAM identity {action} (the lab needs {LAB_PERMISSIONS}), or use other credentials"
            if aws
            else f"allow {action} for the lab's dummy key on that server, or leave out --endpoint-url"
        )
        return PermissionDenied(f"{where} accepted the credentials but denied {action} ({code})", fix)
    if code not in _REJECTED:
        return None
    if code == "RequestExpired":
        fix = CLOCK_FIX
    elif not aws:
        fix = ENDPOINT_CREDENTIALS_FIX
    elif code in _EXPIRED:
        fix = TOKEN_FIX
    else:
        fix = AWS_CREDENTIALS_FIX
    return BadCredentials(f"{where} rejected the credentials: {_REJECTED[code]} ({code})", fix)


def _denied_action(e: ClientError) -> str:
    # Only the action leaves AWS's message: the rest names the caller's and the table's ARNs.
    match = _ACTION.search(e.response.get("Error", {}).get("Message", "") or "")
    return match.group(1) if match else f"dynamodb:{e.operation_name or 'the call'}"


def not_loaded(e: BotoCoreError) -> LabError | None:
    """botocore could not find or load credentials (nothing was sent); None for any other error."""
    if isinstance(e, NoCredentialsError):
        return BadCredentials(
            "no AWS credentials were found (environment, ~/.aws files, instance role)", AWS_CREDENTIALS_FIX
        )
    if isinstance(e, ProfileNotFound):
        return BadCredentials(
            f"the AWS profile {e.kwargs.get('profile')!r} (AWS_PROFILE) does not exist",
            "set AWS_PROFILE to a profile `aws configure list-profiles` shows, or unset it",
        )
    if isinstance(e, (SSOError, TokenRetrievalError)):
        return BadCredentials(
            f"the AWS SSO session cannot be used: {one_line(e, limit=None)}",
            "run `aws sso login` (with --profile if you use one), then run again",
        )
    if isinstance(e, _NOT_LOADED):
        return BadCredentials(
            f"the AWS credentials could not be loaded: {one_line(e, limit=None)}",
            "fix the profile or variable it names; `aws sts get-caller-identity` shows the same",
        )
    return None
