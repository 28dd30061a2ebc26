"""25 · Transactions' view: the cancellation reasons first, then every action's outcomes; a variant that makes no
transaction shows only the latter."""

from __future__ import annotations

from dashboard.views import pattern_views
from tests.dashboard.helpers import frame, valid


def test_transact_variant_shows_why_placements_were_cancelled() -> None:
    f, summary = frame("transactions-safe")
    heatmap, actions = pattern_views(summary["pattern"], f, summary["invariants"], summary["options"])
    assert valid(heatmap).data[0].type == "heatmap"
    assert valid(actions).layout.title.text == "<b>Calls per action and outcome</b>"


def test_without_transactions_only_the_outcomes_per_action() -> None:
    f, _ = frame("atomic-counters-safe")  # no TransactWriteItems at all
    (fig,) = pattern_views("transactions", f)
    assert valid(fig).layout.title.text == "<b>Calls per action and outcome</b>"
