"""moto's BaseResponse.setup_class for the plain DynamoDB calls the fast path prepared (fastpath.py), with the
same attributes set and less work per request.

setup_class runs on every request and was about a third of a PutItem's server time. For a request the fast path
prepared (a POST of a JSON body, no query string, no Content-Encoding, no form: `ServerRequest.plain`) most of
its steps have one possible outcome, and the others are pure functions of values that repeat:

- the body is never gzip (no Content-Encoding), the form and files are empty, the query string too;
- the region comes from the URL and the User-Agent (two regex searches, cached per pair) or else from the
  Authorization header, as in moto;
- the raw path of "/" without a RAW_URI is "/";
- the account of an access key: moto looks the key up in every IAM backend of every partition, creating the
  missing ones (empty); a backend that does not exist yet holds no key, so only the existing ones are looked at,
  and the key's "last used" is recorded only when some backend holds it (moto's own code then does it).

Anything else (a body that is empty, a call from elsewhere with its own URL or headers) goes to moto's own.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import moto.core.responses as core_responses
from moto.core import DEFAULT_ACCOUNT_ID
from moto.utilities.utils import PARTITION_NAMES

_REGIONS: dict[tuple[str, str], str | None] = {}  # (URL, User-Agent) -> the region they name, None: neither does


def region_of(handler: Any, request: Any, full_url: str) -> str:
    """BaseResponse.get_region_from_url, with the URL's and the User-Agent's regex searches done once per pair."""
    headers = request.headers
    authorization = headers["Authorization"] if "Authorization" in headers else None
    return region_from(handler, full_url, headers.get("User-Agent", ""), authorization)


def region_from(handler: Any, full_url: str, agent: str, authorization: str | None) -> str:
    """region_of from the User-Agent and Authorization headers' values (None: no such header)."""
    key = (full_url, agent)
    if key in _REGIONS:
        region = _REGIONS[key]
    else:
        url_match = handler.region_regex.search(full_url)
        agent_match = handler.region_from_useragent_regex.search(agent)
        region = url_match.group(1) if url_match else agent_match.group(1) if agent_match else None
        if len(_REGIONS) < 256:
            _REGIONS[key] = region
    if region is not None:
        return region
    if authorization is not None and "AWS4" in authorization:
        return authorization.split(",")[0].split("/")[2]
    return str(handler.default_region)


def _iam_backend(account: Any, partition: str) -> Any:
    """The account's IAM backend of that partition if it exists, without creating it (moto's [] would)."""
    return dict.get(account, partition) if account is not None else None


_iam_models: Any = None  # moto.iam.models once imported: an import statement per request cost a few microseconds


def _import_iam() -> Any:
    """moto.iam.models, imported on first use (as moto does), then kept."""
    global _iam_models
    from moto.iam import models

    _iam_models = models
    return models


def account_of(access_key: str) -> str:
    """moto.iam.models.get_account_id_from, looking only at the IAM backends that exist."""
    iam = _iam_models or _import_iam()
    for account_id, account in list(dict.items(iam.iam_backends)):
        for partition in PARTITION_NAMES:
            backend = _iam_backend(account, partition)
            if backend is not None and access_key in backend.access_keys:
                return str(account_id)
    return DEFAULT_ACCOUNT_ID


def mark_visited(account_id: str, access_key: str, service: str, region: str) -> None:
    """moto.iam.models.mark_account_as_visited, which changes something only when a backend holds the key."""
    iam = _iam_models or _import_iam()
    backend = _iam_backend(dict.get(iam.iam_backends, account_id), core_responses.get_partition(region))
    if backend is not None and access_key in backend.access_keys:
        iam.mark_account_as_visited(account_id=account_id, access_key=access_key, service=service, region=region)


def setup_class_for_plain(original: Callable[..., None]) -> Callable[..., None]:
    """`original` (BaseResponse.setup_class) with the short way for a plain request (the module docstring)."""

    def setup_class(
        self: Any, request: Any, full_url: str | None = None, headers: Any = None, use_raw_body: bool | None = None
    ) -> None:
        if not getattr(request, "plain", False) or headers is not None or use_raw_body is not None:
            return original(self, request, full_url, headers, use_raw_body)
        raw_body = request.data
        body = raw_body.decode("utf-8") if raw_body and not self.use_raw_body else ""
        # No form and no query string: moto parses the body as one, whatever it holds; so does this.
        pairs = core_responses.parse_qsl(body, keep_blank_values=True)
        if not pairs:  # an empty body: moto then reads the headers as the query string, its own way
            return original(self, request, full_url, request.headers.as_dict(), use_raw_body)
        self.is_werkzeug_request = request.from_wsgi_server
        full_url = request.raw_url if full_url is None else full_url
        self.normalized_request = request
        self.parsed_url = core_responses.urlparse(full_url)
        self.form_data = request.form
        self.raw_body = raw_body
        self.body = body
        querystring: dict[str, Any] = OrderedDict((key, [value]) for key, value in pairs)
        self.querystring = self.data = core_responses._decode_dict(querystring)
        self.uri = full_url
        self.path = self.parsed_url.path
        self.raw_path = "/" if not request.environ.get("RAW_URI") and request.path == "/" else request.raw_path
        self.method = request.method
        self.region = region_of(self, request, full_url)
        self.partition = core_responses.get_partition(self.region)
        self.uri_match = {}
        if "host" not in request.headers:
            request.environ["HTTP_HOST"] = self.parsed_url.netloc
        self.headers = request.headers
        self.response_headers = {"server": "amazon.com"}
        if not self.is_werkzeug_request:
            self.response_headers["date"] = core_responses.http_date(core_responses.utcnow())
        if self.automated_parameter_parsing and self._get_action():
            self.parse_parameters(request)
        self.access_key = self.get_access_key()
        self.current_account = self.get_current_account()
        mark_visited(self.current_account, self.access_key, self.service_name, self.region)

    return setup_class


def get_current_account(self: Any) -> str:
    """BaseResponse.get_current_account, with the access key's account found by account_of."""
    import os

    if "MOTO_ACCOUNT_ID" in os.environ:
        return os.environ["MOTO_ACCOUNT_ID"]
    return current_account(self.headers, self.get_access_key())


def current_account(headers: Any, access_key: str) -> str:
    """get_current_account for a request's headers and access key, with MOTO_ACCOUNT_ID not set."""
    if "x-moto-account-id" in headers:
        return str(headers["x-moto-account-id"])
    return account_of(access_key)
