"""Dashboard refresh cost: every chart of the Run page on a run of 10k, 100k and 1M calls.

The history is a recorded optimistic-locking run (tests/data) repeated later and later in time. The record is a
running one (its Run is a stand-in that never finishes, so the page takes its live path: no verdicts yet, no
caching of a finished run), and the page draws exactly what it draws live: `dashboard.widgets.live.run_figures`.

What is measured, per size N:
- refresh_s, the live refresh: the page has drawn before, then NEW_SHARE (1 %) of N new calls arrive; one refresh
  brings the run's aggregates up to date with those calls (RunRecord.view: their details parsed, each chart's
  aggregate fed the new rows only), draws every chart of the Run page from the aggregates and serializes the
  figures as they go to the browser. Best of `repeats` refreshes, each after another 1 % arrived, the last
  one ending at N calls; the sizes take turns, so a busy moment of the (shared) machine hits them alike.
  The new calls are part of the work: at 1M a refresh takes in 10,000 calls, at 100k 1,000 (a fixed number of
  new calls per refresh would be kinder to the big run). refresh_cpu_s: the same refreshes in CPU time.
- first_build_s, the one-off full build (not a refresh): the same page opened on a run that already has N calls:
  every call read once into the aggregates, then the charts. Paid once per run and dashboard process (a page
  opened late, an imported file); a finished run keeps its aggregates, nothing is re-read.
- bytes_sent: the figures' JSON of one refresh.
- scrubbing a replay (at 100k and 1M, a finished run opened as an import): full_draw_s draws every chart of the
  whole run from scratch (the page opened on it); scrub_step_s moves the replay's scrubber one step (1/200 of the
  run) forward from the middle and draws every chart (a playing replay's tick does the same); scrub_back_s moves
  it back to a quarter (the cut rebuilt from the calls shown) and draws. Best of `repeats`.
- kept_bytes_per_call (at 100k): what the page's charts keep in memory once drawn, beyond the History itself
  (their aggregates), per call, measured with tracemalloc after the page was opened on the run, apart from the
  timings (tracemalloc slows every allocation). Not in it: a finished run whose call log was opened also caches
  its columns, about 100 B a call.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.dashboard.recorded import Repeated
from dashboard.widgets import live
from dashboard.widgets.registry import RunRecord, Source
from engine.record.history import History

SIZES = (10_000, 100_000, 1_000_000)
KEPT_AT = 100_000
NEW_SHARE = 0.01
RECORDED = Path(__file__).resolve().parents[2] / "tests" / "data" / "optimistic-locking-racy.jsonl"


class Recorded(Repeated):
    """The recorded optimistic-locking run, repeated."""

    def __init__(self) -> None:
        super().__init__(RECORDED)


def scaled(n_calls: int) -> tuple[History, dict[str, Any]]:
    recorded = Recorded()
    return recorded.history(n_calls), recorded.summary


def running_record(history: History, summary: dict[str, Any]) -> RunRecord:
    """A record whose run is still going (a stand-in Run: not finished, no verdicts yet, no options)."""
    run = SimpleNamespace(
        finished=False, invariants=[], options=SimpleNamespace(values={}), state=SimpleNamespace(value="running")
    )
    return _record(f"bench-{len(history)}", history, summary, source=Source.LIVE, run=run)


def _record(record_id: str, history: History, summary: dict[str, Any], **kind: Any) -> RunRecord:
    """A record of the recorded run's pattern, variant and threads over `history`; `kind`: live or imported."""
    return RunRecord(
        id=record_id,
        pattern=summary["pattern"],
        variant=summary["variant"],
        threads=summary["threads"],
        ops_per_client=None,
        duration_s=None,
        history=history,
        **kind,
    )


def refresh(record: RunRecord) -> tuple[float, float, int]:
    """One refresh of the Run page: (wall seconds, CPU seconds, bytes of figures sent)."""
    started, cpu = time.perf_counter(), time.process_time()
    figures = live.figures_of(live.run_figures(record))
    sent = sum(len(fig.to_json()) for fig in figures)
    return time.perf_counter() - started, time.process_time() - cpu, sent


SCRUBBED = (100_000, 1_000_000)


def finished_record(history: History, summary: dict[str, Any]) -> RunRecord:
    """The run as an import: finished, its summary's verdicts (what the History page's replay opens)."""
    return _record(f"scrub-{len(history)}", history, summary, source=Source.IMPORTED, imported_summary=summary)


def _draw(record: RunRecord, x_range: tuple[float, float] | None = None) -> float:
    started = time.perf_counter()
    for fig in live.figures_of(live.run_figures(record, x_range=x_range)):
        fig.to_json()
    return time.perf_counter() - started


