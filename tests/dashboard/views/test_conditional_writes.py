"""22 · Conditional writes' view: every guarded action with the outcomes it came back with."""

from __future__ import annotations

from dashboard.figures.actions import ActionOutcomes
from dashboard.views import pattern_views
from tests.dashboard.helpers import call, history_of, valid


def test_refusals_per_action() -> None:
    calls = [
        call(0, "create-user", "PutItem", 0, 0.1),
        call(1, "create-user", "PutItem", 0, 0.1, "fail", "ConditionalCheckFailedException"),
        call(1, "spend", "UpdateItem", 0.2, 0.3, "info", "ReadTimeoutError"),
    ]
    f = history_of(calls).snapshot(detail=True, requests=True)
    (fig,) = pattern_views("conditional-writes", f)
    assert valid(fig).layout.title.text == "<b>Calls per action and outcome</b>"
    table = ActionOutcomes.of(f).table()
    assert table.loc["create-user"].to_dict() == {"ok": 1, "ConditionalCheckFailed": 1, "info (unknown)": 0}
    assert table.loc["spend", "info (unknown)"] == 1
