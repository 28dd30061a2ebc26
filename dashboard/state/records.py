"""One run as the dashboard keeps it (`RunRecord`: a live Run, or a history imported from a file), its calls as
frames for the charts and the call log, and its exports."""

from __future__ import annotations

import io
import json
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from dashboard.figures.palette import safety, variant_title
from dashboard.state.frames import numeric_fields
from dashboard.state.runview import RunView
from dashboard.views import aggregates_for, detail_fields
from engine.errors import BadInput, LabError
from engine.patterns import Pattern, get_pattern
from engine.record.codes import conflicts
from engine.record.history import History, csv_labels, dumps
from engine.server.profile import ProfileSpec, simulated_label

if TYPE_CHECKING:  # a record holds a live Run but never makes one
    from engine.run.runner import Run


class Budget(Protocol):
    """What a record reads of a call budget it draws from (dashboard.widgets.registry.CallBudget)."""

    @property
    def limit(self) -> int: ...
    @property
    def what(self) -> str: ...
    @property
    def fix(self) -> str: ...
    def left(self) -> int: ...
    def stopped(self, run: Run) -> bool: ...


class Source(StrEnum):
    LIVE = "live"
    IMPORTED = "imported"


class _Frames:
    """The calls of a run as frames. Details are parsed from the History when a frame asks for them and not kept:
    a parsed detail map costs several times its JSON (about 800 MB at a million calls), and each call reaches the
    charts once (`rows`, as it arrives), so keeping them saved nothing on a live page.

    `rows(start, stop)` is what the run's aggregates (dashboard.state.runview.RunView) take in as calls arrive;
    `frame()` is every call (the call log, tests), its cheap columns cached once the run has ended.
    """

    def __init__(self, history: History) -> None:
        self.history = history
        self.lock = threading.Lock()
        self.final: pd.DataFrame | None = None

    def rows(self, start: int, stop: int) -> pd.DataFrame:
        """Calls [start, stop) with `request` and `detail`."""
        frame = self.history.snapshot(start, stop, requests=True)
        frame["detail"] = self.history.details(range(start, start + len(frame)))
        return frame

    def frame(self, final: bool, details: bool) -> pd.DataFrame:
        with self.lock:
            frame = self.final
            if frame is None:
                frame = self.history.snapshot(requests=True)
                if final:
                    self.final = frame
        return with_details(frame, self.history) if details else frame.copy(deep=False)


def with_details(frame: pd.DataFrame, history: History) -> pd.DataFrame:
    """These calls (a frame of History rows) with `detail` (the maps) and the numeric `detail.<name>` columns."""
    frame = frame.copy(deep=False)
    ds = history.details(frame["seq"].tolist())
    frame["detail"] = ds
    for name, values in zip(detail_fields(), numeric_fields(ds, detail_fields())):
        frame[f"detail.{name}"] = values
    return frame


def known_pattern(name: str) -> type[Pattern] | None:
    """The pattern of that name; None for one this version does not know (an imported history may name it)."""
    try:
        return get_pattern(name)
    except BadInput:
        return None


def _business_refusals(pattern: str) -> dict[str, str]:
    cls = known_pattern(pattern)
    return dict(cls.business_refusals) if cls else {}  # an unknown pattern: count every refusal


def _cores(value: Any) -> list[float]:
    """An imported summary's client_cpu_cores, if it is a list of numbers (a hand-edited file may say anything)."""
    if isinstance(value, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value]
    return []


