"""The request object the fast path hands moto's DynamoHandler (fastpath.py), and moto's request id, both cheaper
than moto's own for the same values.

moto reads a request's headers through werkzeug's EnvironHeaders, a live view of the WSGI environ: every lookup
rebuilds the environ key from the header's name (upper-case, dashes to underscores), and listing the headers
rebuilds every name from its environ key (title case). A DynamoDB call makes about thirty lookups and lists them
once; here each name is turned into its key once per process, and each key into its name. The view stays live.
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from typing import Any, ClassVar

from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY, EnvironHeaders, Request

# The parts of the WSGI environ that werkzeug builds a request's URL from.
_URL_KEYS = (
    "wsgi.url_scheme",
    "HTTP_HOST",
    "SERVER_NAME",
    "SERVER_PORT",
    "SCRIPT_NAME",
    "PATH_INFO",
    "QUERY_STRING",
    "RAW_URI",
)
_CACHED_NAMES = 1024  # names come from clients: a bound, so that odd headers cannot grow the caches forever
_ENVIRON_KEYS: dict[str, str] = {}  # header name -> its WSGI environ key
_HEADER_NAMES: dict[str, str] = {}  # environ key -> the header name werkzeug lists it under ("" for no header)
_CONTENT_KEYS = frozenset({"CONTENT_TYPE", "CONTENT_LENGTH"})


def _environ_key(name: str) -> str:
    """werkzeug's EnvironHeaders._get_key, without the lookup."""
    key = name.upper().replace("-", "_")
    return key if key in _CONTENT_KEYS else f"HTTP_{key}"


def _header_name(key: str) -> str:
    """The name werkzeug's EnvironHeaders.__iter__ lists an environ key under; "" for a key that is no header."""
    if key.startswith("HTTP_") and key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
        return key[5:].replace("_", "-").title()
    if key in _CONTENT_KEYS:
        return key.replace("_", "-").title()
    return ""


class FastEnvironHeaders(EnvironHeaders):
    """moto's EnvironHeaders (a live view of the environ) with the names and keys translated once per process."""

    def _get_key(self, key: str) -> str:
        if type(key) is not str:
            return super()._get_key(key)
        environ_key = _ENVIRON_KEYS.get(key)
        if environ_key is None:
            environ_key = _environ_key(key)
            if len(_ENVIRON_KEYS) < _CACHED_NAMES:
                _ENVIRON_KEYS[key] = environ_key
        return self.environ[environ_key]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        if self.environ.get(PRESERVED_HEADER_NAMES_ENVIRON_KEY):  # names as sent (S3 metadata): moto's own way
            yield from super().__iter__()
            return
        yield from self._listed()

    def as_dict(self) -> dict[str, str]:
        """dict(self), as moto's Flask route passes the headers to a handler, without a generator per header."""
        if self.environ.get(PRESERVED_HEADER_NAMES_ENVIRON_KEY):
            return dict(super().__iter__())
        return dict(self._listed())

    def _listed(self) -> list[tuple[str, str]]:
        listed = []
        for key, value in self.environ.items():
            name = _HEADER_NAMES.get(key)
            if name is None:
                name = _header_name(key)
                if len(_HEADER_NAMES) < _CACHED_NAMES:
                    _HEADER_NAMES[key] = name
            # werkzeug lists an empty Content-Type or Content-Length as absent, any other empty header as it is.
            if name and (value or key not in _CONTENT_KEYS):
                listed.append((name, value))
        return listed


class ServerRequest(Request):
    """moto's Request for a call a real server received, with the faster headers and a cached URL."""

    # As moto's Flask request class: a real server received it, so moto adds no Date header of its own.
    from_wsgi_server = True
    plain = False  # set by the fast path for a POST of a JSON body without query string or encoding (fast_setup.py)
    _urls: ClassVar[dict[tuple[Any, ...], str]] = {}

    def __init__(self, environ: dict[str, Any]) -> None:
        super().__init__(environ)
        self.headers: FastEnvironHeaders = FastEnvironHeaders(self.environ)

    @property
    def raw_url(self) -> str:
        # werkzeug rebuilds the URL (host parsing, IRI decoding) on every request; it is always the same one.
        key = tuple(map(self.environ.get, _URL_KEYS))
        url = self._urls.get(key)
        if url is None:
            url = super().raw_url
            if len(self._urls) < 256:
                self._urls[key] = url
        return url


_ID_CHARS = string.ascii_letters + string.digits  # as MotoRandom.get_random_string
_ID_TABLE = bytes(ord(_ID_CHARS[i % len(_ID_CHARS)]) for i in range(256))


def request_id_maker(source: Any) -> Any:
    """moto's gen_amzn_requestid_long: 52 letters and digits from `source` (moto's seeded random), put in the
    headers when given. From one 416-bit draw rather than 52 (a byte mod 62 favours a few letters slightly: an
    id only has to be unique)."""

    def request_id(headerdict: dict[str, Any] | None = None) -> str:
        req_id = source.getrandbits(416).to_bytes(52, "little").translate(_ID_TABLE).decode("ascii")
        if headerdict is not None and isinstance(headerdict, dict):
            headerdict["x-amzn-requestid"] = req_id
        return req_id

    return request_id
