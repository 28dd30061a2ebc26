"""The shipped racy demos (recorded histories, no server): every broken invariant the explainer has a finder for
gets a witness, and the witness's own calls prove the break."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.explain import explain
from engine.explain.registry import has_finder
from engine.record.history import read_jsonl
from engine.run.demos import demo_files
from tests.explain.proofs import PROOFS

RACY = [path for path in demo_files() if any(i["holds"] is False for i in read_jsonl(path)[1]["summary"]["invariants"])]


def test_the_racy_demos_are_there() -> None:
    assert len(RACY) >= 8


@pytest.mark.parametrize("path", RACY, ids=lambda p: p.stem)
def test_each_broken_invariant_of_a_demo_has_a_witness_that_proves_it(path: Path) -> None:
    history, meta = read_jsonl(path)
    pattern = meta["summary"]["pattern"]
    witnesses = explain(pattern, history, meta["summary"]["invariants"])
    assert witnesses
    for key, witness in witnesses.items():
        if not has_finder(pattern, key):
            continue
        assert witness is not None, f"{path.stem}: no witness for {key}"
        PROOFS[key](witness)
