"""Counts in words: "1 lease", "2 leases", "1,000 calls". Every count with a noun on a screen goes through
`plural`, so a run with one takeover never reads "1 takeovers"; the engine's verdicts use the same one."""

from __future__ import annotations

from engine.words import client_name, plural

__all__ = ["client_name", "plural"]
