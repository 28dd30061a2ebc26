"""python -m engine explain FILE: the witnesses of a recorded run's broken rules and the second opinion."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.cli import main
from engine.run.demos import DEFAULT_DIR

UNGUARDED = str(DEFAULT_DIR / "conditional-writes--unguarded.jsonl")


def test_explain_prints_each_broken_rules_witness_and_the_check(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", UNGUARDED]) == 0
    out = capsys.readouterr().out
    assert "FAIL  PENDING → PAID exactly once" in out
    # Which two clients and which order: as the recording's interleaving had it.
    story = r"double apply: clients \d+ and \d+ both read ORDER#o\d+ PENDING; both paid it; the order was paid twice"
    assert re.search(story, out)
    assert "\nlinearizability  not linearizable: " in out


def test_explain_json_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", UNGUARDED, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["witnesses"]["pending-paid-exactly-once"]["anomaly"] == "double apply"
    assert data["linearizability"]["verdict"] == "not linearizable" and data["linearizability"]["disagreement"] is None


def test_a_file_without_verdicts_is_one_message_with_its_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "bare.jsonl"
    bare.write_text('{"format":"ddblab-history","version":1,"meta":{}}\n', encoding="utf-8")
    assert main(["explain", str(bare)]) == 2
    err = capsys.readouterr().err
    assert "carries no verdicts to explain" in err and "exported by the lab after its run ended" in err
    assert main(["explain", UNGUARDED, "--budget", "0"]) == 2
    assert "--budget 0 is out of range" in capsys.readouterr().err
