"""The Seed scenes page: a seed's scene played from the page (and from a link), its outcome in the call log, the
profile it played under, and a backend that went away shown as one problem with its fix."""

from __future__ import annotations

from dashboard.text.plain import plain
from engine.server.host.process import EmbeddedServer
from tests.dashboard.test_pages import app, text

PAGE = "app_pages/scenes.py"


def log(at) -> str:
    """The scene's call log (the Copy link popover's code block holds the link, not a log)."""
    return "\n".join(c.value for c in at.code if ">>> " in c.value)


def test_playing_22_shows_the_refused_second_create_and_the_item_at_failure_time() -> None:
    at = app(PAGE)
    assert "Press Play" in text(at) and not log(at)
    at.selectbox(key="scenes-pattern").set_value("conditional-writes").run()
    at.button(key="scenes-play").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    scene = log(at)
    assert '=== Create alice again (would overwrite) ===\n"ConditionalCheckFailedException"' in scene
    assert '"credits": 3' in scene  # the ALL_OLD item at failure time
    played = " ".join(c.value for c in at.caption)
    assert "22 · Conditional writes · played on the embedded DynamoDB · profile exact" in played
    assert not at.warning  # exact: nothing says SIMULATED
    assert at.query_params["pattern"] == "conditional-writes"

    at.run()  # a rerun (any widget) keeps the played scene
    assert log(at) == scene
    at.toggle(key="scenes-timeline").set_value(True).run()
    assert len(at.get("plotly_chart")) == 1 and not at.exception


def test_a_link_plays_a_variant_scene_on_open_under_the_simulated_profile() -> None:
    at = app(PAGE)
    for name, value in {"pattern": "23", "variant": "version-attribute", "profile": "aws-like"}.items():
        at.query_params[name] = value
    at.query_params["autostart"] = "1"
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="scenes-optimistic-locking-variant").value == "version-attribute"
    assert ">>> PutItem ddblab-p23-optimistic-locking" in log(at)
    assert any("SIMULATED" in w.value and "aws-like" in w.value for w in at.warning)
    assert "autostart" not in at.query_params  # played once, not on every refresh of the link


def test_a_bad_link_names_the_refused_value() -> None:
    at = app(PAGE)
    at.query_params["pattern"] = "22"
    at.query_params["variant"] = "guarded"  # a variant of 22, but it has no scene of its own
    at.run()
    assert not at.exception
    assert any("scene variant 'guarded' has no scene of its own" in e.value for e in at.error)


def test_a_backend_gone_since_it_was_picked_is_one_problem_with_its_fix_and_the_page_still_works() -> None:
    server = EmbeddedServer().start()
    try:
        at = app(PAGE)
        at.selectbox(key="scenes-pattern").set_value("gsi-consistency").run()
        at.sidebar.radio(key="backend_choice").set_value("endpoint URL").run()
        at.sidebar.text_input(key="backend_url").set_value(server.endpoint_url).run()
        at.sidebar.button(key="backend_use_url").click().run()
        assert any(plain(server.endpoint_url) in s.value for s in at.sidebar.success)  # shown as typed
    finally:
        server.stop()  # DynamoDB Local stopped mid-talk: the sidebar still names it
    at.button(key="scenes-play").click().run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value for e in at.error]
    assert f"cannot reach DynamoDB at {plain(server.endpoint_url)}" in error and "(the scene stopped)" in error
    assert "switch the backend (sidebar) to the embedded DynamoDB" in error
    assert "28 · GSIs are eventually consistent · stopped on the endpoint" in " ".join(c.value for c in at.caption)

    at.sidebar.radio(key="backend_choice").set_value("embedded").run()
    at.sidebar.button(key="backend_use_embedded").click().run()
    at.button(key="scenes-play").click().run()
    assert not at.error and "Consistent reads are not supported on global secondary indexes" in log(at)


def test_a_played_scene_is_charged_to_the_call_budget() -> None:
    # Scenes spent the shared budget's calls without counting them: a demo server's cap did not hold.
    from dashboard.widgets.registry import get_registry

    registry = get_registry()  # the process-wide one the pages use
    before = registry.calls.used()
    at = app(PAGE)
    at.selectbox(key="scenes-pattern").set_value("conditional-writes").run()
    at.button(key="scenes-play").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    calls = log(at).count(">>> ")
    assert calls > 0 and registry.calls.used() - before >= calls  # every printed call, and the unprinted set-up


def test_a_presenter_link_steps_through_the_scene_a_call_at_a_time_and_keeps_its_step_in_the_link() -> None:
    at = app(PAGE)
    for name, value in {"pattern": "22", "presenter": "1", "type": "L", "step": "2", "autostart": "1"}.items():
        at.query_params[name] = value
    at.toggle(key="presenter").set_value(True).run()  # drawn before the link: a browser opening it starts it on
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.toggle(key="presenter").value and at.segmented_control(key="scenes-type-size").value == "L"
    first = log(at)
    assert first.count(">>> ") == 1 and "Step 2 of " in text(at)  # one call, and where it stands
    at.button(key="scenes-next").click().run()
    second = log(at)
    assert second.count(">>> ") == 1 and second != first and "Step 3 of " in text(at)
    assert at.query_params["step"] == "3" and at.query_params["type"] == "L" and at.query_params["presenter"] == "1"
    at.button(key="scenes-back").click().run()
    assert log(at) == first

    at.toggle(key="presenter").set_value(False).run()  # the operator's view: the whole log again
    whole = log(at)
    assert whole.count(">>> ") > 2 and first in whole and "step" not in at.query_params


def test_a_link_past_the_scenes_last_step_shows_the_last_and_says_so() -> None:
    at = app(PAGE)
    for name, value in {"pattern": "22", "presenter": "1", "step": "999", "autostart": "1"}.items():
        at.query_params[name] = value
    at.toggle(key="presenter").set_value(True).run()
    assert not at.exception and not at.error
    [warning] = [w.value for w in at.warning]
    assert warning.startswith("Step 999 is past this scene's ") and "the last is shown" in warning
    assert at.button(key="scenes-next").disabled and log(at).count(">>> ") == 1
