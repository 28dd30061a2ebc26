"""Seed scenes: a seed's "In practice" scene (`python -m engine walkthrough`) played on the sidebar's backend and
server profile, its call log printed in large type as it happens, and its recorded calls as a timeline. In
presenter view (`presenter=1`) the log is shown a call at a time, stepped with a button or the arrow keys."""

import streamlit as st

from dashboard.figures import charts
from dashboard.state import scene_play as scenes
from dashboard.state.links import scene as scene_links
from dashboard.state.runs import backend_label
from dashboard.widgets import links, presenter, sidebar, ui
from dashboard.widgets.registry import get_registry
from dashboard.widgets.scenes import steps as scene_steps
from engine.errors import LabError

PLAYED = "scenes-played"  # (pattern, variant) -> SceneResult: this session's last play of each scene

presenting = presenter.enabled()
presenter.page_title(presenting, "Seed scenes")
if not presenting:
    st.caption(
        "A seed's “In practice” scene, replayed with real calls on a fresh table of its own, printed in the seed's "
        "call-log format: the same as `python -m engine walkthrough`."
    )

registry = get_registry()
problems = links.restore(scene_links.PAGE, scene_links.parse)
links.show_problems(problems)
choices = scenes.patterns()
names = list(choices)
with presenter.tucked(presenting, "Scene"):
    pick, scene_col = st.columns([4, 3], vertical_alignment="bottom")
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
            "Scene",
            own,
            index=own.index(links.initial(vkey, own[0])),
            key=vkey,
            help="a variant with a scene of its own",
        )
        variant = None if picked == scenes.DEFAULT_SCENE else picked
    # A row of their own: beside the pickers at 1024 px the type sizes scrolled and "Copy link" was cut.
    type_col, link_col = st.columns([3, 4], vertical_alignment="bottom")
    type_size = scene_steps.type_picker(type_col)
    link_slot = link_col.empty()  # filled once the step is known
scene_steps.style(type_size, stepping=presenting)
autostart = links.autostart(scene_links.PAGE, problems)  # before `remember`, which takes autostart=1 off the URL
# A spent budget (on AWS, calls are billed) stops scenes too, as it stops runs; a scene's few dozen calls are
# charged once it has played.
spent = ui.budget_notice(registry, sidebar.current_spec())
play_col, back_col, at_col, next_col = st.columns([2, 2, 3, 2], vertical_alignment="center")
play = play_col.button(
    "Play", icon=":material/play_arrow:", type="primary", key="scenes-play", width="stretch", disabled=spent
)
autostart = autostart and not spent
if play:
    scene_steps.restart()  # a new play is stepped from its first call; a link's step=N holds for its autostart

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
                show=lambda text: log.code(scene_steps.shown(text, presenting), language=None, wrap_lines=True),
            )
        for budget in registry.budgets(spec):
            budget.settle(len(played[(pattern, variant)].calls))

result = played.get((pattern, variant))
step: int | None = None
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
    if presenting and result.text:
        step = scene_steps.stepper(scenes.steps(result.text), log, back_col, at_col, next_col, header)
    elif result.text:
        log.code(result.text, language=None, wrap_lines=True)
    else:
        log.empty()
    if len(result.calls) and st.toggle("Show the recorded calls as a timeline", key="scenes-timeline"):
        ui.chart(
            charts.timeline(result.calls, title=scenes.timeline_title(result)),
            key="scenes-timeline-chart",
        )
with link_slot:
    scene_link = scene_links.encode(pattern, variant, type_size=type_size, step=step if presenting else None)
    links.copy_link(links.remember(scene_links.PAGE, {**scene_link, **sidebar.profile_params()}), "scenes")
