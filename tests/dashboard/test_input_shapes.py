"""The kinds of bad input the CLI once took badly, where the dashboard meets them too: links with huge values or
other scripts' digits, imported files with a huge name, a huge integer or a BOM, caps that contradict each other.
Each is refused (or read) in a line a person can read, naming the problem and the fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.settings.env import check_settings, per_run_threads
from dashboard.widgets.links import parse, parse_sweep
from dashboard.widgets.registry import Registry
from engine.errors import BadInput, HistoryFileError
from tests.dashboard.helpers import DATA

APP = str(Path(__file__).resolve().parents[2] / "dashboard" / "streamlit_app.py")
SAMPLE = DATA / "atomic-counters-racy.jsonl"


# -- a huge value is shown by its start and its length -------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "length"),
    [
        ({"threads": "9" * 5_000}, 5_000),
        ({"pattern": "23", "k.accounts": "4" * 5_000}, 5_000),
        ({"variant": "v" * 100_000}, 100_000),
        ({"x" * 100_000: "1"}, 100_000),
    ],
)
def test_a_links_huge_value_is_one_readable_line(link: dict[str, str], length: int) -> None:
    [problem] = parse(link, "run", max_threads=256).problems
    assert len(problem) < 400 and f"({length:,} characters)" in problem and "keeps its default" in problem


def test_a_sweep_links_huge_value_is_one_readable_line() -> None:
    [problem] = parse_sweep({"ops": "9" * 5_000}, thread_choices=[1, 2, 4]).problems
    assert len(problem) < 400 and "(5,000 characters)" in problem


def test_an_import_with_a_huge_file_name_is_refused_in_a_readable_line() -> None:
    with pytest.raises(HistoryFileError) as e:
        Registry(max_runs=4).import_history("n" * 100_000 + ".txt", b"{}")
    assert len(str(e.value)) < 400 and "(100,004 characters)" in str(e.value) and "import the .jsonl" in str(e.value)


# -- imports: a huge integer is named by its field, a BOM is no obstacle ---------------------------------------


def test_an_import_with_an_integer_of_thousands_of_digits_names_the_field() -> None:
    header, call, *rest = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(call)
    row["complete_ns"] = "@"
    data = header + json.dumps(row).replace('"@"', "5" * 5_000) + "\n" + "".join(rest)
    with pytest.raises(HistoryFileError) as e:
        Registry(max_runs=4).import_history("huge.jsonl", data.encode())
    assert "line 2 of the history file, complete_ns" in str(e.value) and "5,000-digit number" in str(e.value)


def test_an_import_saved_with_a_bom_is_kept_as_without_one() -> None:
    registry = Registry(max_runs=4)
    record = registry.import_history("bom.jsonl", b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    plain = registry.import_history("plain.jsonl", SAMPLE.read_bytes())
    assert len(record.history) == len(plain.history) > 0 and record.pattern == plain.pattern


# -- digits of other scripts are not numbers -------------------------------------------------------------------


@pytest.mark.parametrize(
    "link",
    [
        {"threads": "٣"},
        {"ops": "１０"},
        {"duration": "١.٥"},
        {"seed": "७"},
        {"lost": "٠.٢"},
        {"pattern": "23", "k.accounts": "３"},
    ],
)
def test_a_links_number_written_with_other_digits_is_refused(link: dict[str, str]) -> None:
    [problem] = parse(link, "run", max_threads=256).problems
    assert "digits other than 0-9" in problem and "keeps its default" in problem


def test_a_sweep_links_number_written_with_other_digits_is_refused() -> None:
    restored = parse_sweep({"threads": "1,２", "repeats": "٢"}, thread_choices=[1, 2, 4])
    assert restored.values == {} and len(restored.problems) == 2
    assert all("digits other than 0-9" in p for p in restored.problems)


def test_a_cap_written_with_other_digits_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDBLAB_MAX_RUNS", "٣")  # int() reads it as 3
    with pytest.raises(BadInput, match="DDBLAB_MAX_RUNS='٣' is not a whole number"):
        check_settings()


# -- caps that contradict each other -----------------------------------------------------------------------------

PER_RUN_ABOVE_TOTAL = "DDBLAB_MAX_THREADS_PER_RUN=600 is above DDBLAB_MAX_TOTAL_THREADS=512"


def test_a_per_run_thread_cap_above_the_total_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDBLAB_MAX_THREADS_PER_RUN", "600")
    monkeypatch.setenv("DDBLAB_MAX_TOTAL_THREADS", "512")
    with pytest.raises(BadInput) as e:
        check_settings()
    assert str(e.value).startswith(PER_RUN_ABOVE_TOTAL) and "set DDBLAB_MAX_THREADS_PER_RUN to at most 512" in str(
        e.value
    )
    monkeypatch.delenv("DDBLAB_MAX_THREADS_PER_RUN")
    monkeypatch.setenv("DDBLAB_MAX_TOTAL_THREADS", "100")  # set alone below the per-run default (256): it lowers it
    check_settings()
    assert per_run_threads() == 100
    monkeypatch.setenv("DDBLAB_MAX_TOTAL_THREADS", "256")
    monkeypatch.setenv("DDBLAB_MAX_THREADS_PER_RUN", "256")
    check_settings()  # equal is fine


def test_contradicting_caps_are_the_same_line_at_launch_and_under_streamlit_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {**os.environ, "DDBLAB_MAX_THREADS_PER_RUN": "600", "DDBLAB_MAX_TOTAL_THREADS": "512"}
    done = subprocess.run(
        [sys.executable, "-m", "dashboard", "--server.headless", "true", "--server.port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    problem, fix = line.removeprefix("error: ").split(" — ")
    assert problem.startswith(PER_RUN_ABOVE_TOTAL)
    monkeypatch.setenv("DDBLAB_MAX_THREADS_PER_RUN", "600")
    monkeypatch.setenv("DDBLAB_MAX_TOTAL_THREADS", "512")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    [error] = [e.value.replace("\\", "") for e in at.error]  # as shown, less markdown's escapes
    assert problem in error and fix in error
    assert not at.sidebar.success  # nothing ran on the contradicting caps


@pytest.mark.parametrize(("text", "said"), [("٤٠", "has digits other than 0-9"), ("4_0", "has a '_' in it")])
def test_a_links_aws_like_knob_is_refused_in_the_shapes_its_other_numbers_are(text: str, said: str) -> None:
    # float() reads both as 40: the knob would run with a value the link does not show in 0-9.
    restored = parse({"profile": "aws-like", "aws.commit_ms": text}, "run", max_threads=256)
    [problem] = restored.problems
    assert f"commit_ms={text!r} {said}" in problem and "keeps its default" in problem
    [threads] = parse({"threads": "1_0"}, "run", max_threads=256).problems
    assert "has a '_' in it" in threads
    from engine.server.profile import ProfileSpec

    with pytest.raises(BadInput, match=f"commit_ms={text!r} {said}"):  # the CLI's --profile-set, the same check
        ProfileSpec.parse("aws-like", {"commit_ms": text})
