"""The run's summary carries the linearizability check as a second opinion, and says when it and the
invariants disagree (an imported file whose carried verdicts contradict its own calls, say)."""

from __future__ import annotations

from engine.backends.backend import Backend
from engine.explain.linearizable import LINEARIZABLE, NOT_LINEARIZABLE
from engine.explain.opinion import opinion_line, second_opinion
from engine.record.history import read_jsonl
from engine.run.demos import DEFAULT_DIR
from engine.run.runner import RunConfig, run_pattern
from engine.run.summary import render_text, summary
from tests.lockstep import Lockstep


def test_a_run_summary_gives_the_second_opinion_and_the_text_prints_it(backend: Backend) -> None:
    # In lockstep, the 4 clients' first reads of the views are all answered before any write leaves: all 4 write
    # views = 1, so two increments certainly return the same number.
    lockstep = Lockstep(backend, clients=4, rounds=2)
    racy = summary(
        run_pattern(
            RunConfig(pattern="atomic-counters", variant="read-then-put", threads=4, ops_per_client=2), lockstep
        )
    )
    lockstep.check()
    safe = summary(
        run_pattern(RunConfig(pattern="atomic-counters", variant="add", threads=4, ops_per_client=2), backend)
    )
    assert racy["linearizability"]["verdict"] == NOT_LINEARIZABLE and racy["linearizability"]["prefix"]
    assert safe["linearizability"]["verdict"] == LINEARIZABLE
    assert racy["linearizability"]["disagreement"] is None and safe["linearizability"]["disagreement"] is None
    assert "linearizability  not linearizable: " in render_text(racy)


def test_a_file_whose_verdicts_say_pass_over_calls_no_order_explains_is_shown_contradicted() -> None:
    history, meta = read_jsonl(DEFAULT_DIR / "atomic-counters--read-then-put.jsonl")
    claimed = [{**inv, "holds": True, "verdict": "PASS"} for inv in meta["summary"]["invariants"]]
    opinion = second_opinion("atomic-counters", history, meta["summary"]["options"], claimed)
    assert opinion["verdict"] == NOT_LINEARIZABLE
    assert "yet every invariant holds" in opinion["disagreement"] and "bug in the lab" in opinion["disagreement"]
    assert (opinion_line(opinion) or "").startswith("DISAGREES: ")


def test_the_opinion_fits_a_history_files_header() -> None:
    # A summary field the file schema does not know is kept only when it is short plain JSON (engine/record/schema.py).
    history, meta = read_jsonl(DEFAULT_DIR / "gsi-consistency--gsi-read.jsonl")
    opinion = second_opinion("gsi-consistency", history, meta["summary"]["options"], meta["summary"]["invariants"])
    assert len(repr(opinion)) <= 2_000
