"""The names the clients, the invariants, the walkthrough and the dashboard's view of distributed locking share."""

from __future__ import annotations

# What the dashboard's view reads: the lock calls and the protected writes, with the lease in their details.
ACQUIRE = "acquire"
HEARTBEAT = "heartbeat"
RELEASE = "release"
WRITE = "write"
DETAIL_HOLD = "hold"
DETAIL_TOKEN = "token"
DETAIL_NOW = "now"
DETAIL_EXPIRES_AT = "expiresAt"
DETAIL_PAUSED = "paused"

LOCK = {"PK": "LOCK#job", "SK": "LOCK"}
RESOURCE = {"PK": "RESOURCE#job", "SK": "STATE"}
OWNER = {"#owner": "owner"}  # OWNER is a DynamoDB reserved word
ACQUIRE_CONDITION = "attribute_not_exists(PK) OR expiresAt < :now"
