"""The judge's boto3 client: patient with answers that say "not now", careful with writes whose answer was lost."""

from __future__ import annotations

import random
import time
from typing import Any

from botocore.exceptions import ClientError, EndpointConnectionError, HTTPClientError

from engine.backends.credential_errors import error_code

# Answers that say "not now", not "no": the same request may be taken a moment later.
TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "LimitExceededException",
    }
)
# Calls that change nothing, so sending them again after a lost answer is harmless.
_READ_METHODS = frozenset(
    {
        "get_item",
        "query",
        "scan",
        "batch_get_item",
        "transact_get_items",
        "describe_table",
        "list_tables",
        "list_tags_of_resource",
        "describe_time_to_live",
    }
)


class PatientClient:
    """A boto3 DynamoDB client for the judge: each call is tried again, with exponential backoff, while the
    answer is throttling or a transient server error (any call: such an answer means it was not applied), or a
    lost connection or timeout (reads only: a write whose answer was lost may have been applied).

    Without it a verification read throttled past botocore's few retries lost the whole verdict."""

    def __init__(self, client: Any, *, attempts: int = 12, base_s: float = 0.05, cap_s: float = 1.0) -> None:
        self._client = client
        self.attempts = attempts
        self.base_s = base_s
        self.cap_s = cap_s
        self.retried = 0  # tries beyond the first, over all calls: what the faults cost the judge

    @property
    def meta(self) -> Any:
        return self._client.meta

    def close(self) -> None:
        self._client.close()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if name.startswith("_") or not callable(method):
            return method
        read = name in _READ_METHODS

        def patient(*args: Any, **kwargs: Any) -> Any:
            for attempt in range(self.attempts):
                last = attempt + 1 == self.attempts
                try:
                    return method(*args, **kwargs)
                except ClientError as e:
                    status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
                    if last or not (error_code(e) in TRANSIENT_CODES or (read and status >= 500)):
                        raise
                except (EndpointConnectionError, HTTPClientError):
                    if last or not read:
                        raise
                self.retried += 1
                time.sleep(random.uniform(0.5, 1.0) * min(self.cap_s, self.base_s * 2**attempt))
            raise AssertionError("unreachable")

        return patient
