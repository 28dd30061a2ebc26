"""The generic invariants on hand-made histories: what each counts, and the bounds calls with lost answers give."""

from __future__ import annotations

from typing import Any

from engine.workloads.invariants import _no_lost_change, _one_winner


def item(changes: int) -> dict[str, Any]:
    return {"PK": "id#0", "SK": "-", "changes": changes}


def test_a_change_acknowledged_but_missing_from_the_item_is_lost() -> None:
    calls = [(0, "ok", 0, {"items": ["id#0"]}), (1, "ok", 0, {"items": ["id#0"]})]
    inv = _no_lost_change([item(1)], calls)
    assert inv.holds is False and inv.violations == 1 and inv.calls == (0, 1)


def test_a_call_whose_answer_was_lost_may_or_may_not_have_applied() -> None:
    calls = [(0, "ok", 0, {"items": ["id#0"]}), (1, "info", 1, {"items": ["id#0"]})]
    assert all(_no_lost_change([item(n)], calls).holds for n in (1, 2, 3))  # 1 acked + up to 2 attempts
    assert _no_lost_change([item(4)], calls).holds is False


def test_a_token_resend_acknowledged_settles_the_lost_answer_exactly_once() -> None:
    calls = [(0, "info", 0, {"items": ["id#0"], "token": "t"}), (1, "ok", 0, {"items": ["id#0"], "token": "t"})]
    assert _no_lost_change([item(1)], calls).holds is True
    twice = _no_lost_change([item(2)], calls)
    assert twice.holds is False and "applied more often than acknowledged" in twice.explanation


def test_two_acknowledged_creates_of_one_key_are_two_winners() -> None:
    calls = [
        (0, "ok", 0, {"created": "NEW#1"}),
        (1, "ok", 0, {"created": "NEW#1"}),
        (2, "fail", 0, {"created": "NEW#2"}),
    ]
    inv = _one_winner(calls)
    assert inv.holds is False and inv.violations == 1 and inv.calls == (0, 1)
    assert _one_winner(calls[1:]).holds is True
