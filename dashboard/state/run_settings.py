"""From the page's control values to a RunConfig: plain Python, no Streamlit, so bad input is tested directly.

Validation itself is the engine's (RunConfig.validated, RetryPolicy): its BadInput names the problem and the fix,
and the page shows exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dashboard.figures.palette import variant_title
from engine.backends.backend import RETRY_MODES, RetryPolicy
from engine.errors import BadInput
from engine.patterns import Pattern
from engine.run.config import RunConfig, ValidRun
from engine.server.profile import EXACT, ProfileSpec

DEFAULT_THREADS = 16
LIMIT_OPS = "ops per client"
LIMIT_DURATION = "duration (s)"


@dataclass
class RunSettings:
    """What the Run and Compare pages' controls hold."""

    pattern: str
    variant: str | None = None
    threads: int = DEFAULT_THREADS
    limit: str = LIMIT_OPS
    ops_per_client: int | None = None
    duration_s: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    lost_response_share: float | None = None
    latency_ms: float = 0.0
    retry_mode: str = "standard"
    max_attempts: int = 3
    seed: int | None = None
    processes: int = 1
    cluster: str | None = None  # the sidebar's Cluster setting: a Dask scheduler whose workers run the clients


def option_kind(option: Any) -> str:
    """How a pattern knob is shown: 'choice', 'int' or 'float'."""
    if option.choices:
        return "choice"
    return "int" if isinstance(option.default, int) and not isinstance(option.default, bool) else "float"


# The engine's messages name CLI flags; the pages name their controls.
CONTROLS = {
    "--threads": "Threads (clients)",
    "--ops": "Ops per client",
    "--duration": "Seconds",
    "--lost-responses": "Lost-response share",
    "--latency-ms": "Added latency (ms)",
    "--max-attempts": "Max attempts",
    "--retry-mode": "Retry mode",
    "--processes": "Client processes",
    "--seed": "Random seed",
    "--max-threads": "DDBLAB_MAX_THREADS_PER_RUN (set before starting the dashboard)",
}
# Whole phrases first: the sidebar's Cluster setting is not a flag to leave out but a setting to clear.
PHRASES = {
    "leave out --cluster": "click “Run here” under Cluster in the sidebar",
    "pass --endpoint-url http://THIS-HOST:8000, or use --aws": "switch the backend (sidebar) to its endpoint URL, "
    "e.g. http://THIS-HOST:8000, or to AWS",
    "e.g. --cluster tcp://scheduler:8786": "e.g. tcp://scheduler:8786",
    "--cluster ADDRESS": "the sidebar's Cluster setting",
    "--cluster": "the sidebar's Cluster setting",
}
_FLAG = re.compile(r"--[a-z][a-z-]+")
_USE = re.compile(r"\buse (e\.g\. )?(--[a-z][a-z-]+) ")
_KNOB = re.compile(r"--set ([A-Za-z_]+)=\S*")


def in_dashboard_words(text: str) -> str:
    """`text` with each CLI flag replaced by the control that sets it: "use --threads 1 or more" becomes
    "set “Threads (clients)” to 1 or more"; a knob's `--set name=<int>` becomes the knob's label."""
    for phrase, words in PHRASES.items():
        text = text.replace(phrase, words)
    text = _KNOB.sub(lambda m: f"“{m.group(1).replace('_', ' ')}”", text)
    text = _USE.sub(
        lambda m: f"set “{CONTROLS[m.group(2)]}” to {m.group(1) or ''}" if m.group(2) in CONTROLS else m.group(), text
    )
    return _FLAG.sub(lambda m: f"“{CONTROLS[m.group()]}”" if m.group() in CONTROLS else m.group(), text)


def build_config(settings: RunSettings, *, max_threads: int, profile: ProfileSpec = EXACT) -> ValidRun:
    """The run these settings ask for, checked once (the registry runs it as it is); raises BadInput (problem + fix,
    naming the page's controls) on anything the engine would refuse, so Start never runs other values than the ones
    shown."""
    try:
        return replace(_build_config(settings, max_threads=max_threads), profile=profile).validated()
    except BadInput as e:
        raise BadInput(in_dashboard_words(e.problem), in_dashboard_words(e.fix)) from None


def _build_config(settings: RunSettings, *, max_threads: int) -> RunConfig:
    if settings.retry_mode not in RETRY_MODES:
        raise BadInput(f"unknown retry mode {settings.retry_mode!r}", f"use one of {', '.join(RETRY_MODES)}")
    threads = settings.threads
    if threads is None or int(threads) != threads:
        raise BadInput(f"threads must be a whole number, got {threads!r}", "use 1 to 256 threads")
    if settings.limit == LIMIT_DURATION:
        ops, duration = None, settings.duration_s
        if duration is None or duration <= 0:
            raise BadInput(f"duration must be above 0 s, got {duration}", "use e.g. 10 seconds")
    else:
        ops, duration = settings.ops_per_client, None
        if ops is None or ops < 1:
            raise BadInput(f"ops per client must be at least 1, got {ops}", "use 1 or more ops per client")
    if settings.seed is not None and not 0 <= settings.seed < 2**31:
        raise BadInput(
            f"the random seed must be from 0 to {2**31 - 1}, got {settings.seed}", "use 0 for a new one each run"
        )
    config = RunConfig(
        pattern=settings.pattern,
        variant=settings.variant,
        threads=int(threads),
        ops_per_client=ops,
        duration_s=duration,
        options=dict(settings.options),
        retry=RetryPolicy(settings.retry_mode, int(settings.max_attempts)),
        lost_response_share=settings.lost_response_share,
        latency_ms=float(settings.latency_ms or 0.0),
        max_threads=max_threads,
        seed=settings.seed,
        processes=int(settings.processes or 1),
        cluster=settings.cluster or None,
    )
    return config


def variant_label(cls: type[Pattern], name: str) -> str:
    return variant_title(name, cls.variants[name].label)


def pattern_label(cls: type[Pattern]) -> str:
    return f"{cls.seed} · {cls.title}"


def default_options(cls: type[Pattern], variant: str) -> Mapping[str, Any]:
    return {name: cls.variant_default(variant, name) for name in cls.options}
