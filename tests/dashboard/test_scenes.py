"""The Seed scenes page's plain Python: which scenes a pattern has, its link both ways, and a scene that cannot
play on its backend refused before any call, in the page's words."""

from __future__ import annotations

from dashboard.state import scene_play as scenes
from dashboard.state.links import scene as scene_links
from engine.backends.backend import Backend, BackendSpec
from engine.server.profile import ProfileSpec


def test_23_has_seed_004s_scene_of_its_own_and_22_only_the_shared_one() -> None:
    assert scenes.variants("optimistic-locking") == [None, "version-attribute"]
    assert scenes.variants("conditional-writes") == [None]
    assert [cls.seed for cls in scenes.patterns().values()] == sorted(cls.seed for cls in scenes.patterns().values())


def test_a_link_names_the_pattern_by_seed_or_name_and_comes_back_as_it_went() -> None:
    by_seed = scene_links.parse({"pattern": "23", "variant": "version-attribute", "profile": "aws-like"})
    assert by_seed.problems == []
    assert by_seed.values == {
        "scenes-pattern": "optimistic-locking",
        "scenes-optimistic-locking-variant": "version-attribute",
    }
    link = scene_links.encode("optimistic-locking", "version-attribute", profile="aws-like")
    assert link == {"pattern": "optimistic-locking", "variant": "version-attribute", "profile": "aws-like"}
    assert scene_links.parse(link).values == by_seed.values
    assert scene_links.encode("conditional-writes", None) == {"pattern": "conditional-writes"}  # exact: no profile


def test_a_bad_link_refuses_each_value_by_name_and_keeps_the_rest() -> None:
    restored = scene_links.parse({"pattern": "99", "threads": "4", "profile": "fast", "autostart": "1"})
    assert restored.values == {}
    assert restored.problems == [
        "The link's pattern '99' is not a pattern: use a seed number (22 to 29) or a pattern name; "
        "that control keeps its default.",
        "The link's parameter 'threads' is not a control of this page: use pattern, variant, profile, type or step; "
        "that control keeps its default.",
        "The link's Server profile 'fast' is not one of exact, aws-like; that control keeps its default.",
    ]
    sceneless = scene_links.parse({"pattern": "23", "variant": "blind-write"})
    assert sceneless.values == {"scenes-pattern": "optimistic-locking"}
    assert sceneless.problems == [
        "The link's scene variant 'blind-write' has no scene of its own: use version-attribute (or leave it out "
        "for the default scene); that control keeps its default."
    ]


def test_the_simulated_profile_on_a_backend_that_cannot_play_it_is_refused_before_any_call() -> None:
    # AWS is never reached here: the refusal comes before the first call (and needs no credentials).
    aws = Backend(BackendSpec.parse(None, aws=True, confirm_aws=True, region="us-east-1"))
    shown: list[str] = []
    result = scenes.play(aws, "conditional-writes", None, ProfileSpec.parse("aws-like"), show=shown.append)
    assert result.error is not None and result.text == "" and len(result.calls) == 0 and shown == []
    assert result.error.problem == "the aws-like profile is simulated by the lab's embedded server, not by this backend"
    assert (
        result.error.fix == "set the sidebar's Server profile to exact, or switch the backend to the embedded DynamoDB"
    )
    assert result.simulated and "SIMULATED" in result.profile


def test_a_scene_plays_on_the_shared_backend_under_the_asked_profile_and_leaves_the_backend_as_it_was(
    embedded: Backend,
) -> None:
    shown: list[str] = []
    result = scenes.play(embedded, "transactions", None, ProfileSpec.parse("aws-like"), show=shown.append)
    assert result.error is None, result.error
    assert 'cancelled - per-item reasons ===\n[\n  "None",\n  "ConditionalCheckFailed",\n  "None"\n]' in result.text
    assert shown and result.text.startswith(shown[0])  # printed as it went, the first redraw a start of the end
    assert set(result.calls["client"]) == {0} and len(result.calls) >= 3
    assert scenes.timeline_title(result).endswith("· SIMULATED (aws-like)")
    assert not embedded.profile.simulated  # the copy played aws-like; the shared backend every session uses did not


def test_a_scene_is_stepped_a_call_at_a_time_with_its_result() -> None:
    text = (
        "a note before any call\n\n>>> PutItem t\n    item:       {PK: 'a'}\n\n"
        ">>> UpdateItem t\n    key:        {PK: 'a'}\n    ... (+3 more UpdateItem calls not shown)\n\n"
        "=== After 4 increments ===\n{\n  \"n\": 4\n}\n\n...\n\n>>> GetItem t\n    key:        {PK: 'a'}\n"
    )
    assert scenes.steps(text) == [
        "a note before any call",
        ">>> PutItem t\n    item:       {PK: 'a'}",
        ">>> UpdateItem t\n    key:        {PK: 'a'}\n    ... (+3 more UpdateItem calls not shown)\n\n"
        '=== After 4 increments ===\n{\n  "n": 4\n}\n\n...',
        ">>> GetItem t\n    key:        {PK: 'a'}",
    ]
    assert scenes.steps("") == []


def test_a_presenter_link_carries_the_type_size_and_the_step() -> None:
    link = scene_links.encode("conditional-writes", None, type_size="L", step=4)
    assert link == {"pattern": "conditional-writes", "type": "L", "step": "4", "presenter": "1"}
    assert scene_links.parse(link).values == {
        "scenes-pattern": "conditional-writes",
        "scenes-type-size": "L",
        "scenes-step": 4,
    }
    bad = scene_links.parse({"type": "XXL", "step": "0"})
    assert bad.values == {}
    assert bad.problems == [
        "The link's type size 'XXL' is not one of S, M, L; that control keeps its default.",
        "The link's step '0' is not a whole number from 1 to 10,000; that control keeps its default.",
    ]


def test_a_step_without_presenter_view_is_refused_naming_the_fix() -> None:
    # Only presenter view steps through the log: a step in any other link would be dropped without a word.
    unused = scene_links.parse({"pattern": "22", "step": "3"})
    assert unused.values == {"scenes-pattern": "conditional-writes"}
    assert unused.problems == [
        "The link's step '3' is used only in presenter view (add presenter=1, or leave out step); that control "
        "keeps its default."
    ]
    assert scene_links.parse({"pattern": "22", "step": "3", "presenter": "1"}).values["scenes-step"] == 3
