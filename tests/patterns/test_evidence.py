"""The calls named as evidence cover the whole run: all of them, or an even sample, with the total kept."""

from __future__ import annotations

from engine.backends.backend import Backend
from engine.patterns.base import EVIDENCE_LIMIT, Invariant, even_sample, evidence_caption
from engine.run.runner import RunConfig, run_pattern
from tests.lockstep import Lockstep


def broken(calls: tuple[int, ...]) -> Invariant:
    return Invariant(name="x", holds=False, expected=0, observed=len(calls), explanation="", calls=calls)


def test_a_thousand_broken_calls_keep_an_even_sample_from_first_to_last_and_the_total() -> None:
    inv = broken(tuple(range(1000, 0, -1)))  # in any order, with the History's seqs 1..1000
    assert len(inv.calls) == EVIDENCE_LIMIT == 200
    assert inv.calls[0] == 1 and inv.calls[-1] == 1000  # the run's first and last broken call
    gaps = {b - a for a, b in zip(inv.calls, inv.calls[1:])}
    assert gaps <= {5, 6}  # evenly spaced: 999 / 199 ≈ 5.02
    assert inv.calls_total == 1000 and inv.sampled
    assert inv.as_dict()["calls_total"] == 1000
    assert evidence_caption(inv.as_dict()) == "200 of 1,000 calls, sampled evenly over the run"


def test_few_broken_calls_are_all_kept_once_each() -> None:
    inv = broken((7, 3, 7, 12))  # a call named twice (e.g. one side of two overlaps) counts once
    assert inv.calls == (3, 7, 12) and inv.calls_total == 3 and not inv.sampled
    assert evidence_caption(inv.as_dict()) == "all 3 calls"
    assert evidence_caption(broken(()).as_dict()) == "no calls named"


def test_an_older_record_without_a_total_says_it_kept_at_most_the_first_40() -> None:
    old = {"name": "no lost update", "holds": False, "calls": list(range(40))}
    assert evidence_caption(old) == "40 calls (an older record: at most the first 40 were kept)"


def test_even_sample_edges() -> None:
    assert even_sample([1, 2, 3], 5) == (1, 2, 3)
    assert even_sample(list(range(10)), 2) == (0, 9)
    assert even_sample(list(range(10)), 1) == (0,)


def test_a_racy_counter_names_lost_increments_from_the_whole_run_not_its_first_second(backend: Backend) -> None:
    # Every call in lockstep (15 ops of 6 calls: the tickets never sell out): in each op all 12 clients read the
    # count before any writes it, so increments are lost from the run's first op to its last, in every run.
    lockstep = Lockstep(backend, clients=12, rounds=15 * 6)
    run = run_pattern(
        RunConfig(pattern="atomic-counters", variant="read-then-put", threads=12, ops_per_client=15), lockstep
    )
    lockstep.check()
    lost = run.invariants_by_name()["final count = acknowledged increments"]
    assert not lost.holds
    frame = run.history.snapshot()
    increments = frame[frame["action"] == "increment"].sort_values("seq")
    assert lost.calls_total is not None and lost.calls_total > 40  # more than the old cut kept
    # Rank of each named call among the run's increments: the evidence reaches the run's last quarter too.
    rank = {int(s): i / (len(increments) - 1) for i, s in enumerate(increments["seq"])}
    ranks = sorted(rank[s] for s in lost.calls)
    assert ranks[0] < 0.25 and ranks[-1] > 0.75, (ranks[0], ranks[-1])
