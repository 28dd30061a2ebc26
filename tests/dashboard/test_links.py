"""Scenario links: a link's values land in the page's controls, a bad or stale one is refused naming the control,
and the controls' values make the link again."""

from __future__ import annotations

from dashboard.state.run_settings import LIMIT_DURATION, RunSettings
from dashboard.widgets.links import encode, parse


def test_a_link_sets_every_control_it_names() -> None:
    link = {
        "pattern": "23",
        "variant": "blind-write",
        "threads": "3",
        "limit": "duration",
        "duration": "12.5",
        "k.accounts": "2",
        "lost": "0.1",
        "retry": "legacy",
        "attempts": "5",
        "run": "r7",
    }
    restored = parse(link, "run", max_threads=256)
    assert restored.problems == []
    assert restored.values == {
        "run-pattern": "optimistic-locking",
        "run-optimistic-locking-variant": "blind-write",
        "run-optimistic-locking-threads": 3,
        "run-optimistic-locking-limit": LIMIT_DURATION,
        "run-optimistic-locking-duration": 12.5,
        "run-optimistic-locking-opt-accounts": 2,
        "run-optimistic-locking-lost": 0.1,
        "run-optimistic-locking-retry": "legacy",
        "run-optimistic-locking-attempts": 5,
    }


def test_bad_and_stale_values_are_refused_naming_the_control() -> None:
    link = {"pattern": "atomic-counters", "threads": "9999", "variant": "gone", "k.nope": "1", "lost": "x"}
    restored = parse(link, "run", max_threads=256)
    assert restored.values == {"run-pattern": "atomic-counters"}
    text = "\n".join(restored.problems)
    assert "The link's threads '9999' is out of range: use 1 to 256" in text
    assert "The link's variant 'gone' is not one of add, read-then-put" in text
    assert "knob nope '1' is not a knob of atomic-counters" in text
    assert "lost-response share 'x' is not a number" in text
    assert parse({"pattern": "nope"}, "run", max_threads=8).problems[0].startswith("The link's pattern 'nope' is not")


def test_the_controls_make_a_link_that_restores_them() -> None:
    settings = RunSettings(
        pattern="atomic-counters", variant="read-then-put", threads=8, ops_per_client=20, options={"tickets": 50}
    )
    restored = parse(encode(settings), "compare", max_threads=256, pick_variant=False)
    assert restored.problems == []
    assert restored.values["compare-atomic-counters-threads"] == 8
    assert restored.values["compare-atomic-counters-ops"] == 20
    assert restored.values["compare-atomic-counters-opt-tickets"] == 50
    assert "compare-atomic-counters-variant" not in restored.values  # Compare runs both


def test_a_sweep_link_sets_its_controls_and_refuses_a_count_it_does_not_offer() -> None:
    from dashboard.widgets.links import parse_sweep

    ok = parse_sweep({"pattern": "24", "threads": "1,4,16", "ops": "5", "repeats": "3"}, thread_choices=[1, 2, 4, 16])
    assert ok.problems == []
    assert ok.values == {
        "sweep-pattern": "atomic-counters",
        "sweep-threads": [1, 4, 16],
        "sweep-ops": 5,
        "sweep-repeats": 3,
    }
    bad = parse_sweep({"threads": "3", "repeats": "0"}, thread_choices=[1, 2, 4])
    assert bad.values == {}
    assert "The link's threads '3' is not a list of 1, 2, 4" in bad.problems[0]
    assert "The link's repeats '0' is out of range: use 1 to 10" in bad.problems[1]


def test_the_server_profile_is_in_the_link_only_when_it_is_not_exact() -> None:
    settings = RunSettings(pattern="atomic-counters", variant="add", threads=4, ops_per_client=10)
    assert "profile" not in encode(settings)
    link = encode(settings, profile="aws-like")
    assert link["profile"] == "aws-like"
    restored = parse(link, "run", max_threads=256)  # the sidebar's radio takes it (restore_profile), not the page
    assert restored.problems == []
    assert not any("profile" in key for key in restored.values)


def test_a_bad_server_profile_is_refused_naming_the_control() -> None:
    from dashboard.widgets.links import parse_sweep

    for restored in (
        parse({"pattern": "atomic-counters", "profile": "aws"}, "run", max_threads=8),
        parse({"profile": "aws"}, "compare", max_threads=8, pick_variant=False),
        parse_sweep({"profile": "aws"}, thread_choices=[1, 2]),
    ):
        assert restored.problems == [
            "The link's Server profile 'aws' is not one of exact, aws-like; that control keeps its default."
        ]
