"""`python -m engine demos` records a history of every pattern's every variant, each one the History page can
open (the dashboard's "Open a recorded demo"), with its verdicts; and the shipped demos/ folder is that."""

from __future__ import annotations

from pathlib import Path

import pytest

from dashboard.widgets.demo_picker import demo_label, open_demo
from dashboard.widgets.registry import Registry
from engine.cli import main
from engine.patterns import all_patterns
from engine.run.demos import DEFAULT_DIR, demo_files, demo_name


def every_demo() -> set[str]:
    return {demo_name(name, variant) for name, cls in all_patterns().items() for variant in cls.variants}


def test_the_command_records_every_variant_and_each_opens_with_its_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demos", "--out", str(tmp_path), "--threads", "1", "--ops", "1"]) == 0
    assert f"{len(every_demo())} demos in {tmp_path}" in capsys.readouterr().out
    files = demo_files(tmp_path)
    assert {f.name for f in files} == every_demo()
    registry = Registry()
    record = open_demo(registry, files[0])
    assert record.invariants() and len(record.history) > 0
    assert open_demo(registry, files[0]) is record  # opened once, however often it is clicked
    assert demo_label(files[0]) == f"{record.pattern} / {record.variant}"


def test_the_shipped_demos_are_every_variant_and_small() -> None:
    files = demo_files(DEFAULT_DIR)
    assert {f.name for f in files} == every_demo()
    assert sum(f.stat().st_size for f in files) < 2 * 1024 * 1024
