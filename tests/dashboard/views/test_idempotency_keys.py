"""27 · Idempotency keys' view: the extra charges the invariant found, replays and in-progress refusals in the safe
variant, counted as the whole-history oracle below counts them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from dashboard.state.frames import details, strings, where
from dashboard.state.verdicts import invariant
from dashboard.views.idempotency_keys import Charges, idempotency_view
from engine.patterns.idempotency_keys import ONE_CHARGE
from tests.dashboard.helpers import frame, valid

# -- the oracle -----------------------------------------------------------------------------------------------------


def idempotency_facts(frame: Any) -> dict[str, int]:
    """Requests, sends, charges made (distinct charge ids), extra charges, replays, in-progress refusals."""
    actions = strings(frame["action"])
    outcome = strings(frame["outcome"])
    interesting = where(frame["action"], ["claim", "charge", "read-record", "reclaim"])
    sub = frame[interesting]
    ds = details(sub)
    acts, outs = actions[interesting], outcome[interesting]
    requests: set[str] = set()
    sends: set[tuple[int, str, int]] = set()
    charges: dict[str, set[str]] = defaultdict(set)
    replays = waits = refused = reclaims = 0
    for client, action, out, d in zip(sub["client"].tolist(), acts, outs, ds):
        request = d.get("request")
        if request is None:
            continue
        if not d.get("reuse"):
            requests.add(request)
        if action in ("claim", "charge"):
            sends.add((client, request, int(d.get("attempt") or 0)))
        if action == "charge" and out in ("ok", "info") and d.get("charge") and not d.get("reuse"):
            charges[request].add(str(d["charge"]))
        elif action == "read-record" and out == "ok":
            if d.get("record") == "completed" and d.get("reply"):
                replays += 1
            elif d.get("told") == "wait":
                waits += 1
            elif d.get("reply") == "refused":
                refused += 1
        elif action == "reclaim" and out == "ok":
            reclaims += 1
    made = sum(len(c) for c in charges.values())
    return {
        "logical requests": len(requests),
        "sends (retries and duplicates included)": len(sends),
        "charges made": made,
        "extra charges": made - len(charges),
        "replays of a stored reply": replays,
        "in-progress refusals (retry later)": waits,
        "key reused with another amount: refused": refused,
        "stuck claims taken over": reclaims,
    }


# -- the view -----------------------------------------------------------------------------------------------------------


def test_idempotency_view_counts_extra_charges() -> None:
    f, summary = frame("idempotency-keys-racy")
    facts = Charges.of(f).facts()
    inv = invariant(summary["invariants"], ONE_CHARGE)
    assert inv is not None and facts["extra charges"] == inv["violations"] == 9
    assert "9 extra charges" in valid(idempotency_view(f)).layout.title.subtitle.text
    f, _ = frame("idempotency-keys-safe")
    facts = Charges.of(f).facts()
    assert facts["extra charges"] == 0 and facts["replays of a stored reply"] > 0
    assert facts["in-progress refusals (retry later)"] > 0


@pytest.mark.parametrize("name", ["idempotency-keys-racy", "idempotency-keys-safe"])
def test_charges_match_the_oracle(name: str) -> None:
    f, _ = frame(name)
    assert Charges.of(f).facts() == idempotency_facts(f)
