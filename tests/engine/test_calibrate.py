"""`python -m engine calibrate`, checked against something whose answer is known: the embedded server running
aws-like with non-default knobs. The probes and the fit must recover each knob they measure within ±20 %, and
a run with the profile file they write says where its knobs came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.backends.backend import Backend
from engine.cli import main
from engine.errors import BadInput
from engine.server.profile import ProfileSpec

# Each far from its default. The network time is long (a loaded machine's own timer and scheduling delays, a few
# ms, stay well inside ±20 % of it), and the stale lag longer still: a stale probe's read leaves only after its
# write's answer, so the lag must still be under way then for the probe to see how it falls off.
KNOWN = {
    "latency_ms": 100.0,
    "latency_p99_ms": 200.0,
    "stale_share": 0.6,
    "stale_ms": 300.0,
    "stale_spread": 2.0,
    "commit_ms": 40.0,
    "abort_ms": 30.0,
    "window_spread": 1.5,
    "write_units": 40.0,
}
RECOVERED = ("latency_ms", "latency_p99_ms", "stale_share", "stale_ms", "commit_ms", "abort_ms", "write_units")


def test_calibrate_recovers_the_knobs_of_a_known_server_and_runs_say_calibrated_from_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    known = ProfileSpec.parse("aws-like", {k: str(v) for k, v in KNOWN.items()})
    out = tmp_path / "profile.json"
    with Backend(profile=known) as server:  # every table of this server without a tag of its own is aws-like
        assert server.endpoint_url is not None
        assert main(["calibrate", "--endpoint-url", server.endpoint_url, "--yes", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith("calibrate: at most ")  # the request count comes first
    measured = json.loads(out.read_text())["knobs"]
    off = {k: round(measured[k] / KNOWN[k], 2) for k in RECOVERED}
    assert all(0.8 <= ratio <= 1.2 for ratio in off.values()), off

    assert main(["run", "24", "--threads", "2", "--ops", "2", "--profile-file", str(out)]) == 0
    assert f"calibrated from {out.name} (local, " in capsys.readouterr().out


def test_calibrate_names_a_dynamodb_to_measure_and_asks_before_it_starts(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as nothing:
        from engine.cli import build_parser
        from engine.commands.calibrate import cmd_calibrate

        cmd_calibrate(build_parser().parse_args(["calibrate"]))
    assert "--endpoint-url" in nothing.value.fix
    assert main(["calibrate", "--endpoint-url", "http://127.0.0.1:9", "--out", str(tmp_path / "p.json")]) == 2


def test_a_profile_file_that_is_not_one_is_refused_with_a_fix(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"profile": "exact"}')
    assert main(["run", "24", "--profile-file", str(junk)]) == 2
    assert main(["run", "24", "--profile-file", str(tmp_path / "missing.json")]) == 2
