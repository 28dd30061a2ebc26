"""Whatever the aws-like profile simulated says so where it shows: the CLI's sweep table, a walkthrough's output,
an imported run's profile (the dashboard's run header reads it back), the summary."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.backends.backend import Backend
from engine.run.runner import RunConfig, run_pattern
from engine.run.summary import render_text, summary
from engine.run.sweep import render_sweep, sweep_row
from engine.server.profile import AWS_LIKE, EXACT, ProfileSpec

QUICK = ProfileSpec.parse("aws-like", {"latency_ms": 0, "latency_p99_ms": 0})


@pytest.mark.parametrize("profile", [QUICK, EXACT], ids=["aws-like", "exact"])
def test_the_cli_sweep_and_summary_say_simulated_under_aws_like_only(embedded: Backend, profile: ProfileSpec) -> None:
    run = run_pattern(
        RunConfig(pattern="transactions", variant="transact", threads=2, ops_per_client=1, profile=profile, seed=3),
        embedded,
    )
    table, text = render_sweep(pd.DataFrame([sweep_row(run)]), "transactions"), render_text(summary(run))
    assert ("SIMULATED" in table) is profile.simulated and ("SIMULATED" in text) is profile.simulated


def test_a_walkthrough_under_aws_like_says_simulated_first(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import main

    assert main(["walkthrough", "25", "--profile", "aws-like", "--profile-set", "latency_ms=0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("server profile: aws-like (SIMULATED")


def test_an_imported_summarys_profile_reads_back_as_simulated() -> None:
    spec = ProfileSpec.parse("aws-like", {"commit_ms": 25, "latency_ms": 1, "latency_p99_ms": 3})
    assert ProfileSpec.from_summary(spec.as_dict()) == spec
    assert ProfileSpec.from_summary(AWS_LIKE.as_dict()) == AWS_LIKE
    assert ProfileSpec.from_summary(EXACT.as_dict()) == EXACT
    for junk in (None, "aws-like", {"name": "aws"}, {"name": "aws-like", "knobs": {"commit_ms": -1}}, {"name": 3}):
        assert ProfileSpec.from_summary(junk) is None  # a hand-edited file: no profile, never a crash


def test_each_side_of_an_aws_like_compare_pair_says_simulated() -> None:
    from tests.dashboard.test_pages import app, until, verdicts

    at = app("app_pages/compare.py")
    at.radio(key="server_profile").set_value("aws-like").run()
    at.number_input(key="compare-atomic-counters-threads").set_value(2)
    at.number_input(key="compare-atomic-counters-ops").set_value(2)
    at.button(key="compare-start").click().run()
    # Both sides ended, whatever their verdicts: 2 x 2 racy increments need not lose one, and the label does not
    # depend on it.
    until(at, lambda a: len(verdicts(a)) == 2)
    notes = [c.value for c in at.caption if c.value.startswith("Server profile aws-like (SIMULATED")]
    assert len(notes) == 2, [c.value for c in at.caption]  # one under each side's title