@dataclass(eq=False)
class RunRecord:
    """One run in the registry: a live Run, or a history imported from a file."""

    id: str
    source: Source
    pattern: str
    variant: str
    threads: int
    ops_per_client: int | None
    duration_s: float | None
    history: History
    created: float = field(default_factory=time.time)
    run: Run | None = None
    imported_summary: dict[str, Any] | None = None
    file_name: str | None = None
    group: str | None = None  # the Compare page's pair
    backend_label: str = ""
    budgets: tuple[Budget, ...] = ()  # the call budgets this run draws from (registry.CallBudget)
    budget_cap: int | None = None  # its max_calls when that was what was left of a budget (below its own cap)
    _summary: dict[str, Any] | None = field(default=None, repr=False)
    _frames: _Frames | None = field(default=None, repr=False)
    _view: RunView | None = field(default=None, repr=False)

    # -- state --------------------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.run is not None and not self.run.finished

    @property
    def state(self) -> str:
        if self.run is not None:
            return self.run.state.value
        return str((self.imported_summary or {}).get("state") or "imported")

    @property
    def safe(self) -> bool | None:
        try:
            return get_pattern(self.pattern).variants[self.variant].safe
        except (LabError, KeyError):
            return None

    @property
    def kind(self) -> str:
        """What screens call its variant: "safe", "racy", "as written" (a workload's, not proven safe), "?"."""
        try:
            return get_pattern(self.pattern).variants[self.variant].label
        except (LabError, KeyError):
            return safety(None)

    @property
    def title(self) -> str:
        size = (
            f"{self.ops_per_client} ops" if self.ops_per_client else f"{self.duration_s:g} s" if self.duration_s else ""
        )
        named = variant_title(self.variant, self.kind)
        return f"{self.pattern} / {named} · {self.threads} threads" + (f" × {size}" if size else "")

    @property
    def error(self) -> LabError | None:
        if self.run is not None:
            return self.run.error
        text = (self.imported_summary or {}).get("error")  # a failed run's export, or a file cut short
        return LabError(str(text)) if text and self.state == "failed" else None

    @property
    def profile(self) -> ProfileSpec | None:
        """The server profile the run ran under: a live run's config, an imported run's summary (None when the file
        does not say, as in files recorded before profiles existed)."""
        if self.run is not None:
            return self.run.config.profile
        return ProfileSpec.from_summary((self.imported_summary or {}).get("profile"))

    def budget_note(self) -> str | None:
        """Why this run ended early because a dashboard call budget ran out, if it did (None while it runs)."""
        run = self.run
        if run is None or not run.finished or not self.budgets:
            return None
        at_cap = self.budget_cap is not None and len(self.history) >= self.budget_cap
        if not at_cap and not any(budget.stopped(run) for budget in self.budgets):
            return None
        spent = min(self.budgets, key=lambda budget: budget.left())
        return (
            f"Ended early after {len(self.history):,} calls: the dashboard's budget of {spent.limit:,} "
            f"{spent.what}, shared by every browser session, ran out. To run more, {spent.fix}."
        )

    def progress(self) -> dict[str, Any]:
        """Live counters: cheap, safe to call every refresh."""
        if self.run is not None:
            return self.run.progress()
        counts = self.history.counts()
        s = self.imported_summary or {}
        elapsed = float(s.get("duration_s") or 0.0) or self._span()
        return {
            **counts,
            "state": self.state,
            "elapsed_s": elapsed,
            "fraction": 1.0,
            "client_cpu": _cores(s.get("client_cpu_cores")),
            "calls_per_s": counts["calls"] / elapsed if elapsed > 0 else 0.0,
            "conflicts": conflicts(counts["errors"], counts["refusals"], _business_refusals(self.pattern)),
        }

    def _span(self) -> float:
        with self.view() as view:
            return float(view.span) if view.n else 0.0

    # -- results ------------------------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any] | None:
        """The engine's summary JSON (for a live run once it has ended; an import's from its file)."""
        if self.run is None:
            return self.imported_summary
        if not self.run.finished:
            return None
        if self._summary is None:
            from engine.run.summary import summary

            self._summary = summary(self.run)
        return self._summary

    def invariants(self) -> list[dict[str, Any]]:
        if self.run is not None:
            return [inv.as_dict() for inv in self.run.invariants] if self.run.finished else []
        return list((self.imported_summary or {}).get("invariants") or [])

    def options(self) -> dict[str, Any]:
        """The pattern's knobs this run used (from the config while it runs, else from its summary)."""
        if self.run is not None:
            return dict(self.run.options.values)
        return dict((self.imported_summary or {}).get("options") or {})

    def _calls(self) -> _Frames:
        if self._frames is None:
            self._frames = _Frames(self.history)
        return self._frames

    def frame(self, *, details: bool = True) -> pd.DataFrame:
        """Every call so far, with `request`, and with `detail` and the numeric `detail.<name>` columns unless
        `details=False` (then `with_details(rows)` adds them to the rows you keep: the call log's last 150).

        Costs a pass over every call (and a parse of every detail): the charts draw from `view()` instead."""
        return self._calls().frame(final=not self.running, details=details)

    def with_details(self, rows: pd.DataFrame) -> pd.DataFrame:
        """Rows of `frame(details=False)` with their details."""
        return with_details(rows, self.history)

    def view(self) -> RunView:
        """The aggregates the charts draw from. `with record.view() as view:` brings them up to date with the
        calls recorded since the last time (work in proportion to those) and holds them while drawing."""
        if self._view is None:
            self._view = RunView(self.history, self._calls().rows, aggregates_for(self.pattern))
        self._view.final = not self.running
        return self._view

    # -- export -------------------------------------------------------------------------------------------------

    def export_summary(self) -> dict[str, Any]:
        s = self.summary()
        if s is None and self.run is not None:
            from engine.run.summary import summary

            s = summary(self.run)  # mid-run: what is known so far
        out = dict(s or {"pattern": self.pattern, "variant": self.variant, "threads": self.threads})
        if isinstance(out.get("profile"), dict) and self.profile is not None and self.profile.simulated:
            # the label the dashboard shows, knobs off the model's defaults named: a file read alone says it too
            out["profile"] = {**out["profile"], "label": simulated_label(self.profile)}
        return out

    def export_jsonl(self) -> bytes:
        out = io.StringIO()
        self.history.write_jsonl(out, meta={"summary": self.export_summary(), "exported_from": "dashboard"})
        return out.getvalue().encode()

    def export_csv(self) -> bytes:
        out = io.StringIO()
        self.history.write_csv(out, csv_labels(self.export_summary()))
        return out.getvalue().encode()

    def export_summary_json(self) -> bytes:
        return (json.dumps(json.loads(dumps(self.export_summary())), indent=2) + "\n").encode()

    def file_stem(self) -> str:
        return f"{self.pattern}-{self.variant}-{self.threads}t-{self.id}"
