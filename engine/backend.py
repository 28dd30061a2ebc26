"""Where calls go: the embedded server (default), any endpoint URL, or AWS (guarded).

The AWS guard runs before any boto3 object exists, so a refused run makes zero AWS calls. Opening a
backend checks it before anything is written: on AWS whose credentials these are (STS), then one cheap
DynamoDB call; missing or rejected credentials and missing permissions become one LabError with a fix.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlparse

import boto3
import botocore.session
from botocore.config import Config
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

from engine.errors import (
    AwsNotConfirmed,
    BackendUnavailable,
    BadCredentials,
    BadInput,
    LabError,
    PermissionDenied,
)
from engine.server.process import EmbeddedServer, is_embedded
from engine.server.profile import EXACT, ProfileSpec

RETRY_MODES = ("legacy", "standard", "adaptive")
DUMMY_CREDENTIALS = {"aws_access_key_id": "ddblab", "aws_secret_access_key": "ddblab"}

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


class BackendKind(StrEnum):
    EMBEDDED = "embedded"
    ENDPOINT = "endpoint"
    AWS = "aws"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """botocore's retry settings, recorded with every run. botocore never retries ConditionalCheckFailed."""

    mode: str = "standard"
    max_attempts: int = 3

    def __post_init__(self) -> None:
        if self.mode not in RETRY_MODES:
            raise BadInput(f"unknown retry mode {self.mode!r}", f"use one of {', '.join(RETRY_MODES)}")
        if not 1 <= self.max_attempts <= 20:
            raise BadInput(f"max attempts {self.max_attempts} is out of range", "use 1 to 20 (1 means no retries)")


@dataclass(frozen=True, slots=True)
class BackendSpec:
    kind: BackendKind = BackendKind.EMBEDDED
    endpoint_url: str | None = None
    region: str = "us-east-1"
    aws_confirmed: bool = False

    @staticmethod
    def parse(
        endpoint_url: str | None = None, *, aws: bool = False, confirm_aws: bool = False, region: str | None = None
    ) -> BackendSpec:
        """From CLI/UI choices; refuses AWS unless opted in, and malformed URLs, with a fix."""
        region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        if endpoint_url:
            endpoint_url = validate_endpoint_url(endpoint_url)
            if _is_aws_host(endpoint_url):
                aws = True
            elif aws:
                raise BadInput("--aws and a non-AWS --endpoint-url were both given", "pass only one of them")
        if aws:
            if not confirm_aws:
                raise AwsNotConfirmed(
                    "this would run against real AWS DynamoDB (it creates tables and costs money)",
                    "add --confirm-aws to go ahead, or leave out --aws/--endpoint-url to use the embedded server",
                )
            return BackendSpec(BackendKind.AWS, endpoint_url, region, True)
        if endpoint_url:
            return BackendSpec(BackendKind.ENDPOINT, endpoint_url, region)
        return BackendSpec(BackendKind.EMBEDDED, None, region)


def validate_endpoint_url(url: str) -> str:
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BadInput(
            f"endpoint URL {url!r} is not a URL like http://127.0.0.1:8000",
            "give scheme, host and port, e.g. --endpoint-url http://127.0.0.1:8000",
        )
    try:
        parsed.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise BadInput(f"endpoint URL {url!r} has a bad port", "use a port from 1 to 65535") from None
    return url.strip().rstrip("/")


