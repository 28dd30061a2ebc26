"""Where calls go: the embedded server (default), any endpoint URL, or AWS (guarded).

The AWS guard runs before any boto3 object exists, so a refused run makes zero AWS calls. Opening a
backend checks it before anything is written: on AWS whose credentials these are (STS), then one cheap
DynamoDB call; missing or rejected credentials and missing permissions become one LabError with a fix.
"""

from __future__ import annotations

import dataclasses
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
    HTTPClientError,
    ProxyConnectionError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from engine.backends.aws_files import check_aws_files
from engine.backends.credential_errors import AWS_CREDENTIALS_FIX, error_code, not_loaded, refused
from engine.backends.patient_client import PatientClient
from engine.backends.tables import TableSpec
from engine.errors import (
    AwsNotConfirmed,
    BackendUnavailable,
    BadInput,
    LabError,
    one_line,
)
from engine.server.control import TOKEN_HEADER
from engine.server.host.process import EmbeddedServer, is_embedded
from engine.server.profile import EXACT, ProfileSpec

RETRY_MODES = ("legacy", "standard", "adaptive")
DUMMY_CREDENTIALS = {"aws_access_key_id": "ddblab", "aws_secret_access_key": "ddblab"}


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
        """From CLI/UI choices; refuses AWS unless opted in, and malformed URLs and regions, with a fix."""
        if endpoint_url:
            endpoint_url = validate_endpoint_url(endpoint_url)
            if _is_aws_host(endpoint_url):
                aws = True
            elif aws:
                raise BadInput("--aws and a non-AWS --endpoint-url were both given", "pass only one of them")
        region = validate_region(region, aws=aws)
        if confirm_aws and not aws:  # a confirmation of nothing: the user may believe this run is on AWS
            raise BadInput(
                "--confirm-aws was given without --aws", "add --aws to run on real AWS, or leave out --confirm-aws"
            )
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
    """The URL, stripped; BadInput (never echoing a password it may carry) unless it is http(s)://host[:port]."""
    text = url.strip() if isinstance(url, str) else ""
    shown = redact_url(text)[:200]
    like = "give scheme, host and port, e.g. --endpoint-url http://127.0.0.1:8000"
    try:
        parsed = urlparse(text)
        host, port = parsed.hostname, parsed.port  # both raise ValueError on a malformed netloc or port
    except ValueError as e:
        raise BadInput(f"endpoint URL {shown!r} is malformed ({one_line(e, limit=None)})", like) from None
    if any(c.isspace() or not c.isprintable() for c in text) or len(text) > 2048:
        raise BadInput(f"endpoint URL {shown!r} contains spaces or control characters", like)
    if parsed.scheme not in ("http", "https") or not host or not _NETLOC.fullmatch(parsed.netloc.rpartition("@")[2]):
        raise BadInput(f"endpoint URL {shown!r} is not a URL like http://127.0.0.1:8000", like)
    if parsed.username is not None or parsed.password is not None:
        raise BadInput(
            f"endpoint URL {shown!r} carries a user name or password, which the lab never sends",
            "leave them out of the URL (http://HOST:PORT); DynamoDB signs requests with keys, not URL passwords",
        )
    if port is not None and not 1 <= port <= 65535:
        raise BadInput(f"endpoint URL {shown!r} has port {port}", "use a port from 1 to 65535")
    if parsed.path.strip("/") or parsed.query or parsed.fragment or parsed.params:
        raise BadInput(f"endpoint URL {shown!r} has a path or query, which DynamoDB endpoints do not", like)
    return text.rstrip("/")


_NETLOC = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?")  # host or [IPv6], then maybe a port
_USERINFO = re.compile(r"(?<=://)[^/@\s]*@")


def redact_url(text: str) -> str:
    """A URL (or any text) with the user:password part of each URL masked."""
    return _USERINFO.sub("***@", text)


# botocore's own check on region names, and the shape of AWS's (us-east-1, eu-central-2, us-gov-west-1).
_REGION = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?")
_AWS_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")


def validate_region(region: str | None, *, aws: bool) -> str:
    """The region to use: the one given, else AWS_REGION, else AWS_DEFAULT_REGION, else us-east-1; BadInput naming
    where a malformed one came from (a region is a name, not an endpoint problem)."""
    source = "the region"
    if not region:
        for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
            if os.environ.get(variable):
                region, source = os.environ[variable], f"the region in {variable}"
                break
        else:
            return "us-east-1"
    text = str(region)
    pattern = _AWS_REGION if aws else _REGION
    if not pattern.fullmatch(text):
        raise BadInput(
            f"{source} {text[:60]!r} is not a region name like us-east-1",
            "give a region such as us-east-1 or eu-west-1"
            + ("" if source == "the region" else f", or unset {source[14:]}"),
        )
    return text


def _is_aws_host(url: str) -> bool:
    host = urlparse(url).hostname or ""
    return host.endswith("amazonaws.com") or host.endswith("amazonaws.com.cn")


