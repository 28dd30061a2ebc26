"""Text from a user (a link's value, an imported file, a typed address, an error quoting any of them) made safe to
put in anything Streamlit renders as Markdown: messages, captions, labels, help texts, spinners."""

from __future__ import annotations

import re
from typing import Any

# Streamlit's Markdown, even with unsafe_allow_html off, draws images (a fetch off the machine), links, bare URLs and
# e-mail addresses (GFM autolinks), headings, lists, tables, maths, `:red[...]` colours, emphasis and HTML entities.
# Each starts with one of these, escaped (CommonMark lets any ASCII punctuation be) everywhere:
_ANYWHERE = re.compile(r"([\\`*_\[\]<>!|~$&@])")
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|www)([:.])")  # a bare URL: http:// or www.
# ... and these only where a block starts, at the text's start (it is one line): a heading, a list, a quote.
_BLOCK = re.compile(r"^(\d+(?=[.)])|)([#+=.)-])")  # "# h", "- x", "+ x", "1. x", "1) x"


def plain(text: Any) -> str:
    """`text` shown as typed, on one line: never a link, an image, a colour, a heading or HTML."""
    one_line = " ".join(str(text).split())
    escaped = _AUTOLINK.sub(r"\1\\\2", _ANYWHERE.sub(r"\\\1", one_line))
    return _BLOCK.sub(r"\1\\\2", escaped)
