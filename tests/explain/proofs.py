"""What proves each broken invariant, checked on a witness's own calls and nothing else.

Each check reads only the steps' recorded calls (action, key, client, times, outcome, detail), never the run's
other calls or the table: a witness that passes is a proof a reader can follow from the diagram alone.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.explain.witness import Anomaly, Step, Witness, applied, before
from engine.patterns import atomic_counters as counters
from engine.patterns.conditional_writes import invariants as conditional
from engine.patterns.distributed_locking import invariants as locking
from engine.patterns.gsi_consistency import READ_YOUR_WRITES, VISIBLE_WITHIN_LAG
from engine.patterns.idempotency_keys import invariants as idempotency
from engine.patterns.optimistic_locking import invariants as optimistic
from engine.patterns.transactions import invariants as transactions
from engine.patterns.unique_constraints.invariants import NO_SHARED_EMAIL
from engine.record.history import Outcome


def _of(w: Witness, *actions: str) -> list[Step]:
    return [s for s in w.steps if s.call.action in actions]


def two_reads_of_one_value(
    read_action: str, write_actions: tuple[str, ...], read_of: Callable[[Step], int]
) -> Callable[[Witness], None]:
    """A lost update: two clients' reads returning the same value v before their two acknowledged writes of
    what they computed from v, on one key. The value read is the one the write says it was computed from."""

    def check(w: Witness) -> None:
        writes = _of(w, *write_actions)
        assert len(writes) == 2, w
        a, b = writes
        assert a.call.outcome is Outcome.OK and b.call.outcome is Outcome.OK
        assert a.call.key == b.call.key == w.key
        assert a.call.client != b.call.client
        assert read_of(a) == read_of(b)
        for write in writes:
            reads = [r for r in _of(w, read_action) if r.call.client == write.call.client and r.call.key == w.key]
            assert len(reads) == 1 and before(reads[0].call, write.call), w
            assert reads[0].call.outcome is Outcome.OK

    return check


def _stale_write(w: Witness) -> None:
    """The writer's read, another worker's access after it, and the writer's acknowledged write after that."""
    assert w.anomaly is Anomaly.STALE_FENCED_WRITE
    read, other, write = w.steps
    assert read.call.client == write.call.client != other.call.client
    assert read.call.detail.get("hold") == write.call.detail.get("hold")
    assert read.call.action == "read" and write.call.action == "write" and other.call.action in ("read", "write")
    assert all(s.call.outcome is Outcome.OK for s in w.steps)
    assert before(read.call, other.call) and before(other.call, write.call)


def _two_owners(w: Witness) -> None:
    """Two workers' acquisitions, the later one answered while the earlier one's lease (as its acquire or its
    last renewal set it) had not run out."""
    acquires = _of(w, "acquire")
    if not acquires:  # no lock: two critical sections (read answered .. write sent) overlap
        first_read, other_read = sorted(_of(w, "read"), key=lambda s: s.call.complete_ns)
        (write,) = _of(w, "write")
        assert write.call.client == first_read.call.client != other_read.call.client
        assert write.call.detail["hold"] == first_read.call.detail["hold"]
        assert first_read.call.complete_ns <= other_read.call.complete_ns < write.call.invoke_ns
        return
    assert len(acquires) == 2 and all(s.call.outcome is Outcome.OK for s in acquires)
    first, later = sorted(acquires, key=lambda s: s.call.complete_ns)
    assert first.call.client != later.call.client
    renewals = [s for s in _of(w, "heartbeat") if s.call.client == first.call.client]
    d = (renewals or [first])[-1].call.detail
    expiry = int(d["mono_ns"]) + (int(d["expiresAt"]) - int(d["now"])) * 1_000_000
    assert first.call.complete_ns < later.call.complete_ns < expiry


def _overwrote_user(w: Witness) -> None:
    creates = _of(w, "create-user")
    assert any(s.call.outcome is Outcome.OK and s.call.detail.get("overwrote") for s in creates), w


def _negative_balance(w: Witness) -> None:
    assert any(s.call.outcome is Outcome.OK and s.call.detail.get("credits_after", 0) < 0 for s in _of(w, "spend"))


def _paid_twice(w: Witness) -> None:
    pays = [s for s in _of(w, "pay") if s.call.outcome is Outcome.OK and s.call.key == w.key]
    assert {s.call.detail.get("from") for s in pays} == {"PENDING", "PAID"}, w


def _spend_on_suspended(w: Witness) -> None:
    assert any(
        s.call.outcome is Outcome.OK and s.call.detail.get("status_after", "active") != "active"
        for s in _of(w, "spend")
    )