def unreachable(where: str, e: BotoCoreError) -> BackendUnavailable:
    """The check call's failure short of an answer, with the fix for what it was: the network, a proxy from the
    environment, or a botocore setting it could not use (whose fix is never "start the server there")."""
    if isinstance(e, ProxyConnectionError):
        return BackendUnavailable(
            f"cannot reach {where} through the proxy HTTP_PROXY/HTTPS_PROXY names ({one_line(e)})",
            "add the host to NO_PROXY (e.g. NO_PROXY=127.0.0.1,localhost), or fix or unset the proxy variable",
        )
    if not isinstance(e, (BotoConnectionError, HTTPClientError)):
        return BackendUnavailable(
            f"botocore could not set up a client for {where}: {one_line(e)}",
            "fix or unset the AWS_* setting it names (in the environment or ~/.aws/config)",
        )
    return BackendUnavailable(
        f"cannot reach {where}: {type(e).__name__}",
        "start the server there, or fix --endpoint-url (or leave it out to use the embedded server)",
    )


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
        self._local_session: boto3.session.Session | None = None
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
        check_aws_files()  # every kind: the clients made here parse them, as the embedded server does
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

    def with_profile(self, spec: TableSpec, profile: ProfileSpec) -> TableSpec:
        """`spec` naming `profile` on a server that simulates profiles (the table carries it, so a `serve` at an
        endpoint plays it); BadInput for a simulated profile on any other backend."""
        if self.profiles_supported():
            return dataclasses.replace(spec, profile_tag=profile.tag_value())
        if profile.simulated:
            raise BadInput(
                "the aws-like profile is simulated by the lab's embedded server, not by this backend",
                "leave out --endpoint-url/--aws (or point it at `python -m engine serve`), or use --profile exact",
            )
        return spec

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
            error = not_loaded(e)  # a bad AWS_PROFILE or partial keys: before any call is made
            if error is None:
                raise
            raise error from None

    def judge_client(self) -> PatientClient:
        """The client that sets up, verifies and drops a run's table: no injected faults, and throttling and
        transient errors retried with backoff (faults are for the clients, not for the judge)."""
        # botocore's standard mode waits up to 2^attempt s between tries; the judge's own backoff is shorter.
        client = self.client(threads=4, retry=RetryPolicy("standard", 1))
        if self.server is not None:  # the embedded server we started skips its injected faults for our token
            token = self.server.lab_token
            client.meta.events.register(
                "before-sign.dynamodb", lambda request, **_: request.headers.__setitem__(TOKEN_HEADER, token)
            )
        return PatientClient(client)

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
        with self._lock:  # a boto3 session is not thread-safe to build clients from; the clients it builds are
            return self._session().resource("dynamodb", **kwargs).meta.client

    def _sts_client(self) -> Any:
        config = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=2.0, read_timeout=5.0)
        with self._lock:
            return self._session().client("sts", region_name=self.spec.region, config=config)

    def _session(self) -> boto3.session.Session:
        """Called with the lock held."""
        if self.spec.kind is BackendKind.AWS:
            # A new one each time: the user may refresh their credentials between runs (aws sso login).
            return boto3.session.Session()  # raises ProfileNotFound for a bad AWS_PROFILE
        if self._local_session is None:
            # Local servers get dummy credentials, so the user's AWS_PROFILE does not matter there and must not
            # stop a run when it names a profile this machine lacks. One session for all of them: a new session
            # parses botocore's service models again, 0.3-0.5 s of CPU for each client (two or more per run).
            core = botocore.session.Session(session_vars={"profile": (None, None, None, None)})
            self._local_session = boto3.session.Session(botocore_session=core)
        return self._local_session

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
            raise refused(e, aws=self.spec.kind is BackendKind.AWS, where=where) or BackendUnavailable(
                f"{where} answered the check call with {error_code(e)}",
                "check that --endpoint-url points at a DynamoDB-compatible server, or leave it out for the "
                "embedded server",
            ) from None
        except BotoCoreError as e:
            raise not_loaded(e) or unreachable(where, e) from None
        self._checked = True

    def refusal(self, e: ClientError) -> LabError | None:
        """A call's error as rejected credentials or a denied permission, one message with its fix (None for any
        other error): what a run ends with when a session token expires, or a permission goes, after the check."""
        return refused(e, aws=self.spec.kind is BackendKind.AWS, where=self._where())

    def _where(self) -> str:
        return f"DynamoDB at {self.endpoint_url or f'AWS {self.spec.region}'}"

    def _verify_identity(self) -> str:
        """The masked account of the credentials in use. STS GetCallerIdentity needs no permission and
        writes nothing, so it tells missing or rejected credentials apart from a missing DynamoDB permission."""
        where = f"AWS STS ({self.spec.region})"
        try:
            account = self._sts_client().get_caller_identity()["Account"]
        except ClientError as e:
            raise refused(e, aws=True, where=where) or BackendUnavailable(
                f"{where} did not say whose credentials these are ({error_code(e)})", AWS_CREDENTIALS_FIX
            ) from None
        except BotoCoreError as e:
            raise not_loaded(e) or BackendUnavailable(
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


def mask_account(account: str) -> str:
    return "********" + account[-4:] if len(account) > 4 else "****"
