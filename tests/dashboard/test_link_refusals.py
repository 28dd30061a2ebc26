"""A link's value the page would not use is refused by name, never dropped without a word, and a link with one
does not autostart: processes for a pattern whose clients share one process (or run on a cluster), ops with a
duration limit, a duration without one, a thread count named twice, a parameter given twice."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.widgets import links
from dashboard.widgets.registry import get_registry

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")


@pytest.mark.parametrize(
    ("link", "on_cluster", "named", "unset"),
    [
        ({"pattern": "idempotency-keys", "processes": "2"}, False, "client processes '2' is not used", "processes"),
        ({"pattern": "atomic-counters", "processes": "2"}, True, "client processes '2' is not used", "processes"),
        ({"pattern": "atomic-counters", "limit": "duration", "duration": "5", "ops": "3"}, False, "ops", "ops"),
        ({"pattern": "atomic-counters", "duration": "5"}, False, "'5' is not used without limit=duration", "duration"),
    ],
)
def test_a_value_the_page_would_not_use_is_refused_by_name(
    link: dict[str, str], on_cluster: bool, named: str, unset: str
) -> None:
    restored = links.parse(link, "run", max_threads=256, on_cluster=on_cluster)
    assert any(named in p and "is not used" in p for p in restored.problems), restored.problems
    assert f"run-{link['pattern']}-{unset}" not in restored.values  # the control keeps its default


def test_values_the_page_uses_are_still_taken() -> None:
    restored = links.parse({"pattern": "atomic-counters", "processes": "2", "ops": "3"}, "run", max_threads=256)
    assert restored.problems == [] and restored.values["run-atomic-counters-processes"] == 2
    restored = links.parse({"pattern": "idempotency-keys", "processes": "1"}, "run", max_threads=256)
    assert restored.problems == []


def test_a_sweep_link_naming_a_count_twice_is_refused() -> None:
    restored = links.parse_sweep({"threads": "2,2"}, thread_choices=[1, 2, 4])
    assert restored.values == {} and "names a count twice" in restored.problems[0]


def test_a_parameter_given_twice_is_named() -> None:
    assert links.twice_given("threads", ["2"]) is None
    problem = links.twice_given("threads", ["2", "3"])
    assert problem is not None and "'threads' 2 times ('2', '3')" in problem


def test_an_autostart_link_with_processes_for_a_one_process_pattern_names_it_and_does_not_start() -> None:
    registry = get_registry()
    before = {r.id for r in registry.records()}
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.query_params.clear()
    at.query_params.update({"pattern": "idempotency-keys", "processes": "2", "threads": "2", "ops": "2"})
    at.query_params["autostart"] = "1"
    at.switch_page("app_pages/run.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("client processes" in e.value and "one process" in e.value for e in at.error), [
        e.value for e in at.error
    ]
    assert any("Not started" in w.value for w in at.warning)
    assert {r.id for r in registry.records()} == before  # nothing started
