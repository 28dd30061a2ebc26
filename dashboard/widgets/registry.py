"""The runs registry, one per dashboard process: single runs, pairs and imports (dashboard.state.runs), plus
sweeps, which run one after another on a thread of their own and draw on the same caps and call budgets.

`get_registry()` is an `st.cache_resource`, so runs survive a page refresh and every browser tab sees the same
ones; the embedded DynamoDB is started once, on first use, and shared. Everything else here is plain Python
(Streamlit is only that decorator), so it is tested directly.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Unpack

import streamlit as st

from dashboard.settings.env import env_int
from dashboard.settings.limits import CallBudget
from dashboard.state.records import RunRecord, Source, known_pattern
from dashboard.state.runs import Caps, RunRegistry, in_page_words
from dashboard.state.sweep_jobs import SweepJob, SweepState, WorkloadSweepJob
from engine.backends.backend import Backend, BackendSpec
from engine.errors import BadInput
from engine.patterns import get_pattern
from engine.run.runner import Run, RunConfig
from engine.server.profile import EXACT, ProfileSpec

if TYPE_CHECKING:
    from engine.workloads.sweep import SweepPoint

# Where these moved: kept importable from here, as the pages and other tools import them.
__all__ = [
    "CallBudget",
    "env_int",
    "Registry",
    "RunRecord",
    "Source",
    "SweepJob",
    "SweepState",
    "get_registry",
    "known_pattern",
]


class Registry(RunRegistry):
    """Runs, sweeps and backends shared by every session of one dashboard process. Thread-safe."""

    def __init__(self, **caps: Unpack[Caps]) -> None:
        super().__init__(**caps)
        self._sweeps: dict[str, SweepJob] = {}
        self._workload_sweeps: dict[str, WorkloadSweepJob] = {}

    def threads_in_use(self) -> int:
        """Client threads busy now: running runs' and the current run of each running sweep's."""
        with self._lock:
            busy = sum(s.threads_busy for s in self._sweeps.values() if s.running)
            return super().threads_in_use() + busy + sum(s.threads_busy for s in self._workload_sweeps.values())

    def start_sweep(
        self,
        pattern: str,
        thread_counts: Sequence[int],
        ops_per_client: int,
        spec: BackendSpec,
        repeats: int = 1,
        profile: ProfileSpec = EXACT,
        cluster: str | None = None,
    ) -> SweepJob:
        """Both variants at each thread count, `repeats` times, one run after another; on the workers of the Dask
        cluster at `cluster` when one is given (checked first, as a run's)."""
        cls = get_pattern(pattern)
        counts = tuple(sorted({int(t) for t in thread_counts}))
        if not counts:
            raise BadInput("no thread counts were picked", "pick at least one, e.g. 1, 2, 4, 8, 16")
        if counts[0] < 1 or counts[-1] > self.max_threads_per_run:
            raise BadInput(f"thread counts must be from 1 to {self.max_threads_per_run}", "pick counts in that range")
        if ops_per_client < 1:
            raise BadInput(f"ops per client must be at least 1, got {ops_per_client}", "use 1 or more")
        from engine.run.sweep import MAX_REPEATS, plan

        if not 1 <= repeats <= MAX_REPEATS:
            raise BadInput(f"Runs per point must be from 1 to {MAX_REPEATS}, got {repeats}", "use e.g. 3")
        next(plan(counts, ["-"], repeats))
        if cluster is not None:  # a pattern that cannot be spread says why now, not at its first run
            try:
                RunConfig(pattern=cls.name, threads=counts[-1], cluster=cluster).validated()
            except BadInput as e:
                raise in_page_words(e) from None
        self._check_cluster(cluster, spec)
        with self._lock:
            self._check_capacity(counts[-1])
            self._check_budgets(spec)
            backend = self.backend(spec)
            job = SweepJob(
                id=self._new_id("s"),
                pattern=cls.name,
                thread_counts=counts,
                ops_per_client=ops_per_client,
                variants=(cls.safe_variant(), cls.racy_variant()),
                new_run=functools.partial(self._sweep_run, spec, backend, cluster),
                repeats=repeats,
                profile=profile,
            )
            self._sweeps[job.id] = job
        return job.start()

    def _sweep_run(self, spec: BackendSpec, backend: Backend, cluster: str | None, config: RunConfig) -> Run:
        """One run of a sweep (called from the sweep's thread): the caps and call budgets of any run."""
        valid = self._validated(dataclasses.replace(config, cluster=cluster), spec)
        with self._lock:
            valid, _ = self._budgeted(valid, spec)
            run = Run(valid, backend)
            self._charge(run, spec)
        return run

    def start_workload_sweep(
        self,
        points: Sequence[SweepPoint],
        axis: str,
        config_of: Callable[[SweepPoint], RunConfig],
        spec: BackendSpec,
        profile: ProfileSpec = EXACT,
    ) -> WorkloadSweepJob:
        """A workload's points (engine.workloads.sweep.plan) one run after another; `config_of` makes each run's
        config. Every point is checked against the caps now, as a run's would be, before any starts."""
        if not points:
            raise BadInput("the sweep has no values", "give at least one, e.g. 1,4,16")
        for point in points:
            self._validated(config_of(point), spec)
        with self._lock:
            self._check_capacity(max(p.workload.load.clients for p in points))
            self._check_budgets(spec)
            backend = self.backend(spec)
            job = WorkloadSweepJob(
                id=self._new_id("w"),
                name=points[0].workload.name,
                axis=axis,
                points=tuple(points),
                new_run=functools.partial(self._workload_sweep_run, spec, backend, config_of),
                profile=profile,
            )
            self._workload_sweeps[job.id] = job
        return job.start()

    def _workload_sweep_run(
        self, spec: BackendSpec, backend: Backend, config_of: Callable[[SweepPoint], RunConfig], point: SweepPoint
    ) -> Run:
        return self._sweep_run(spec, backend, None, config_of(point))

    def workload_sweep(self, sweep_id: str | None) -> WorkloadSweepJob | None:
        with self._lock:
            return self._workload_sweeps.get(sweep_id or "")

    def sweep(self, sweep_id: str | None) -> SweepJob | None:
        with self._lock:
            return self._sweeps.get(sweep_id or "")

    def sweeps(self) -> list[SweepJob]:
        with self._lock:
            return list(reversed(self._sweeps.values()))


@st.cache_resource(show_spinner=False)
def get_registry() -> Registry:
    """The process-wide registry (a Streamlit resource: shared by sessions, kept across reruns and refreshes)."""
    return Registry()
