"""Where calls go: the embedded server (default), any endpoint URL, or AWS (guarded).

The AWS guard runs before any boto3 object exists, so a refused run makes zero AWS calls.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from engine.errors import AwsNotConfirmed, BackendUnavailable, BadInput
from engine.server.process import EmbeddedServer

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
    def parse(endpoint_url: str | None = None, *, aws: bool = False, confirm_aws: bool = False,
              region: str | None = None) -> BackendSpec:
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
                    "add --confirm-aws to go ahead, or leave out --aws/--endpoint-url to use the embedded server")
            return BackendSpec(BackendKind.AWS, endpoint_url, region, True)
        if endpoint_url:
            return BackendSpec(BackendKind.ENDPOINT, endpoint_url, region)
        return BackendSpec(BackendKind.EMBEDDED, None, region)


def validate_endpoint_url(url: str) -> str:
    parsed = urlparse(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BadInput(f"endpoint URL {url!r} is not a URL like http://127.0.0.1:8000",
                       "give scheme, host and port, e.g. --endpoint-url http://127.0.0.1:8000")
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

    def __init__(self, spec: BackendSpec | None = None, *, ttl_interval_s: float = 1.0) -> None:
        self.spec = spec or BackendSpec()
        self.server: EmbeddedServer | None = None
        self._ttl_interval_s = ttl_interval_s
        self._lock = threading.Lock()

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
            self.server = EmbeddedServer(ttl_interval_s=self._ttl_interval_s).start()
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

    def alive(self) -> bool:
        """False once an embedded server has died; other backends are assumed up (calls will tell)."""
        return self.server.alive() if self.server is not None else True

    def client(self, *, threads: int = 1, retry: RetryPolicy = RetryPolicy(), connect_timeout: float = 5.0,
               read_timeout: float = 10.0) -> Any:
        """A thread-safe DynamoDB client taking plain Python values (the resource layer's serializer)."""
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
        with self._lock:  # boto3's default session is not thread-safe to build clients from
            session = boto3.session.Session()
        return session.resource("dynamodb", **kwargs).meta.client

    def check(self) -> None:
        """One cheap call, so an unreachable endpoint or bad credentials fail before a run starts."""
        client = self.client(retry=RetryPolicy("standard", 1), connect_timeout=2.0, read_timeout=5.0)
        where = self.endpoint_url or f"AWS {self.spec.region}"
        try:
            client.list_tables(Limit=1)
        except NoCredentialsError:
            raise BackendUnavailable("no AWS credentials were found",
                                     "set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY") from None
        except ClientError as e:
            code = e.response.get("Error", {}).get("Code", "")
            raise BackendUnavailable(f"DynamoDB at {where} refused the credentials ({code})",
                                     "check the credentials and region, or use the embedded server") from None
        except BotoCoreError as e:
            raise BackendUnavailable(f"cannot reach DynamoDB at {where}: {type(e).__name__}",
                                     "start the server there, or fix --endpoint-url (or leave it out to use "
                                     "the embedded server)") from None

    def describe(self) -> dict[str, Any]:
        """What to show the user: never credentials; the AWS account masked."""
        info: dict[str, Any] = {"backend": self.spec.kind.value, "endpoint_url": self.endpoint_url,
                                "region": self.spec.region}
        if self.spec.kind is BackendKind.AWS:
            try:
                account = boto3.session.Session().client("sts", region_name=self.spec.region).get_caller_identity()["Account"]
                info["account"] = mask_account(account)
            except (BotoCoreError, ClientError):
                info["account"] = "unknown"
        return info


def mask_account(account: str) -> str:
    return "********" + account[-4:] if len(account) > 4 else "****"
