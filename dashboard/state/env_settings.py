"""Every DDBLAB_* setting the dashboard reads, and one check of them all.

`python -m dashboard` runs `check_settings()` at launch (one line, exit 2); the app run directly (`streamlit run
dashboard/streamlit_app.py`) runs it before anything else on every page and shows the same refusal instead of a
traceback. It reads the environment afresh each time, so it never trusts what an earlier import saw.
"""

from __future__ import annotations

import os

from dashboard.state.endpoint_setting import ENDPOINT_ENV, check_endpoint_setting
from engine.digits import foreign_digits
from engine.errors import BadInput
from engine.run.config import MAX_THREADS_CAP
from engine.server.control import PLAIN_MOTO_ENV, plain_moto_wanted

# The caps (dashboard.state.limits says what each one bounds): name -> (default, lowest, highest).
CAPS: dict[str, tuple[int, int, int]] = {
    "DDBLAB_MAX_THREADS_PER_RUN": (256, 1, MAX_THREADS_CAP),
    "DDBLAB_MAX_TOTAL_THREADS": (512, 1, 65_536),
    "DDBLAB_MAX_RUNS": (40, 1, 10_000),
    "DDBLAB_MAX_TOTAL_PROCESSES": (max(2, os.cpu_count() or 2), 1, 1_024),
    "DDBLAB_MAX_IMPORTED_CALLS": (5_000_000, 1, 10**9),
    "DDBLAB_MAX_TOTAL_CALLS": (10_000_000, 1, 10**12),
    "DDBLAB_MAX_AWS_CALLS": (100_000, 1, 10**12),
}
PER_RUN, TOTAL = "DDBLAB_MAX_THREADS_PER_RUN", "DDBLAB_MAX_TOTAL_THREADS"
# Every DDBLAB_* name the dashboard and the engine read (DDBLAB_PLAIN_MOTO: when the embedded server starts, so a
# bad one would refuse every run's start). DDBLAB_LAB_TOKEN is not a setting: the lab sets it for
# the server it starts, over whatever the environment held.
CHECKED = frozenset({*CAPS, ENDPOINT_ENV, PLAIN_MOTO_ENV})
NOT_SETTINGS = frozenset({"DDBLAB_LAB_TOKEN"})


def env_int(name: str, default: int, lo: int, hi: int) -> int:
    """A whole-number setting from the environment (unset or blank: the default); BadInput (one line, naming the
    variable, its value and its range) for anything else."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = None if foreign_digits(raw) else int(raw.strip().replace("_", ""))
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise BadInput(
            f"{name}={raw[:40]!r} is not a whole number from {lo:,} to {hi:,}",
            f"set {name} in that range, or unset it for the default ({default:,})",
        )
    return value


def cap(name: str) -> int:
    """The cap `name` (a key of CAPS), read from the environment now."""
    default, lo, hi = CAPS[name]
    return env_int(name, default, lo, hi)


def per_run_threads() -> int:
    """The threads one run may have: DDBLAB_MAX_THREADS_PER_RUN when set, else its default but never above
    DDBLAB_MAX_TOTAL_THREADS (a total set lower alone lowers it: no run could use more)."""
    if os.environ.get(PER_RUN, "").strip():
        return cap(PER_RUN)
    return min(cap(PER_RUN), cap(TOTAL))


def check_settings() -> None:
    """BadInput naming the first bad DDBLAB_* setting, its value and the fix; nothing when all are good."""
    for name in CAPS:
        cap(name)
    per_run, total = per_run_threads(), cap(TOTAL)
    if per_run > total:  # both set: the Threads control would offer runs that the total refuses
        raise BadInput(
            f"{PER_RUN}={per_run:,} is above {TOTAL}={total:,}: one run could never use its cap",
            f"set {PER_RUN} to at most {total:,}, or raise {TOTAL}",
        )
    check_endpoint_setting(os.environ.get(ENDPOINT_ENV))
    plain_moto_wanted()
