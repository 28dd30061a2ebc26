"""The generic charts (dashboard/figures/charts.py) on recorded histories (tests/data): figure types, traces, sampling and
its label, outcome labels and colours, the call log; every pattern's views are valid figures. What each pattern's
view finds is tested beside it, in tests/dashboard/views/."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from dashboard.figures import charts
from dashboard.figures import sweep as sweep_charts
from dashboard.figures.palette import COLOURS, RACY_COLOUR, colour, ordered
from dashboard.figures.sampling import Sampling, choose
from dashboard.state.frames import outcome_labels
from dashboard.state.records import RunRecord, Source
from dashboard.state.verdicts import flagged_calls
from dashboard.text.calls import call_log
from tests.dashboard.helpers import frame, history_of, names, scaled, valid


def sample(
    frame: pd.DataFrame, max_rows: int, *, keep: Iterable[int] = (), prefer: np.ndarray | None = None
) -> tuple[pd.DataFrame, Sampling]:
    """The oracle of every sampled chart: at most `max_rows` rows of the whole frame, every `keep` seq first, then
    `prefer`red rows (up to half), then a stable sample."""
    n = len(frame)
    if n <= max_rows:
        return frame, Sampling(n, n)
    seq = frame["seq"].to_numpy()
    keep_set = np.fromiter(keep, dtype=np.int64)
    flagged = np.isin(seq, keep_set) if len(keep_set) else None
    chosen, n_flag, n_pref = choose(seq, max_rows, keep=flagged, prefer=prefer)
    return frame[chosen], Sampling(int(chosen.sum()), n, n_flag, n_pref)


# -- labels, colours, sampling --------------------------------------------------------------------------------------


def test_outcome_labels_split_reads_and_shorten_codes(locking_safe) -> None:
    f, _ = locking_safe
    labels = outcome_labels(f)
    assert set(labels) == {"ok", "ok (read)", "ConditionalCheckFailed", "info (unknown)"}
    reads = f["op"].astype(str) == "GetItem"
    assert set(labels[reads.to_numpy() & (f["outcome"] == "ok").to_numpy()]) == {"ok (read)"}
    assert ordered(labels) == ["ok", "ok (read)", "ConditionalCheckFailed", "info (unknown)"]


def test_every_label_has_a_fixed_colour() -> None:
    assert colour("ok") == COLOURS["ok"]
    assert colour("ValidationException") == colour("ValidationException")  # stable for unknown codes
    assert len(set(COLOURS.values())) == len(COLOURS)


def test_sample_keeps_flagged_and_failures_first() -> None:
    n = 10_000
    f = pd.DataFrame({"seq": np.arange(n), "x": np.zeros(n)})
    prefer = np.zeros(n, dtype=bool)
    prefer[::100] = True
    shown, s = sample(f, 500, keep=[3, 5, 7], prefer=prefer)
    assert len(shown) == 500 and s.sampled and s.total == n
    assert {3, 5, 7} <= set(shown["seq"])
    assert prefer[shown["seq"]].sum() >= 100  # all 100 preferred rows fit in half the budget
    assert "sampled: 500 of 10,000" in s.note()
    again, _ = sample(f, 500, keep=[3, 5, 7], prefer=prefer)
    assert list(again["seq"]) == list(shown["seq"])  # stable from one refresh to the next


# -- the run page's charts --------------------------------------------------------------------------------------------


def test_timeline_one_bar_per_call_lanes_per_client(counters_racy) -> None:
    f, summary = counters_racy
    fig = valid(charts.timeline(f, flagged=flagged_calls(summary["invariants"]), lanes=8))
    bars = [t for t in fig.data if t.type == "bar"]
    assert sum(len(t.x) for t in bars) == len(f)
    assert {t.name for t in bars} == {"ok", "ok (read)"}
    assert fig.layout.meta["sampled"] is False and fig.layout.meta["flagged"] > 0
    assert "broke an invariant" in names(fig)
    hover = bars[0].customdata[0]
    assert hover.startswith("&gt;&gt;&gt; ") and "=== #" in hover  # the call as the seed logs it, escaped
    assert tuple(fig.layout.yaxis.range) == (7.5, -0.5)


def test_timeline_samples_big_runs_and_says_so() -> None:
    history, summary = scaled("optimistic-locking-safe", 20_000)
    f = history.snapshot(detail=True, requests=True)
    flagged = set(range(0, 20_000, 997))
    fig = valid(charts.timeline(f, flagged=flagged, max_bars=1000))
    bars = [t for t in fig.data if t.type == "bar"]
    assert sum(len(t.x) for t in bars) == 1000
    assert fig.layout.meta["sampled"] is True and fig.layout.meta["total"] == 20_000
    assert "sampled: 1,000 of 20,000 calls shown" in fig.layout.title.subtitle.text
    assert fig.layout.meta["flagged"] == len(flagged)  # every flagged call survives the sampling


def test_timeline_hover_shows_condition_with_values_inlined(locking_safe) -> None:
    f, _ = locking_safe
    fig = charts.timeline(f)
    refused = next(t for t in fig.data if t.name == "ConditionalCheckFailed")
    text = html.unescape(refused.customdata[0].replace("<br>", "\n")).replace("\xa0", " ")
    assert text.startswith(">>> PutItem ddblab-optimistic-locking-")
    assert re.search(r"\n    condition: +version = \d+\n", text)  # the value inlined, as the seed prints it
    assert '"ConditionalCheckFailedException"' in text


def test_outcomes_over_time_stacks_rates_by_outcome(locking_safe) -> None:
    f, _ = locking_safe
    fig = valid(charts.outcomes_over_time(f))
    assert names(fig) == ["ok", "ConditionalCheckFailed", "info (unknown)"]
    assert all(t.stackgroup == "one" for t in fig.data)
    width = fig.layout.meta["bin_s"]
    assert sum(float(np.sum(t.y)) for t in fig.data) * width == pytest.approx(len(f))


def test_latency_percentiles_are_ordered(counters_safe) -> None:
    f, _ = counters_safe
    fig = valid(charts.latency(f))
    p50, p95, p99 = (np.asarray(t.y, dtype=float) for t in fig.data)
    assert (p50 <= p95 + 1e-9).all() and (p95 <= p99 + 1e-9).all()
    assert fig.layout.meta["p50"] == pytest.approx(np.percentile(f["latency_ms"], 50))


def test_binned_percentiles_match_numpy() -> None:
    rng = np.random.default_rng(1)
    bins = rng.integers(0, 7, 2000)
    values = rng.exponential(10, 2000)
    ids, q = charts.binned_percentiles(bins, values, (0.5, 0.95))
    for i, b in enumerate(ids):
        assert q[i] == pytest.approx(np.percentile(values[bins == b], [50, 95]))


def test_empty_history_gives_placeholders() -> None:
    f = history_of([]).snapshot(detail=True, requests=True)
    for fig in (
        charts.timeline(f),
        charts.outcomes_over_time(f),
        charts.latency(f),
        charts.final_state([]),
        *charts.pattern_views("atomic-counters", f),
        *charts.pattern_views("distributed-locking", f),
    ):
        assert valid(fig).layout.meta["empty"] is True


# -- final state and every pattern's views ----------------------------------------------------------------------


def test_final_state_marks_broken_invariants(counters_racy) -> None:
    _, summary = counters_racy
    fig = valid(charts.final_state(summary["invariants"]))
    expected, observed = fig.data
    assert list(observed.marker.color).count(RACY_COLOUR) == 2
    assert any("off by" in t for t in observed.text)


@pytest.mark.parametrize(
    "name",
    [
        "atomic-counters-racy",
        "optimistic-locking-safe",
        "transactions-safe",
        "unique-constraints-safe",
        "idempotency-keys-safe",
        "gsi-consistency-racy",
        "distributed-locking-racy",
    ],
)
def test_every_pattern_view_is_a_valid_figure(name: str) -> None:
    f, summary = frame(name)
    figs = charts.pattern_views(summary["pattern"], f, summary["invariants"], summary["options"])
    assert figs and all(valid(fig) for fig in figs)


def test_unknown_pattern_falls_back_to_actions_by_outcome(locking_safe) -> None:
    f, _ = locking_safe
    (fig,) = charts.pattern_views("conditional-writes", f)
    assert valid(fig).layout.title.text == "<b>Calls per action and outcome</b>"


def test_share_y_gives_side_by_side_charts_one_scale(counters_racy, counters_safe) -> None:
    figs = [charts.outcomes_over_time(counters_racy[0]), charts.outcomes_over_time(counters_safe[0])]
    charts.share_y(figs)
    assert figs[0].layout.yaxis.range == figs[1].layout.yaxis.range


def test_sweep_lines_four_panels_two_variants() -> None:
    rows = pd.DataFrame(
        [
            {
                "variant": v,
                "safe": v == "add",
                "threads": t,
                "conflict_rate": 0.1,
                "calls": 10,
                "retries_per_success": 0.2,
                "calls_per_s": 100.0,
                "p95_ms": 5.0,
            }
            for v in ("add", "read-then-put")
            for t in (1, 2, 4, 8)
        ]
    )
    fig = valid(sweep_charts.sweep_lines(rows))
    assert len(fig.data) == 8 and {t.xaxis for t in fig.data} == {"x", "x2", "x3", "x4"}
    assert fig.layout.xaxis.type == "log"
    assert valid(sweep_charts.sweep_lines(pd.DataFrame())).layout.meta["empty"]


def test_call_log_is_the_seed_format(locking_safe) -> None:
    f, _ = locking_safe
    text = call_log(f.head(5))
    assert text.startswith(">>> ") and "=== #" in text and '"OK"' in text
    assert call_log(f, limit=3).count(">>> ") == 3


# -- 100k calls --------------------------------------------------------------------------------------------------


def test_a_refresh_at_100k_calls_samples_and_says_so() -> None:
    """Every chart of the Run page from a 100k-call run, as a live refresh draws them (from the run's aggregates):
    the timeline and the version history are sampled and say so. How long it takes is measured by
    bench/dashboard/refresh.py, not here."""
    history, summary = scaled("optimistic-locking-safe", 100_000)
    record = RunRecord(
        id="big",
        source=Source.IMPORTED,
        pattern=summary["pattern"],
        variant=summary["variant"],
        threads=8,
        ops_per_client=None,
        duration_s=None,
        history=history,
        imported_summary=summary,
    )
    invariants = summary["invariants"]
    with record.view() as view:
        assert view.n == 100_000
        figs = [
            charts.timeline(view, flagged=flagged_calls(invariants)),
            charts.outcomes_over_time(view),
            charts.latency(view),
            *charts.pattern_views(summary["pattern"], view, invariants),
            charts.final_state(invariants),
        ]
    assert sum(len(t.x) for t in figs[0].data if t.type == "bar") == charts.MAX_BARS
    assert figs[0].layout.meta["sampled"] and figs[3].layout.meta["sampled"]
    assert "sampled: 2,000 of 100,000 calls shown" in figs[0].layout.title.subtitle.text
    assert "sampled: 4,000 of" in figs[3].layout.title.subtitle.text


def test_a_presenter_chart_too_short_for_every_clients_label_labels_every_other(counters_racy) -> None:
    # A Compare pair's timelines on a 720 px projector: 8 clients' labels printed over each other in 60 px.
    from dashboard.widgets.presenter import LABEL_PX, _sized

    def labelled(height: int, lanes: int) -> float:
        fig = _sized(charts.timeline(counters_racy[0], lanes=lanes), height)
        plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        assert lanes / fig.layout.yaxis.dtick * LABEL_PX <= plot_px  # the labels fit
        return float(fig.layout.yaxis.dtick)

    assert labelled(600, 8) == 1  # room for every client
    assert labelled(300, 8) == 2
    assert labelled(300, 24) == 5


def test_a_long_subtitle_wraps_between_its_parts_never_inside_one() -> None:
    # Half a 1280-px projector shows about 90 characters of a subtitle: the rest was cut off, counts included.
    from dashboard.figures.figure import SUBTITLE_CHARS, wrapped

    parts = ["1,015 calls", "hover a bar for the call as the seed logs it", "✕ all 10 calls that broke an invariant"]
    text, lines = wrapped(" · ".join(parts))
    assert lines == 2 and all(len(line) <= SUBTITLE_CHARS for line in text.split("<br>"))
    assert all(part in text for part in parts)
    assert wrapped("short") == ("short", 1) and wrapped("") == ("", 0)
    one_long_part = "x" * (SUBTITLE_CHARS + 10)
    assert wrapped(one_long_part) == (one_long_part, 1)


def test_a_presenter_chart_with_a_long_legend_keeps_it_beside_the_plot_within_the_screen() -> None:
    # The lease Gantt's eight legend entries under its plot pushed the page past 720 px and the legend off screen.
    from dashboard.views.distributed_locking import lease_gantt
    from dashboard.widgets.presenter import CHART_HEIGHT, LEGEND_BESIDE_EXTRA, _sized

    f, summary = frame("distributed-locking-racy")
    gantt = lease_gantt(f, summary["invariants"], lanes=4)
    assert gantt.layout.margin.b > 56  # figure.style put its legend under the plot
    fig = valid(_sized(gantt))
    assert fig.layout.legend.orientation == "v" and fig.layout.legend.x > 1 and fig.layout.legend.yref == "paper"
    assert fig.layout.height == CHART_HEIGHT + LEGEND_BESIDE_EXTRA and fig.layout.margin.b == 56


def test_charts_for_a_compare_column_wrap_their_subtitles_and_put_a_long_legend_under_the_plot() -> None:
    # A Compare side is ~360 px beside the sidebar at 1280 px: subtitles ran off its edge, legends over them.
    from dashboard.figures.figure import narrow
    from dashboard.widgets.live import PAIR_COLUMN_CHARS

    f, summary = frame("idempotency-keys-racy")
    wide = charts.timeline(f, flagged=flagged_calls(summary["invariants"]))
    with narrow(PAIR_COLUMN_CHARS):
        slim = valid(charts.timeline(f, flagged=flagged_calls(summary["invariants"])))
    lines = slim.layout.title.subtitle.text.split("<br>")
    assert len(lines) > len(wide.layout.title.subtitle.text.split("<br>"))
    assert all(len(html.unescape(line)) <= PAIR_COLUMN_CHARS + 2 for line in lines)  # + the " ·" that ends a part
    from dashboard.figures.figure import figure, style

    def legend_of(chars: int | None) -> go.Figure:
        spec = figure()
        for name in ("ok", "info (unknown)", "broke an invariant"):
            spec.add_trace(dict(type="scatter", x=[0], y=[0], name=name))
        if chars is None:
            return style(spec, "t")
        with narrow(chars):
            return style(spec, "t")

    assert legend_of(None).layout.legend.yref is None  # one row above the plot on a half-width chart
    assert legend_of(PAIR_COLUMN_CHARS).layout.legend.yref == "container"  # under it in a Compare column


def test_a_presenter_bar_chart_labels_every_action_when_they_fit() -> None:
    # Conditional writes' eight actions at 300 px on a projector: plotly printed every other label.
    from dashboard.figures.actions import action_outcomes
    from dashboard.widgets.presenter import LABEL_PX, _sized
    from engine.record.history import read_jsonl
    from engine.run.demos import DEFAULT_DIR

    history, _ = read_jsonl(DEFAULT_DIR / "conditional-writes--unguarded.jsonl")
    f = history.snapshot(detail=True, requests=True)
    fig = valid(_sized(action_outcomes(f)))
    actions = sorted(set(f["action"]))
    plot_px = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
    assert len(actions) >= 6 and len(actions) * LABEL_PX <= plot_px
    assert list(fig.layout.yaxis.tickvals) == actions == list(fig.layout.yaxis.ticktext)


def test_a_compare_column_breaks_a_long_bar_label_between_words() -> None:
    # Idempotency's "sends (retries and duplicates included)" was cut off at a Compare column's left edge.
    from dashboard.figures.figure import narrow
    from dashboard.views.idempotency_keys import idempotency_view
    from dashboard.widgets.live import PAIR_COLUMN_CHARS

    f, summary = frame("idempotency-keys-racy")
    wide = valid(idempotency_view(f, summary["invariants"]))
    assert wide.layout.yaxis.ticktext is None  # a half-width chart has room for it
    with narrow(PAIR_COLUMN_CHARS):
        slim = valid(idempotency_view(f, summary["invariants"]))
    labels = dict(zip(slim.layout.yaxis.tickvals, slim.layout.yaxis.ticktext, strict=True))
    long = "sends (retries and duplicates included)"
    assert labels[long].replace("<br>", " ") == long and "<br>" in labels[long]
    assert all(len(line) <= 25 for text in labels.values() for line in text.split("<br>"))
    assert all(text.count("<br>") <= 1 for text in labels.values())  # two lines at most: a bar has room for two
    assert list(labels) == list(slim.data[0].y)  # every bar keeps its label, in its order
