"""The racy form breaks its invariants for certain when its clients are spread over client processes too: the
clients of each process meet between the opening round's read and write, as one process's do."""

from __future__ import annotations

import json

import pytest

from engine.cli import main


def test_the_racy_form_loses_a_change_for_certain_over_two_processes(capsys: pytest.CaptureFixture[str]) -> None:
    # One operation each: only the opening round runs, so a loss can come from nowhere else. Two clients in each
    # process both read the hottest item before either writes it back, so one of their changes is lost.
    argv = ["workload", "run", "workloads/hot-customer.yaml", "--variant", "racy", "--clients", "4", "--ops", "1"]
    assert main([*argv, "--processes", "2", "--json"]) == 0
    verdicts = {inv["key"]: inv for inv in json.loads(capsys.readouterr().out)["invariants"]}
    assert verdicts["no-lost-change"]["holds"] is False and verdicts["no-lost-change"]["violations"] >= 2
