"""The names the clients, the invariants, the walkthrough and the dashboard's view of idempotency keys share."""

from __future__ import annotations

# What the dashboard's view reads: the calls of one logical request and the details that tell their story.
CLAIM = "claim"
CHARGE_CARD = "charge"
READ_RECORD = "read-record"
RECLAIM = "reclaim"
DETAIL_REQUEST = "request"
DETAIL_REUSE = "reuse"
DETAIL_ATTEMPT = "attempt"
DETAIL_CHARGE = "charge"
DETAIL_RECORD = "record"
DETAIL_REPLY = "reply"
DETAIL_TOLD = "told"

RECORD = "RECORD"
CHARGE = "CHARGE"
IN_PROGRESS = "IN_PROGRESS"
COMPLETED = "COMPLETED"
REFUSED = "refused"  # the reply to a key reused with another payload
DAY_S = 24 * 3600


def record_key(request_id: str) -> dict[str, str]:
    return {"PK": f"IDEMPOTENCY#{request_id}", "SK": RECORD}


def charge_key(charge_id: str) -> dict[str, str]:
    return {"PK": f"CHARGE#{charge_id}", "SK": CHARGE}
