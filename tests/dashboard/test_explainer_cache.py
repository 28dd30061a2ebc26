"""The witnesses the timeline marks are kept for the last few runs in one cache every session's script thread
shares: two sessions trimming it at once must not both evict the same oldest entry (the second's KeyError was a
crashed page). Made certain here: the other session's whole call is run at the exact moment the first is
choosing which entry to evict."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from dashboard.widgets import explainer


class _Interleaved(dict[tuple[str, int], Any]):
    """The cache, whose first walk for its oldest entry lets `other` run first (given a few seconds: a lock that
    holds it back is what the fix is)."""

    other: Any = None

    def __iter__(self) -> Any:
        other, type(self).other = type(self).other, None
        if other is None:
            return super().__iter__()
        oldest = next(super().__iter__())  # chosen: then the other session runs, before it is evicted
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(timeout=3)
        self.joined = thread
        return iter([oldest])


def run(run_id: str) -> Any:
    return SimpleNamespace(id=run_id, history=[1, 2, 3])


def test_two_sessions_trimming_the_witness_cache_at_once_both_get_their_witnesses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(explainer, "_verdicts", lambda record: [{"key": "no-lost-update"}])
    monkeypatch.setattr(explainer.explain_panel, "witness", lambda record, inv: f"witness of {record.id}")
    cache = _Interleaved({(f"old-{i}", 3): {} for i in range(explainer._KEEP)})  # full
    monkeypatch.setattr(explainer, "_FOUND", cache)
    errors: list[BaseException] = []
    got: dict[str, Any] = {}

    def other_session() -> None:
        try:
            got["other"] = explainer.witnesses(run("other"))
        except BaseException as e:
            errors.append(e)

    _Interleaved.other = other_session
    mine = explainer.witnesses(run("mine"))
    cache.joined.join(timeout=10)
    assert not errors, errors
    assert mine == {"no-lost-update": "witness of mine"}
    assert got["other"] == {"no-lost-update": "witness of other"}
    assert len(cache) <= explainer._KEEP
