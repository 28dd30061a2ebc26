"""What a placement reads and writes of a run (engine.run.runner's Run and RunConfig), as protocols: the runner
hands itself to a placement, so no module here imports the runner, not even for its types."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # protocols only: a placement needs none of these at import
    from engine.backends.backend import Backend, RetryPolicy
    from engine.backends.tables import Table
    from engine.errors import LabError
    from engine.options import RunOptions
    from engine.patterns.base import Pattern
    from engine.record.history import History


class RunConfig(Protocol):
    @property
    def pattern(self) -> str: ...
    @property
    def threads(self) -> int: ...
    @property
    def processes(self) -> int: ...
    @property
    def cluster(self) -> str | None: ...
    @property
    def ops_per_client(self) -> int | None: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def max_calls(self) -> int | None: ...
    @property
    def retry(self) -> RetryPolicy: ...
    @property
    def lost_response_share(self) -> float | None: ...
    @property
    def latency_ms(self) -> float: ...
    @property
    def record_requests(self) -> bool: ...


class Run(Protocol):
    error: LabError | None
    started_at: float | None
    t_start_ns: int | None
    t_end_ns: int | None
    stop_event: threading.Event  # set: every client finishes its current call and stops
    shared: dict[str, Any]

    @property
    def config(self) -> RunConfig: ...
    @property
    def pattern(self) -> Pattern: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def history(self) -> History: ...
    @property
    def options(self) -> RunOptions: ...
    @property
    def table(self) -> Table | None: ...
    def publish_progress(self, ops_done: list[int], cpu_s: list[float]) -> None: ...
    def record_worker_error(self, error: dict[str, Any]) -> None: ...
    def client_ended(self, *client_ids: int) -> None: ...


def split(threads: int, places: int) -> list[tuple[int, ...]]:
    """Client ids per process or worker, round-robin: neighbours land in different places."""
    return [tuple(range(k, threads, places)) for k in range(places)]
