"""Counts in words: "1 lease", "2 leases", "1,000 calls". Every count with a noun on a screen goes through
`plural`, so a run with one takeover never reads "1 takeovers"."""

from __future__ import annotations

from engine.explain.witness import client_name

__all__ = ["client_name", "plural"]


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and its noun, singular for exactly one; `many` for a plural that is not noun + "s" ("retries")."""
    return f"{n:,} {noun if n == 1 else (many or noun + 's')}"
