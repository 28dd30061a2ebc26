"""The linearizability bench's history is linearizable by construction: the check must say so (a smaller one)."""

from __future__ import annotations

from bench.engine import linearizability
from engine.explain.linearizable import LINEARIZABLE


def test_the_bench_history_is_linearizable_and_the_section_reports_its_time() -> None:
    result = linearizability.measure(n=3000, passes=1)
    assert result["calls"] == 3000 and result["verdict"] == LINEARIZABLE
    (verdict,) = linearizability.verdicts(result)
    assert verdict["figure"] == "linearizability check of 3,000 calls (s)" and verdict["pass"]
