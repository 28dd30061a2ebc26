"""The names the clients, the invariants and the walkthrough of conditional writes share."""

from __future__ import annotations

PROFILE = "PROFILE"
ACTIVE = "active"
SUSPENDED = "suspended"
