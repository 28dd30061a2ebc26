"""Sweeps: both variants of a pattern at several thread counts (`SweepJob`), or both forms of a workload at several
client counts or rates (`WorkloadSweepJob`), one run after another in a background thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar, Self

import pandas as pd

from engine.errors import LabError
from engine.run.runner import Run, RunConfig, RunState
from engine.server.profile import EXACT, ProfileSpec

if TYPE_CHECKING:  # the workload engine is imported when a workload sweep runs, not with every page
    from engine.workloads.sweep import SweepPoint


class SweepState(StrEnum):
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(eq=False, kw_only=True)
class BackgroundSweep:
    """What every sweep holds while its runs go one after another in a background thread: the rows so far, its
    state, the run going on and its stop. A sweep says how it runs (`_sweep`) and how many threads it holds."""

    THREAD_PREFIX: ClassVar[str] = "sweep"

    id: str
    profile: ProfileSpec = EXACT  # the embedded server's profile for every run of the sweep
    created: float = field(default_factory=time.time)
    rows: list[dict[str, Any]] = field(default_factory=list)
    state: SweepState = SweepState.RUNNING
    current: str = ""
    error: LabError | None = None
    current_run: Run | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return self.state is SweepState.RUNNING

    def stop(self) -> None:
        self._stop.set()
        run = self.current_run
        if run is not None:
            run.stop()

    def start(self) -> Self:
        threading.Thread(target=self._run, name=f"{self.THREAD_PREFIX}-{self.id}", daemon=True).start()
        return self

    def _sweep(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            self._sweep()
            if self.state is SweepState.RUNNING:  # a sweep that ended early has said why (stopped, failed)
                self.state = SweepState.STOPPED if self._stop.is_set() else SweepState.DONE
        except LabError as e:
            self.error = e
            self.state = SweepState.FAILED
        except Exception as e:
            self.error = LabError(f"internal error: {type(e).__name__}: {e}", "please report it")
            self.state = SweepState.FAILED
        finally:
            self.current = ""


@dataclass(eq=False, kw_only=True)
class SweepJob(BackgroundSweep):
    """Both variants of a pattern at several thread counts, one run after another in a background thread.

    `new_run` makes each run (the registry's: it applies the caps and charges the call budgets, and refuses with
    BadInput once a budget is spent, which ends the sweep with that message)."""

    pattern: str
    thread_counts: tuple[int, ...]
    ops_per_client: int
    variants: tuple[str, ...]
    new_run: Callable[[RunConfig], Run]
    repeats: int = 1  # runs per (variant, threads) point: the Sweep page draws their spread

    @property
    def total(self) -> int:
        return len(self.thread_counts) * len(self.variants) * self.repeats

    @property
    def threads_busy(self) -> int:
        """The threads this sweep holds against the caps: its largest run's, from its admission to its end (a
        sweep admitted against the load of the moment must not find the room gone when its big run comes)."""
        return max(self.thread_counts) if self.running else 0

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(list(self.rows))

    def _sweep(self) -> None:
        from engine.run.sweep import plan, sweep_row

        for point in plan(self.thread_counts, self.variants, self.repeats):
            if self._stop.is_set():
                self.state = SweepState.STOPPED
                return
            self.current = f"{point.variant} × {point.threads} threads" + (
                f" (run {point.repeat + 1} of {self.repeats})" if self.repeats > 1 else ""
            )
            run = self.new_run(
                RunConfig(
                    pattern=self.pattern,
                    variant=point.variant,
                    threads=point.threads,
                    ops_per_client=self.ops_per_client,
                    profile=self.profile,
                )
            )
            self.current_run = run
            run.run_to_end()
            if run.state is RunState.FAILED and run.error is not None and not self._stop.is_set():
                self.error = run.error
                self.state = SweepState.FAILED
                return
            self.rows.append(sweep_row(run))


@dataclass(eq=False, kw_only=True)
class WorkloadSweepJob(BackgroundSweep):
    """A workload's two forms at several client counts or rates, one run after another in a background thread,
    by the code `python -m engine workload sweep` runs (engine.workloads.sweep.run_points). `new_run` makes each
    run, as a pattern sweep's does (the registry's caps and call budgets)."""

    THREAD_PREFIX: ClassVar[str] = "workload-sweep"

    name: str  # the workload's
    axis: str  # "clients" or "rate"
    points: tuple[SweepPoint, ...]
    new_run: Callable[[SweepPoint], Run]

    @property
    def total(self) -> int:
        return len(self.points)

    @property
    def threads_busy(self) -> int:
        """As a pattern sweep's: its largest run's threads, held from its admission to its end."""
        return max(p.workload.load.clients for p in self.points) if self.running and self.points else 0

    def _started(self, point: SweepPoint, run: Run) -> None:
        self.current_run = run
        self.current = f"{point.variant} at {self.axis} {point.value:g}"

    def _sweep(self) -> None:
        from engine.workloads.sweep import run_points

        run_points(
            self.points,
            self.axis,
            self.new_run,
            on_row=self.rows.append,
            stop=self._stop.is_set,
            on_start=self._started,
        )