def _spend_wiped(w: Witness) -> None:
    (spend,) = _of(w, "spend")
    (create,) = _of(w, "create-user")
    assert spend.call.outcome is Outcome.OK and create.call.outcome is Outcome.OK and create.call.detail["overwrote"]
    assert spend.call.key == create.call.key
    # Sent after the spend returned, or overlapping it and replacing the very balance the spend left.
    replaced_its_result = create.call.detail.get("old_credits") == spend.call.detail.get("credits_after")
    assert before(spend.call, create.call) or (replaced_its_result and spend.call.invoke_ns < create.call.complete_ns)


def _ghost(w: Witness) -> None:
    assert any(s.call.outcome is Outcome.OK and s.call.detail.get("created") for s in _of(w, "rename"))


def _charged_twice(w: Witness) -> None:
    charges = _of(w, "charge")
    assert len(charges) == 2 and all(applied(s.call) for s in charges)
    assert len({s.call.detail["request"] for s in charges}) == 1
    assert len({s.call.detail["charge"] for s in charges}) == 2


def _reuse_charged(w: Witness) -> None:
    charges = _of(w, "charge")
    assert len(charges) == 2 and all(applied(s.call) for s in charges)
    assert len({s.call.detail["request"] for s in charges}) == 1
    assert [bool(s.call.detail.get("reuse")) for s in charges].count(True) == 1
    assert len({s.call.detail["amount"] for s in charges}) == 2


def _twice(action: str) -> Callable[[Witness], None]:
    def check(w: Witness) -> None:
        steps = _of(w, action)
        assert len(steps) == 2 and all(applied(s.call) for s in steps)
        assert len({(s.call.detail["customer"], s.call.detail["order"]) for s in steps}) == 1

    return check


def _shared_email(w: Witness) -> None:
    writes = _of(w, "sign-up", "change-email")
    assert len(writes) == 2 and all(s.call.outcome is Outcome.OK for s in writes)
    assert len({s.call.detail["email"].lower() for s in writes}) == 1
    assert len({s.call.detail["user"] for s in writes}) == 2


def _stale_read(w: Witness) -> None:
    (write,) = _of(w, "write")
    (read,) = _of(w, "read-back")
    assert write.call.outcome is Outcome.OK and read.call.outcome is Outcome.OK and read.call.detail["stale"]
    assert write.call.client == read.call.client and write.call.detail["op"] == read.call.detail["op"]
    assert before(write.call, read.call)


PROOFS: dict[str, Callable[[Witness], None]] = {
    counters.FINAL_COUNT: two_reads_of_one_value("read-views", (counters.INCREMENT,), lambda s: s.call.detail["read"]),
    counters.SEQUENCE_GAP_FREE: two_reads_of_one_value(
        "read-sequence", ("next-number",), lambda s: s.call.detail["number"] - 1
    ),
    counters.NEVER_OVERSOLD: two_reads_of_one_value("read-tickets", ("buy-ticket",), lambda s: s.call.detail["read"]),
    counters.REMAINING_ADDS_UP: two_reads_of_one_value(
        "read-tickets", ("buy-ticket",), lambda s: s.call.detail["read"]
    ),
    optimistic.NO_LOST_UPDATE: two_reads_of_one_value(
        "read", ("deposit", "withdraw"), lambda s: s.call.detail["read_version"]
    ),
    optimistic.BALANCE_ADDS_UP: two_reads_of_one_value(
        "read", ("deposit", "withdraw"), lambda s: s.call.detail["read_version"]
    ),
    optimistic.VERSION_COUNTS_WRITES: two_reads_of_one_value(
        "read", ("deposit", "withdraw"), lambda s: s.call.detail["read_version"]
    ),
    locking.COUNTER_MATCHES_WRITES: two_reads_of_one_value("read", ("write",), lambda s: s.call.detail["read"]),
    locking.NO_STALE_WRITE: _stale_write,
    locking.ONE_HOLDER: _two_owners,
    conditional.ONE_WINNER: _overwrote_user,
    conditional.BALANCE_NEVER_NEGATIVE: _negative_balance,
    conditional.PAID_ONCE: _paid_twice,
    conditional.SPENDS_ONLY_WHILE_ACTIVE: _spend_on_suspended,
    conditional.SPENDS_ADD_UP: _spend_wiped,
    conditional.NO_GHOST: _ghost,
    idempotency.ONE_CHARGE: _charged_twice,
    idempotency.SAME_REPLY: _charged_twice,
    idempotency.REUSE_REFUSED: _reuse_charged,
    transactions.COUNTS_AGREE: _twice("take-stock"),
    transactions.RESEND_APPLIES_ONCE: _twice("count-order"),
    NO_SHARED_EMAIL: _shared_email,
    READ_YOUR_WRITES: _stale_read,
    VISIBLE_WITHIN_LAG: _stale_read,
}
