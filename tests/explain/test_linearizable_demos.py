"""The linearizability check on the shipped demos (recorded histories): the racy ones, whose invariants broke,
are not linearizable; the safe ones are; and the check never disagrees with the invariants."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.explain.linearizable import LINEARIZABLE, NOT_LINEARIZABLE, check
from engine.record.history import read_jsonl
from engine.run.demos import demo_files

DEMOS = demo_files()


def test_every_pattern_has_its_demos_here() -> None:
    assert len(DEMOS) >= 16


@pytest.mark.parametrize("path", DEMOS, ids=lambda p: p.stem)
def test_a_demo_is_linearizable_exactly_when_its_invariants_hold(path: Path) -> None:
    history, meta = read_jsonl(path)
    summary = meta["summary"]
    broken = [inv["key"] for inv in summary["invariants"] if inv["holds"] is False]
    result = check(history, summary["pattern"], summary["options"], budget_s=5.0)
    assert result.verdict == (NOT_LINEARIZABLE if broken else LINEARIZABLE), result.as_dict()
    if broken:
        (first, *_) = result.broken
        assert first.prefix and set(first.prefix) <= set(range(len(history)))
