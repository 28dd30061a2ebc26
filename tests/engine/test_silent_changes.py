"""No option is silently ignored or replaced: profile knobs where no profile applies are refused before anything
starts, a --history link is written through to the file it names (and says so), and a run whose item was hidden
by the simulated stale reads names the knobs that hid it, not the table."""

from __future__ import annotations

import http.server
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli import main


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # its stderr is the command's, checked below
        pass


@pytest.fixture
def foreign_endpoint() -> Iterator[str]:
    """An HTTP server that is not the lab's (it answers /_lab/health with 404, as DynamoDB Local would)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", [["run", "22", "--threads", "1", "--ops", "1"], ["sweep", "22", "--threads", "1"]])
def test_profile_knobs_at_an_endpoint_that_is_not_the_labs_are_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str], foreign_endpoint: str, command: list[str]
) -> None:
    started = time.monotonic()
    argv = [*command, "--endpoint-url", foreign_endpoint, "--profile", "aws-like", "--profile-set", "stale_ms=5"]
    assert main(argv) == 2
    assert time.monotonic() - started < 10
    out, err = capsys.readouterr()
    assert out == ""  # no summary, no sweep table: refused before the first table
    [line] = err.strip().splitlines()
    assert "--profile-set stale_ms=5" in line and foreign_endpoint in line and "no profile applies" in line
    assert "leave out --profile and --profile-set" in line


def test_a_history_path_that_is_a_link_is_written_through_to_its_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    target = tmp_path / "kept" / "run.jsonl"
    target.parent.mkdir()
    target.write_text("")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    assert main(["run", "22", "--threads", "1", "--ops", "2", "--history", str(link)]) == 0
    err = capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == str(target)  # the link is still a link
    assert len(target.read_text().splitlines()) > 1  # header and calls, in the file it names
    assert f"{link} is a link; the calls will be written to the file it names, {target}" in err
    assert f"calls written to {target}" in err


def test_a_history_link_to_a_file_of_another_type_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    link = tmp_path / "run.csv"
    link.symlink_to(tmp_path / "run.jsonl")
    assert main(["run", "22", "--threads", "1", "--ops", "1", "--history", str(link)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "is a link to" in line and "a file of another type" in line


def test_an_item_hidden_by_simulated_stale_reads_is_blamed_on_the_stale_read_knobs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # stale_share=1: every read without ConsistentRead within stale_ms of a write misses it. A client re-reads for
    # about 4 s (engine.record.calls.NOT_YET_VISIBLE_READS with backoff), well inside the 10 s the setup's item is hidden.
    argv = ["run", "atomic-counters", "--variant", "read-then-put", "--threads", "1", "--ops", "1"]
    argv += ["--profile", "aws-like", "--profile-set", "stale_share=1", "--profile-set", "stale_ms=10000"]
    assert main(argv) == 2  # a median above the lag's cap would be shortened without a word: refused
    assert "raise the cap too" in capsys.readouterr().err
    argv += ["--profile-set", "stale_cap_ms=20000", "--profile-set", "stale_spread=1"]  # every lag exactly 10 s
    assert main(argv) != 0
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert "stale_share=1, stale_ms=10000" in error and "lower the profile's stale_ms" in error, error
    assert "check the table" not in error and "unexpected" not in error and "check the backend" not in error


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [("--threads", "1,2,2", "names a count twice"), ("--variants", "guarded,guarded", "names a variant twice")],
)
def test_a_sweep_naming_a_count_or_a_variant_twice_is_refused(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, named: str
) -> None:
    # Merged into one point, or run twice per point, without a word before.
    argv = ["sweep", "22", "--ops", "1", flag, value]
    assert main(argv) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert named in line and " — " in line