def scrub(history: History, summary: dict[str, Any], repeats: int) -> dict[str, float]:
    """full_draw_s, scrub_step_s and scrub_back_s of a replay of this history (see the module's docstring)."""
    from dashboard.widgets.replay import STEPS, Replayer

    full, step, back = [], [], []
    for _ in range(repeats):
        full.append(_draw(finished_record(history, summary)))
        replayer = Replayer(finished_record(history, summary))
        x_range = (0.0, replayer.end * 1.02)
        middle = replayer.end / 2
        _draw(replayer.at(middle), x_range)  # the replay stands at the middle
        started = time.perf_counter()
        _draw(replayer.at(middle + replayer.end / STEPS), x_range)
        step.append(time.perf_counter() - started)
        started = time.perf_counter()
        _draw(replayer.at(replayer.end / 4), x_range)
        back.append(time.perf_counter() - started)
    return {"full_draw_s": min(full), "scrub_step_s": min(step), "scrub_back_s": min(back)}


def kept_bytes_per_call(recorded: Recorded, n_calls: int) -> float:
    """Bytes still allocated once the page of a run of n_calls was drawn (every call read in), per call."""
    history = History(t0_ns=0)
    recorded.extend(history, n_calls)
    record = running_record(history, recorded.summary)
    gc.collect()
    ours = not tracemalloc.is_tracing()  # leave a trace someone else started running
    if ours:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        refresh(record)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        if ours:
            tracemalloc.stop()
    return kept / n_calls


def measure(repeats: int = 3) -> list[dict[str, Any]]:
    recorded = Recorded()
    records: dict[int, RunRecord] = {}
    rows: dict[int, dict[str, Any]] = {}
    for n in SIZES:
        history = History(t0_ns=0)
        recorded.extend(history, n - repeats * max(1, int(n * NEW_SHARE)))
        records[n] = running_record(history, recorded.summary)
        wall, cpu, _ = refresh(records[n])  # the page opens: every call so far read once
        rows[n] = {
            "calls": n,
            "new_calls": max(1, int(n * NEW_SHARE)),
            "first_build_s": wall,
            "first_build_cpu_s": cpu,
            "timings": [],
        }
    for _ in range(repeats):  # the sizes take turns, so a busy moment of the machine hits them alike
        for n, record in records.items():
            recorded.extend(record.history, len(record.history) + rows[n]["new_calls"])  # 1 % more calls arrive
            rows[n]["timings"].append(refresh(record))
    assert all(len(record.history) == n for n, record in records.items())
    for n in SCRUBBED:
        rows[n].update(scrub(records[n].history, recorded.summary, repeats))
    records.clear()  # their memory would blur the next measure
    rows[KEPT_AT]["kept_bytes_per_call"] = kept_bytes_per_call(recorded, KEPT_AT)
    for row in rows.values():
        timings = row.pop("timings")
        row.update(
            refresh_s=min(t[0] for t in timings),
            refresh_cpu_s=min(t[1] for t in timings),
            bytes_sent=max(t[2] for t in timings),
        )
    return [rows[n] for n in SIZES]


def verdicts(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_n = {r["calls"]: r for r in rows}
    at_100k, at_1m = by_n[100_000]["refresh_s"], by_n[1_000_000]["refresh_s"]
    worst_bytes = max(r["bytes_sent"] for r in rows)
    kept = by_n[KEPT_AT]["kept_bytes_per_call"]
    return [
        {
            "figure": "refresh of every chart at 100k calls, 1k new (s)",
            "value": round(at_100k, 3),
            "target": "≤ 0.5",
            "pass": at_100k <= 0.5,
        },
        {
            "figure": "refresh at 1M (10k new) / at 100k (1k new)",
            "value": round(at_1m / at_100k, 2),
            "target": "≤ 2.0",
            "pass": at_1m <= 2 * at_100k,
        },
        {
            "figure": "bytes sent per refresh (max, MB)",
            "value": round(worst_bytes / 1e6, 2),
            "target": "≤ 5",
            "pass": worst_bytes <= 5e6,
        },
        *(
            {
                "figure": f"replay: scrub one step forward at {n // 1000:,}k / draw the whole run",
                "value": round(by_n[n]["scrub_step_s"] / by_n[n]["full_draw_s"], 3),
                "target": "≤ 0.25",
                "pass": by_n[n]["scrub_step_s"] <= 0.25 * by_n[n]["full_draw_s"],
            }
            for n in SCRUBBED
        ),
        *(
            {
                "figure": f"replay: scrub back to a quarter at {n // 1000:,}k / draw the whole run",
                "value": round(by_n[n]["scrub_back_s"] / by_n[n]["full_draw_s"], 3),
                "target": "≤ 0.6",
                "pass": by_n[n]["scrub_back_s"] <= 0.6 * by_n[n]["full_draw_s"],
            }
            for n in SCRUBBED
        ),
        {
            "figure": "memory the page keeps per call at 100k (B, beyond the History)",
            "value": round(kept),
            "target": "≤ 200",
            "pass": kept <= 200,
        },
    ]


if __name__ == "__main__":
    results = measure(2)
    for row in results:
        print(row)
    for verdict in verdicts(results):
        print(verdict)
