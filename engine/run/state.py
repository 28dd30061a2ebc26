"""The states a run goes through, its own leaf module: the summary, the sweep and the dashboard read them without
importing the runner."""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    PENDING = "pending"
    PREPARING = "preparing"
    RUNNING = "running"
    VERIFYING = "verifying"
    DONE = "done"
    STOPPED = "stopped"  # stopped early, by the user or by its call budget (stop_reason); verified on the calls made
    FAILED = "failed"
