"""The workload command's run and sweep ends: the history file, an open-loop sweep, and a racy run's text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.record.history import read_jsonl


def test_run_exports_its_history_with_the_workload_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    assert (
        main(["workload", "run", "workloads/ticket-sale.yaml", "--clients", "2", "--ops", "3", "--history", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "workload ticket-sale (as-written)" in text and "sell" in text and "capacity" in text
    history, meta = read_jsonl(out)  # the lab's own import accepts it
    assert len(history) > 0 and meta["summary"]["pattern"] == "workload"
    assert json.loads(meta["summary"]["options"]["spec"])["name"] == "ticket-sale"  # the workload as it ran
    header = json.loads(out.read_text().splitlines()[0])["meta"]
    assert sum(op["attempts"] for op in header["summary"]["workload"]["operations"].values()) == 6  # 2 clients × 3
    assert header["workload"]["name"] == "ticket-sale"  # the workload as it ran, beside the summary


def test_a_rate_sweep_runs_open_loop_at_each_rate(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "sweep", "workloads/ticket-sale.yaml", "--rate", "50,100", "--ops", "3", "--variants", "racy"]
    assert main([*argv, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["rate"], r["variant"]) for r in rows] == [(50.0, "racy"), (100.0, "racy")]
    assert all(r["load"]["mode"] == "open" and r["load"]["arrivals"] == 48 for r in rows)  # 16 clients × 3


def test_a_racy_run_says_what_it_lost(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["workload", "run", "workloads/ticket-sale.yaml", "--variant", "racy", "--clients", "4", "--ops", "2"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "FAIL" in text and "acknowledged changes are not in the items" in text


def test_a_condition_on_a_file_attribute_refuses_as_business_and_a_bad_one_warns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cond.yaml"
    path.write_text(
        "name: cond\ntable: {items: 4, attributes: {status: active}}\noperations:\n"
        "  - {name: keep, type: update, weight: 1, mode: set, guard: condition, condition: '#status = :on', "
        "values: {':on': active}}\n"
        "  - {name: drop, type: update, weight: 1, mode: set, guard: condition, condition: '#status = :off', "
        "values: {':off': gone}}\n"
        "  - {name: bad, type: update, weight: 1, mode: set, guard: condition, condition: 'status = :off', "
        "values: {':off': gone}}\n"
        "  - {name: move, type: transact_write, weight: 1, items: 2, checks: 1}\n"
        "load: {clients: 2, ops: 12}\n"
    )
    assert main(["workload", "run", str(path), "--json", "--seed", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    ops = data["workload"]["operations"]
    assert ops["keep"]["successes"] == ops["keep"]["attempts"] > 0
    assert ops["drop"]["successes"] == 0 and ops["drop"]["refusals"]["business"] == ops["drop"]["attempts"] > 0
    assert ops["bad"]["refusals"]["validation"] == ops["bad"]["attempts"] > 0  # status is a reserved word
    assert data["workload"]["warnings"] and data["workload"]["warnings"][0].startswith("bad: ")
    assert ops["move"]["successes"] == ops["move"]["attempts"] > 0
    assert all(inv["holds"] for inv in data["invariants"])


def test_a_sweep_under_aws_like_says_simulated_in_its_table_and_each_json_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["workload", "sweep", "workloads/ticket-sale.yaml", "--clients", "1", "--ops", "2", "--variants", "racy"]
    assert main([*argv, "--profile", "aws-like", "--profile-set", "commit_ms=20"]) == 0
    table = capsys.readouterr().out
    assert table.startswith("server profile aws-like (SIMULATED; knobs changed: commit window 20 ms): "), table
    assert main([*argv, "--profile", "aws-like", "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["server_profile"] == "aws-like (SIMULATED)"
    assert row["profile"]["simulated"] is True and row["profile"]["knobs"]["commit_ms"] == 10
    assert main([*argv, "--json"]) == 0  # exact: said as such, never SIMULATED
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["server_profile"] == "exact" and row["profile"] == {"name": "exact", "simulated": False}
    assert main(argv) == 0
    assert "SIMULATED" not in capsys.readouterr().out