def _is_aws_host(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host.endswith("amazonaws.com") or host.endswith("amazonaws.com.cn")


class Backend:
    """A reachable DynamoDB: owns the embedded server when there is one, and makes configured clients."""

    def __init__(
        self, spec: BackendSpec | None = None, *, ttl_interval_s: float = 1.0, profile: ProfileSpec = EXACT
    ) -> None:
        self.spec = spec or BackendSpec()
        self.profile = profile  # the embedded server's default profile (a run's own goes on its table)
        self.server: EmbeddedServer | None = None
        self._profiles: bool | None = None
        self._ttl_interval_s = ttl_interval_s
        self._lock = threading.Lock()
        self._checked = False
        self._account: str | None = None  # masked, from STS; the raw id is never kept

    @property
    def kind(self) -> BackendKind:
        return self.spec.kind

    @property
    def endpoint_url(self) -> str | None:
        if self.server is not None:
            return self.server.endpoint_url
        return self.spec.endpoint_url

    @property
    def embedded(self) -> bool:
        return self.server is not None

    def open(self) -> Backend:
        if self.spec.kind is BackendKind.EMBEDDED and self.server is None:
            self.server = EmbeddedServer(ttl_interval_s=self._ttl_interval_s, profile=self.profile).start()
        self.check()
        return self

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> Backend:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def profiles_supported(self) -> bool:
        """Whether the server simulates profiles: the embedded one, or `python -m engine serve` at an endpoint."""
        if self.server is not None:
            return True
        if self.spec.kind is not BackendKind.ENDPOINT or not self.spec.endpoint_url:
            return False
        if self._profiles is None:
            self._profiles = is_embedded(self.spec.endpoint_url)
        return self._profiles

    def alive(self) -> bool:
        """False once an embedded server has died; other backends are assumed up (calls will tell)."""
        return self.server.alive() if self.server is not None else True

    def client(
        self,
        *,
        threads: int = 1,
        retry: RetryPolicy = RetryPolicy(),
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
    ) -> Any:
        """A thread-safe DynamoDB client taking plain Python values (the resource layer's serializer)."""
        if not self._checked and self.spec.kind is not BackendKind.EMBEDDED:
            # run_pattern and benchmarks may be handed a backend nobody opened: check it on first use, so
            # bad credentials end a run before its table is made, not as a run full of failed calls.
            self.check()
        try:
            return self._make_client(
                threads=threads, retry=retry, connect_timeout=connect_timeout, read_timeout=read_timeout
            )
        except BotoCoreError as e:
            error = _not_loaded(e)  # a bad AWS_PROFILE or partial keys: before any call is made
            if error is None:
                raise
            raise error from None

    def _make_client(
        self,
        *,
        threads: int = 1,
        retry: RetryPolicy = RetryPolicy(),
        connect_timeout: float = 5.0,
        read_timeout: float = 10.0,
    ) -> Any:
        config = Config(
            max_pool_connections=max(10, threads + 4),
            retries={"mode": retry.mode, "total_max_attempts": retry.max_attempts},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            tcp_keepalive=True,
        )
        kwargs: dict[str, Any] = {"region_name": self.spec.region, "config": config}
        if self.spec.kind is not BackendKind.AWS:
            kwargs.update(DUMMY_CREDENTIALS)
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
        return self._session().resource("dynamodb", **kwargs).meta.client

    def _sts_client(self) -> Any:
        config = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=2.0, read_timeout=5.0)
        return self._session().client("sts", region_name=self.spec.region, config=config)

    def _session(self) -> boto3.session.Session:
        with self._lock:  # boto3's default session is not thread-safe to build clients from
            if self.spec.kind is BackendKind.AWS:
                return boto3.session.Session()  # raises ProfileNotFound for a bad AWS_PROFILE
            # Local servers get dummy credentials, so the user's AWS_PROFILE does not matter there and must not
            # stop a run when it names a profile this machine lacks.
            core = botocore.session.Session(session_vars={"profile": (None, None, None, None)})
            return boto3.session.Session(botocore_session=core)

    def check(self) -> None:
        """Before anything is written: on AWS who we are, then one cheap DynamoDB call. An unreachable
        endpoint, missing or rejected credentials and a missing permission each fail here, once, with a fix."""
        if self.spec.kind is BackendKind.AWS:
            self._account = self._verify_identity()
        where = self._where()
        try:
            client = self._make_client(retry=RetryPolicy("standard", 1), connect_timeout=2.0, read_timeout=5.0)
            client.list_tables(Limit=1)
        except ClientError as e:
            raise _refused(e, self.spec.kind, where) or BackendUnavailable(
                f"{where} answered the check call with {_code(e)}",
                "check that --endpoint-url points at a DynamoDB-compatible server, or leave it out for the "
                "embedded server",
            ) from None
        except BotoCoreError as e:
            raise _not_loaded(e) or BackendUnavailable(
                f"cannot reach {where}: {type(e).__name__}",
                "start the server there, or fix --endpoint-url (or leave it out to use the embedded server)",
            ) from None
        self._checked = True

    def refusal(self, e: ClientError) -> LabError | None:
        """A call's error as rejected credentials or a denied permission, one message with its fix (None for any
        other error): what a run ends with when a session token expires, or a permission goes, after the check."""
        return _refused(e, self.spec.kind, self._where())

    def _where(self) -> str:
        return f"DynamoDB at {self.endpoint_url or f'AWS {self.spec.region}'}"

    def _verify_identity(self) -> str:
        """The masked account of the credentials in use. STS GetCallerIdentity needs no permission and
        writes nothing, so it tells missing or rejected credentials apart from a missing DynamoDB permission."""
        where = f"AWS STS ({self.spec.region})"
        try:
            account = self._sts_client().get_caller_identity()["Account"]
        except ClientError as e:
            raise _refused(e, BackendKind.AWS, where) or BackendUnavailable(
                f"{where} did not say whose credentials these are ({_code(e)})", AWS_CREDENTIALS_FIX
            ) from None
        except BotoCoreError as e:
            raise _not_loaded(e) or BackendUnavailable(
                f"cannot reach {where}: {type(e).__name__}", "check the network connection and --region"
            ) from None
        return mask_account(account)

    def describe(self) -> dict[str, Any]:
        """What to show the user: never credentials; the AWS account masked."""
        info: dict[str, Any] = {
            "backend": self.spec.kind.value,
            "endpoint_url": self.endpoint_url,
            "region": self.spec.region,
        }
        if self.spec.kind is BackendKind.AWS:
            if self._account is None:
                try:
                    self._account = mask_account(self._sts_client().get_caller_identity()["Account"])
                except (BotoCoreError, ClientError):
                    pass
            info["account"] = self._account or "unknown"
        return info


def _code(e: ClientError) -> str:
    return e.response.get("Error", {}).get("Code", "") or "an error"


def _refused(e: ClientError, kind: BackendKind, where: str) -> LabError | None:
    """Rejected credentials or a denied permission as one message with its fix; None for other errors."""
    code = _code(e)
    if code in _DENIED:
        action = _denied_action(e)
        fix = (
            f"grant this IAM identity {action} (the lab needs {LAB_PERMISSIONS}), or use other credentials"
            if kind is BackendKind.AWS
            else f"allow {action} for the lab's dummy key on that server, or leave out --endpoint-url"
        )
        return PermissionDenied(f"{where} accepted the credentials but denied {action} ({code})", fix)
    if code not in _REJECTED:
        return None
    if code == "RequestExpired":
        fix = CLOCK_FIX
    elif kind is not BackendKind.AWS:
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


def _not_loaded(e: BotoCoreError) -> LabError | None:
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
            f"the AWS SSO session cannot be used: {_one_line(e)}",
            "run `aws sso login` (with --profile if you use one), then run again",
        )
    if isinstance(e, _NOT_LOADED):
        return BadCredentials(
            f"the AWS credentials could not be loaded: {_one_line(e)}",
            "fix the profile or variable it names; `aws sts get-caller-identity` shows the same",
        )
    return None


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def mask_account(account: str) -> str:
    return "********" + account[-4:] if len(account) > 4 else "****"
