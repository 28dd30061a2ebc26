"""Numbers the user types are written with 0-9: Python's int() and float() also read other scripts' digits ('٣',
full-width '３') as numbers, which no one means by a thread count, and which what the lab prints back never shows."""

from __future__ import annotations

ONLY = "write it with the digits 0-9"


def foreign_digits(text: str) -> bool:
    """Whether `text` holds a digit other than 0-9."""
    return any(c.isdigit() and not c.isascii() for c in text)
