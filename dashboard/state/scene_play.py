"""A seed's "In practice" scene played for the Seed scenes page: engine.run.walkthrough on the sidebar's backend and
server profile, its printed text streamed as it comes, and any failure turned into one problem and its fix.

Plain Python (no Streamlit), so it is tested directly; the page only draws what `play` returns.
"""

from __future__ import annotations

import copy
import io
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from botocore.exceptions import BotoCoreError, ClientError

from engine.backends.backend import Backend
from engine.errors import BadInput, LabError
from engine.patterns import Pattern, all_patterns, get_pattern
from engine.run.walkthrough import run_walkthrough, scene_variants
from engine.server.profile import ProfileSpec

DEFAULT_SCENE = "default scene"  # the picker's name for the scene every variant shares (variant None)
REDRAW_S = 0.15  # at most this often while a scene prints: each redraw sends the whole log to the browser


@dataclass(frozen=True)
class SceneResult:
    """One play of a scene: what it printed (all of it, or up to where it stopped), the recorded calls, and the
    problem that stopped it (None when it ran to its end)."""

    pattern: str
    variant: str | None
    profile: str  # ProfileSpec.describe() of the profile it played under ("aws-like (SIMULATED: ...")
    simulated: bool
    backend: str  # where it played, as the sidebar names it
    text: str
    calls: pd.DataFrame  # a History snapshot frame (detail and request columns): what charts.timeline draws
    error: LabError | None = None

    @property
    def title(self) -> str:
        cls = get_pattern(self.pattern)
        return f"{cls.seed} · {cls.title}" + (f" · {self.variant}" if self.variant else "")


def timeline_title(result: SceneResult) -> str:
    """The timeline's title: a screenshot of it says SIMULATED too."""
    n = len(result.calls)
    return f"The scene's {n} call{'s' if n != 1 else ''}" + (" · SIMULATED (aws-like)" if result.simulated else "")


def steps(text: str) -> list[str]:
    """The scene's log a call at a time, for stepping through it in front of a room: each step is one printed
    call (its `>>>` block) with what follows it up to the next call (its result, a note); what comes before the
    first call is a step of its own."""
    out: list[str] = []
    for block in text.strip("\n").split("\n\n"):
        if not block.strip():
            continue
        if block.startswith(">>> ") or not out:
            out.append(block)
        else:
            out[-1] += "\n\n" + block
    return out


def patterns() -> dict[str, type[Pattern]]:
    """Every pattern that has a scene, in seed order."""
    return dict(sorted(all_patterns().items(), key=lambda item: item[1].seed))


def variants(pattern: str) -> list[str | None]:
    """The scenes a pattern can play: its shared one (None), then each variant with a scene of its own."""
    return [None, *scene_variants(get_pattern(pattern))]


class LiveText(io.StringIO):
    """The scene's stream: keeps the text and hands it to `show` as it grows (every REDRAW_S at most)."""

    def __init__(self, show: Callable[[str], object] | None = None) -> None:
        super().__init__()
        self._show = show
        self._shown_at = 0.0

    def write(self, text: str) -> int:
        n = super().write(text)
        now = time.monotonic()
        if self._show is not None and now - self._shown_at >= REDRAW_S:
            self._shown_at = now
            self._show(self.getvalue())
        return n


def play(
    backend: Backend,
    pattern: str,
    variant: str | None,
    profile: ProfileSpec,
    *,
    where: str = "",
    show: Callable[[str], object] | None = None,
) -> SceneResult:
    """Play `pattern`'s scene (or `variant`'s own) on `backend` under `profile`; never raises a LabError or a
    boto error: the result carries the problem, with the text printed up to it."""
    live = LiveText(show)
    history_calls = pd.DataFrame()
    error: LabError | None = None
    try:
        _check_profile(backend, profile)
        text, history = run_walkthrough(pattern, _playing(backend, profile), live, variant=variant)
        history_calls = history.snapshot(detail=True, requests=True)
    except LabError as e:
        error = e
        text = live.getvalue()
    except (BotoCoreError, ClientError) as e:
        error = _backend_problem(backend, e)
        text = live.getvalue()
    except Exception as e:  # a scene's own bug: one message on this page, not a traceback
        error = LabError(
            f"the scene of {pattern} stopped: {type(e).__name__}: {e}",
            "press Play again; if it stops again, `python -m engine walkthrough` with the same pattern shows the "
            "traceback in a terminal",
        )
        text = live.getvalue()
    return SceneResult(
        pattern=pattern,
        variant=variant,
        profile=profile.describe(),
        simulated=profile.simulated,
        backend=where,
        text=text,
        calls=history_calls,
        error=error,
    )


def _playing(backend: Backend, profile: ProfileSpec) -> Backend:
    """The shared backend, playing `profile`: run_walkthrough names its table with the backend's own profile (the
    CLI's --profile), and the dashboard's backends are shared by every session, so each play gets a shallow copy
    (the same server, session and client lock) with the sidebar's profile, and the shared one is left as it is."""
    playing = copy.copy(backend)
    playing.profile = profile
    return playing


def _check_profile(backend: Backend, profile: ProfileSpec) -> None:
    """Backend.with_profile's refusal in the page's words (its own names the CLI's flags)."""
    if profile.simulated and not backend.profiles_supported():
        raise BadInput(
            f"the {profile.name.value} profile is simulated by the lab's embedded server, not by this backend",
            "set the sidebar's Server profile to exact, or switch the backend to the embedded DynamoDB",
        )


def _backend_problem(backend: Backend, e: BotoCoreError | ClientError) -> LabError:
    """A boto error that stopped the scene (not one a scene's call meant to show: those are recorded results).
    Checking the backend again names the usual cause (gone, credentials, a permission) with its fix."""
    try:
        backend.check()
    except LabError as down:
        unreachable = down.problem.startswith("cannot reach")  # its fix names the CLI's flags
        return type(down)(
            f"{down.problem} (the scene stopped)",
            "start the server there again, or switch the backend (sidebar) to the embedded DynamoDB, then Play"
            if unreachable
            else down.fix,
        )
    return LabError(
        f"the scene stopped on an error from the backend: {type(e).__name__}: {e}",
        "press Play again; if it stops again, run `python -m engine walkthrough` with the same pattern to see it "
        "in the terminal",
    )
