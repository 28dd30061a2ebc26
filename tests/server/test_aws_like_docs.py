"""The aws-like model's documentation keeps up with its knobs: every knob is in the table, with its default."""

from __future__ import annotations

import re
from pathlib import Path

from engine.server.profile import CHOICES, KNOBS

DOC = Path(__file__).resolve().parents[2] / "docs" / "aws-like-model.md"


def _table() -> dict[str, tuple[str, str]]:
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|$", DOC.read_text(), flags=re.MULTILINE)
    return {knob: (default.strip(), source.strip()) for knob, default, source in rows}


def test_every_knob_appears_in_the_docs_table_with_its_default_and_a_source() -> None:
    table = _table()
    for knob, (default, *_) in KNOBS.items():
        assert knob in table, f"{knob} is missing from {DOC.name}'s knob table"
        assert table[knob][0] == f"{default:g}", f"{knob}: the table says {table[knob][0]}, the code {default:g}"
    for knob, (choice, *_) in CHOICES.items():
        assert table.get(knob, ("", ""))[0] == choice
    assert set(table) == set(KNOBS) | set(CHOICES), "the table names a knob the code does not have"
    for knob, (_, source) in table.items():
        assert source.startswith("assumed:") or any(s in source for s in ("Guide", "ATC", "API", "re:Post")), knob
