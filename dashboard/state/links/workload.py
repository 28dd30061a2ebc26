"""A scenario link that carries a whole workload: its YAML text, zlib-compressed and base64url-encoded, in one URL
parameter (`?wl=...`), so a team can send the workload it wrote, not only a shipped preset's name.

Plain Python, tested without a browser. `decode` never raises anything but `LinkRefused`, one line saying what is
wrong with the link as a whole; what is wrong inside the workload it carries is the editor's to say, field by
field, as for a typed one. The text decoded is capped before it is inflated (a few bytes of zlib can inflate to
gigabytes), so a link cannot cost the dashboard more than a typed workload does."""

from __future__ import annotations

import base64
import binascii
import re
import zlib

from engine.workloads.schema.limits import MAX_FILE_CHARS

PARAM = "wl"
# A workload at its size cap compresses to a few KB; browsers and proxies keep URLs of 16 KB or more, and a link
# past this was cut or made by hand.
MAX_LINK_CHARS = 16_384
_MAX_BYTES = MAX_FILE_CHARS * 4  # UTF-8 takes at most 4 bytes a character: the schema then counts characters
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class LinkRefused(ValueError):
    """The link's workload parameter cannot be read: the message says why and what to do."""


def encode(text: str) -> str:
    """The workload text as the link's parameter value: URL-safe, no padding."""
    packed = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).rstrip(b"=").decode("ascii")


def decode(value: str) -> str:
    """The workload text a link's parameter value carries; LinkRefused (one line) for a value that is too long, not
    base64url, cut short or changed, too large once inflated, or not UTF-8 text."""
    if len(value) > MAX_LINK_CHARS:
        raise LinkRefused(
            f"The link's workload is {len(value):,} characters long, above the {MAX_LINK_CHARS:,} a link may carry: "
            "share the YAML file instead, or pick a preset."
        )
    value = value.strip()
    if not value:
        raise LinkRefused("The link's workload is empty: copy the whole link again, or pick a preset.")
    if not _BASE64URL.fullmatch(value):
        raise LinkRefused(
            "The link's workload is not one the Copy link button wrote (it has characters other than A-Z, a-z, "
            "0-9, '-' and '_'): copy the whole link again."
        )
    damaged = LinkRefused("The link's workload is damaged (cut short or changed): copy the whole link again.")
    try:
        packed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        raise damaged from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(packed, _MAX_BYTES + 1)
    except zlib.error:
        raise damaged from None
    if len(raw) > _MAX_BYTES or inflater.unconsumed_tail:
        raise LinkRefused(
            f"The link's workload is larger than a workload may be ({MAX_FILE_CHARS:,} characters): share the YAML "
            "file instead."
        )
    if not inflater.eof or inflater.unused_data:  # cut short, or more after its end
        raise damaged
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise damaged from None
