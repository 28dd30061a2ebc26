"""Seed scenes: a seed's "In practice" scene (`python -m engine walkthrough`) played on the sidebar's backend and
server profile, its call log printed in large type as it happens, and its recorded calls as a timeline."""

import streamlit as st

from dashboard.figures import charts
from dashboard.state import scene_link as scene_links
from dashboard.state import scene_play as scenes
from dashboard.state.runs import backend_label
from dashboard.widgets import links, sidebar, ui
from dashboard.widgets.registry import get_registry
from engine.errors import LabError

PLAYED = "scenes-played"  # (pattern, variant) -> SceneResult: this session's last play of each scene
# Readable from the back of a room, and a long line wraps rather than scrolls; larger type wraps more lines.
TYPE_SIZES = {"large": 1.15, "larger": 1.4, "largest": 1.7}  # rem

size = st.sidebar.segmented_control(
    "Scene log type size", list(TYPE_SIZES), default="large", key="scenes-type-size", help="for the room's screen"
)
st.html(
    f"<style>.st-key-scenes-log pre, .st-key-scenes-log code "
    f"{{ font-size: {TYPE_SIZES.get(size or 'large', 1.15)}rem !important; line-height: 1.45 !important; }}</style>"
)
st.title("Seed scenes")
st.caption(
    "A seed's “In practice” scene, replayed with real calls on a fresh table of its own, printed in the seed's "
    "call-log format: the same as `python -m engine walkthrough`."
)

registry = get_registry()
problems = links.restore(scene_links.PAGE, scene_links.parse)
links.show_problems(problems)
choices = scenes.patterns()
names = list(choices)
pick, scene_col, play_col, link_col = st.columns([4, 3, 2, 2], vertical_alignment="bottom")
pattern = pick.selectbox(
    "Pattern",
    names,
    index=names.index(links.initial(scene_links.PATTERN_KEY, names[0])),
    key=scene_links.PATTERN_KEY,
    format_func=lambda n: f"{choices[n].seed} · {choices[n].title}",
)
own = [v or scenes.DEFAULT_SCENE for v in scenes.variants(pattern)]
variant: str | None = None
if len(own) > 1:  # most patterns have one scene for every variant
    vkey = scene_links.variant_key(pattern)
    picked = scene_col.selectbox(
        "Scene", own, index=own.index(links.initial(vkey, own[0])), key=vkey, help="a variant with a scene of its own"
    )
    variant = None if picked == scenes.DEFAULT_SCENE else picked
autostart = links.autostart(scene_links.PAGE, problems)  # before `remember`, which takes autostart=1 off the URL
# A spent budget (on AWS, calls are billed) stops scenes too, as it stops runs; a scene's few dozen calls are
# charged once it has played.
spent = ui.budget_notice(registry, sidebar.current_spec())
play = play_col.button(
    "Play", icon=":material/play_arrow:", type="primary", key="scenes-play", width="stretch", disabled=spent
)
autostart = autostart and not spent
with link_col:
    links.copy_link(
        links.remember(scene_links.PAGE, {**scene_links.encode(pattern, variant), **sidebar.profile_params()}), "scenes"
    )

header = st.container()
with st.container(key="scenes-log"):
    log = st.empty()

played: dict[tuple[str, str | None], scenes.SceneResult] = st.session_state.setdefault(PLAYED, {})
if play or autostart:
    spec = sidebar.current_spec()
    try:
        profile = sidebar.current_profile()  # the sidebar's, part of the scene (a knob out of range: said here)
        backend = registry.backend(spec)
        where = backend_label(backend, registry.describe(spec))
    except LabError as e:
        with header:
            ui.show_error(e)
    else:
        with header, st.spinner(f"Playing {choices[pattern].seed} · {choices[pattern].title}…"):
            played[(pattern, variant)] = scenes.play(
                backend,
                pattern,
                variant,
                profile,
                where=where,
                show=lambda text: log.code(text, language=None, wrap_lines=True),
            )
        for budget in registry.budgets(spec):
            budget.settle(len(played[(pattern, variant)].calls))

result = played.get((pattern, variant))
if result is None:
    log.info("Press Play: the scene runs on the sidebar's backend and server profile, and its calls print here.")
else:
    with header:
        verb = "stopped on" if result.error is not None else "played on"
        said = f"{ui.plain(result.title)} · {verb} the {ui.plain(result.backend)}"
        if result.simulated:  # the profile's knobs in small type: the badge is what the room reads
            st.warning(
                f":orange-badge[SIMULATED] {said}  \n:small[{ui.plain(result.profile)}]", icon=":material/science:"
            )
        else:
            st.caption(f"{said} · profile {ui.plain(result.profile)}")
        if result.error is not None:
            ui.show_error(result.error)
    if result.text:
        log.code(result.text, language=None, wrap_lines=True)
    else:
        log.empty()
    if len(result.calls) and st.toggle("Show the recorded calls as a timeline", key="scenes-timeline"):
        ui.chart(
            charts.timeline(result.calls, title=scenes.timeline_title(result)),
            key="scenes-timeline-chart",
        )
