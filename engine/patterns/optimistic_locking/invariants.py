"""The invariants of optimistic locking: the balance adds up, the version counts the acknowledged writes, no lost
update; read from the accounts after the run and the history's deposits and withdrawals."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pandas as pd

from engine.backends.tables import Table
from engine.patterns.base import Invariant, RunOptions
from engine.record.history import History
from engine.words import plural

# Invariant keys: what the dashboard's view finds each verdict by, whatever its wording.
BALANCE_ADDS_UP = "balance-initial-acknowledged-changes"
VERSION_COUNTS_WRITES = "version-1-successful-writes"
NO_LOST_UPDATE = "no-lost-update"

SK = "META"


def account_pk(i: int) -> str:
    return f"ACCOUNT#a{i + 1}"


def verdicts(table: Table, history: History, options: RunOptions) -> list[Invariant]:
    """Every invariant of the run, read from the table after it and from its history."""
    writes = _Writes.of(history, table, options)
    return [_balance_adds_up(writes), _version_counts_writes(writes), _no_lost_update(writes)]


@dataclass(frozen=True)
class _Writes:
    """The deposits and withdrawals the invariants read, picked out of the history once, with the final items."""

    ok: pd.DataFrame  # acknowledged writes
    unknown: pd.DataFrame  # writes with an unknown outcome
    final: dict[str, dict[str, Any]]  # the accounts as the table holds them after the run, by PK
    accounts: int
    initial_balance: int

    @classmethod
    def of(cls, history: History, table: Table, options: RunOptions) -> _Writes:
        frame = history.snapshot(detail=True)
        writes = frame[frame["action"].isin(["deposit", "withdraw"])]
        return cls(
            ok=writes[writes["outcome"] == "ok"],
            unknown=writes[writes["outcome"] == "info"],
            final={item["PK"]: item for item in table.scan_all()},
            accounts=options["accounts"],
            initial_balance=options["initial_balance"],
        )

    def account(self, i: int) -> tuple[pd.Series, dict[str, Any]]:
        """Which acknowledged writes went to account i, and its final item (a missing one reads as zeros)."""
        pk = account_pk(i)
        return self.ok["key"] == pk, self.final.get(pk, {"balance": Decimal(0), "version": Decimal(0)})

    def hedge(self) -> str:
        return f" ({plural(len(self.unknown), 'write')} had an unknown outcome)" if len(self.unknown) else ""


def _lost_updates(writes: _Writes) -> tuple[int, list[int]]:
    """Each version number may be written by one acknowledged write only; a repeat is a lost update.
    Returns how many were lost, and every write (seq) of a repeated version: the lost ones and their winners."""
    versions = pd.Series([d.get("version") for d in writes.ok["detail"]], index=writes.ok.index)
    lost = 0
    lost_rows: list[int] = []
    for i in range(writes.accounts):
        mine, _ = writes.account(i)
        lost += int(versions[mine].duplicated(keep="last").sum())
        repeated = versions[mine][versions[mine].duplicated(keep=False)].index
        lost_rows += [int(s) for s in writes.ok.loc[repeated, "seq"]]
    return lost, lost_rows


def _balance_adds_up(writes: _Writes) -> Invariant:
    ok = writes.ok
    amounts = pd.Series([d.get("amount", 0) for d in ok["detail"]], index=ok.index, dtype="int64")
    expected_balance = observed_balance = 0
    for i in range(writes.accounts):
        mine, item = writes.account(i)
        expected_balance += writes.initial_balance + int(amounts[mine].sum())
        observed_balance += int(item["balance"])
    # A write whose response was lost may or may not have landed: the balance is right if some subset
    # of the unknown amounts accounts for the difference.
    balance_ok = (observed_balance - expected_balance) in _subset_sums(
        [d.get("amount", 0) for d in writes.unknown["detail"]]
    )
    return Invariant(
        name="balance = initial + acknowledged changes",
        key=BALANCE_ADDS_UP,
        holds=balance_ok,
        expected=expected_balance,
        observed=observed_balance,
        explanation=(
            "every change a client was told succeeded is in the final balance"
            if balance_ok
            else f"the final balance is {observed_balance:,}, not the {expected_balance:,} that the acknowledged "
            "changes add up to: changes a client was told succeeded were lost"
        )
        + writes.hedge(),
        violations=0 if balance_ok else 1,
        calls=tuple(_lost_updates(writes)[1]),
    )


def _version_counts_writes(writes: _Writes) -> Invariant:
    expected_version = observed_version = 0
    for i in range(writes.accounts):
        mine, item = writes.account(i)
        expected_version += 1 + int(mine.sum())
        observed_version += int(item["version"])
    holds = expected_version <= observed_version <= expected_version + len(writes.unknown)
    return Invariant(
        name="version = 1 + successful writes",
        key=VERSION_COUNTS_WRITES,
        holds=holds,
        expected=expected_version,
        observed=observed_version,
        explanation=(
            "each acknowledged write moved the version by exactly one"
            if holds
            else f"the version reached {observed_version:,}, not the {expected_version:,} that the acknowledged "
            + (
                f"writes make: {expected_version - observed_version:,} of them left no mark on it"
                if observed_version < expected_version
                else "writes make: it moved more often than writes were acknowledged"
            )
        )
        + writes.hedge(),
        violations=max(0, expected_version - observed_version),
    )


def _no_lost_update(writes: _Writes) -> Invariant:
    lost, lost_rows = _lost_updates(writes)
    return Invariant(
        name="no lost update",
        key=NO_LOST_UPDATE,
        holds=lost == 0,
        expected=0,
        observed=lost,
        explanation=(
            f"{lost} acknowledged writes were silently overwritten: two clients wrote the "
            "same version and the later one erased the earlier"
            if lost
            else "every version number was written by exactly one acknowledged write"
        ),
        violations=lost,
        calls=tuple(lost_rows),
    )


def _subset_sums(amounts: list[int]) -> set[int]:
    sums = {0}
    for amount in amounts:
        sums |= {s + amount for s in sums}
    return sums
