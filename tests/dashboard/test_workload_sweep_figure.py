"""The workload sweep's pure parts: the figure (rows in, figure out), the dashboard's cap on its client counts in
the editor's words, and the link codec round trip."""

from __future__ import annotations

from pathlib import Path

from dashboard.figures.workload_sweep import sweep_frame, workload_sweep_lines
from dashboard.state.links import workload as workload_link
from dashboard.widgets.workload_sweep import sweep_points
from engine.workloads.schema.parsing import load

PRESETS = Path(__file__).resolve().parents[2] / "workloads"


def row(clients: int, variant: str, *, conflicts: int = 0, violations: int = 0) -> dict:
    causes = {"condition_refused": conflicts, "transaction_conflict": 0, "throttled": 0}
    return {
        "clients": clients,
        "variant": variant,
        "ops": 10 * clients,
        "goodput_per_s": 100.0 * clients,
        "refusals": causes,
        "refused_share": {c: n / (10 * clients) for c, n in causes.items()},
        "retries_per_success": conflicts / (10 * clients),
        "p99_ms": 5.0,
        "violations": violations,
        "load": {"mode": "closed"},
    }


def test_the_figure_draws_each_form_against_clients_and_leaves_out_what_is_zero() -> None:
    rows = [row(1, "as-written"), row(1, "racy"), row(4, "as-written", conflicts=8), row(4, "racy", violations=3)]
    fig = workload_sweep_lines(sweep_frame(rows, "clients"), "clients", title="Sweep")
    meta = fig.layout.meta
    assert meta["variants"] == ["as-written", "racy"]
    assert meta["panels"] == ["goodput_per_s", "conflict_share", "retries_per_success", "p99_ms", "violations"]
    assert "throttled" in fig.layout.title.subtitle.text  # the panel at zero everywhere, named
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "clients"
    racy = [t for t in fig.data if t.name == "racy (RACY)"]
    assert racy and all(t.line.dash == "dash" for t in racy)


def test_no_rows_draws_a_placeholder_not_an_error() -> None:
    fig = workload_sweep_lines(sweep_frame([], "rate"), "rate", title="Sweep")
    assert fig.layout.meta["empty"] is True


def test_client_counts_past_the_dashboards_cap_are_refused_as_the_editor_refuses_them() -> None:
    w = load(str(PRESETS / "ticket-sale.yaml"))
    points, problems = sweep_points(w, "clients", "1,64", cap=8)
    assert not points and problems == ["load.clients: 64 is above this dashboard's cap: use at most 8"]
    points, problems = sweep_points(w, "clients", "1,8", cap=8)
    assert not problems and [(p.value, p.variant) for p in points] == [
        (1, "as-written"),
        (1, "racy"),
        (8, "as-written"),
        (8, "racy"),
    ]


def test_every_preset_survives_a_link() -> None:
    for path in PRESETS.glob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        value = workload_link.encode(text)
        assert len(value) < workload_link.MAX_LINK_CHARS and workload_link.decode(value) == text
