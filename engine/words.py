"""Counts and clients in words, one way for the engine and the dashboard: "1 lease", "2 leases", "1,000 calls";
"client 3". Every count printed with its noun goes through `plural`, so a run with one takeover never reads
"1 takeovers"."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and its noun, singular for exactly one; `many` for a plural that is not noun + "s" ("retries")."""
    return f"{n:,} {noun if n == 1 else (many or noun + 's')}"


def client_name(client: int) -> str:
    """One name for a client wherever a story, a verdict, a chart or a hover shows it: "client 3", numbered as the
    history numbers clients (from 0). The items a client writes name it "client-3" (a lock's owner)."""
    return f"client {client}"


def agree(n: int, one: str, many: str) -> str:
    """The verb (or pronoun) that goes with a count of `n`: agree(1, "was", "were") is "was"."""
    return one if n == 1 else many
