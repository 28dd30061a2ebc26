"""Kinds of bad input the CLI once took badly: a huge value echoed in full, a huge integer or a BOM in a history
file, a flag that means nothing without another, digits of other scripts, and stdout on a full disk. Each is
refused (or read) in one line naming the problem and the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.backends.backend import BackendKind, BackendSpec
from engine.cli import main
from engine.errors import BadInput, HistoryFileError, clip
from engine.record.history import read_jsonl

DATA = Path(__file__).resolve().parent.parent / "data"
SAMPLE = DATA / "atomic-counters-racy.jsonl"


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """main(argv) refuses: exit 2 (argparse's by SystemExit), one line on stderr, nothing on stdout."""
    code: int | str | None
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = e.code
    assert code == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ")
    return line


# -- 1. a huge value is echoed by its start and its length ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "length", "fix"),
    [
        (["run", "24", "--variant", "v" * 100_000], 100_000, "use one of"),
        (["run", "23", "--set", "accounts=" + "9" * 5_000], 5_000, "--set accounts="),
        (["run", "24", "--threads", "9" * 5_000], 5_000, "--help"),
        (["run", "p" * 100_000], 100_000, "python -m engine list"),
        (["run", "24", "--retry-mode", "r" * 100_000], 100_000, "--help"),
        (["run", "24", "--history", "/tmp/" + "h" * 5_000 + ".txt"], 5_009, "--history run.jsonl"),
        (["run", "24", "--profile", "aws-like", "--profile-set", "commit_ms=" + "1 " * 50_000], 99_999, "commit_ms="),
        (["sweep", "24", "--variants", "add," + "x" * 100_000], 100_000, "use some of"),
    ],
)
def test_a_huge_value_is_shown_by_its_start_and_length_and_the_fix_stays_in_sight(
    capsys, argv: list[str], length: int, fix: str
) -> None:
    line = refused(capsys, *argv)
    assert len(line) < 600, line[:1000]
    assert f"({length:,} characters)" in line and fix in line


def test_a_short_value_and_an_apostrophe_are_left_as_they_are() -> None:
    text = "pattern 'optimistic-locking' has no variant 'x' — the clients' safe variant is the pattern's default"
    assert clip(text) == text
    assert clip("'" + "a" * 80 + "' is bad") == "'" + "a" * 80 + "' is bad"  # up to 80 characters: whole


def test_a_text_full_of_quotes_that_never_close_is_clipped_in_one_pass() -> None:
    # A scan from every opening quote to the end would take minutes on 100 KB.
    clipped = clip(" 'x" * 100_000)
    assert len(clipped) <= 600 and clipped.endswith("(300,000 characters)")


def test_an_imported_files_huge_name_is_shown_by_its_start() -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl("/tmp/" + "n" * 5_000 + ".jsonl")
    assert len(str(e.value)) < 400 and "(5,011 characters)" in str(e.value)


# -- 2. an integer too long for Python is named by its field -------------------------------------------------------


def _with_call_field(tmp_path: Path, field: str, raw: str) -> Path:
    header, call, *_ = SAMPLE.read_text(encoding="utf-8").splitlines()
    row = json.loads(call)
    row[field] = "@"
    path = tmp_path / "huge.jsonl"
    path.write_text(header + "\n" + json.dumps(row).replace('"@"', raw) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(("field", "raw"), [("invoke_ns", "9" * 5_000), ("retries", "-" + "1" * 4_301)])
def test_an_integer_of_thousands_of_digits_is_named_by_its_field_not_called_truncated(
    tmp_path: Path, field: str, raw: str
) -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(_with_call_field(tmp_path, field, raw))
    message = str(e.value)
    assert f"line 2 of the history file, {field}" in message, message
    assert f"a {len(raw.lstrip('-')):,}-digit number" in message and "not JSON" not in message


def test_a_huge_integer_inside_a_detail_or_the_summary_is_named_too(tmp_path: Path) -> None:
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(_with_call_field(tmp_path, "detail", '{"n": ' + "7" * 6_000 + "}"))
    assert "line 2 of the history file, detail" in str(e.value) and "6,000-digit" in str(e.value)
    header, *calls = SAMPLE.read_text(encoding="utf-8").splitlines(keepends=True)
    head = json.loads(header)
    head["meta"]["summary"]["threads"] = "@"
    path = tmp_path / "summary.jsonl"
    path.write_text(json.dumps(head).replace('"@"', "8" * 5_000) + "\n" + "".join(calls), encoding="utf-8")
    with pytest.raises(HistoryFileError) as e:
        read_jsonl(path)
    assert "summary.threads" in str(e.value) and "5,000-digit" in str(e.value)


def test_broken_json_is_still_called_not_json(tmp_path: Path) -> None:
    path = _with_call_field(tmp_path, "retries", "1" * 5_000 + ",,")
    with pytest.raises(HistoryFileError, match="line 2 of the history file is not JSON"):
        read_jsonl(path)


# -- 3. a UTF-8 file with a BOM is read ------------------------------------------------------------------------


def test_a_history_saved_with_a_bom_is_read_as_without_one(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + SAMPLE.read_bytes())
    history, meta = read_jsonl(path)
    plain, plain_meta = read_jsonl(SAMPLE)
    assert len(history) == len(plain) > 0 and meta == plain_meta


# -- 4. a flag that means nothing without another is refused ---------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["run", "24", "--confirm-aws"], "--aws"),
        (["run", "24", "--confirm-aws", "--endpoint-url", "http://127.0.0.1:9"], "--aws"),
        (["walkthrough", "24", "--confirm-aws"], "--aws"),
        (["sweep", "24", "--confirm-aws"], "--aws"),
        (["run", "24", "--allow-foreign-table"], "--table"),
    ],
)
def test_a_flag_without_the_one_it_goes_with_is_refused_naming_it(capsys, argv: list[str], names: str) -> None:
    line = refused(capsys, *argv)
    assert f"without {names}" in line and f"add {names}" in line


def test_confirm_aws_with_an_aws_endpoint_url_still_means_aws() -> None:
    spec = BackendSpec.parse("https://dynamodb.eu-west-1.amazonaws.com", confirm_aws=True, region="eu-west-1")
    assert spec.kind is BackendKind.AWS
    with pytest.raises(BadInput, match="without --aws"):
        BackendSpec.parse("http://127.0.0.1:8000", confirm_aws=True)


# -- 5. digits of other scripts are not numbers ----------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "24", "--threads", "٣"],
        ["run", "24", "--ops", "３"],
        ["run", "24", "--seed", "७"],
        ["run", "24", "--max-calls", "１０"],
        ["run", "24", "--duration", "١.٥"],
        ["run", "24", "--latency-ms", "５"],
        ["run", "24", "--lost-responses", "٠.٢"],
        ["run", "23", "--set", "accounts=٣"],
        ["run", "24", "--profile", "aws-like", "--profile-set", "commit_ms=２０"],
        ["sweep", "24", "--threads", "1,٢"],
        ["sweep", "24", "--ops", "٢"],
        ["demos", "--threads", "٤"],
        ["serve", "--port", "８０００"],
    ],
)
def test_a_number_written_with_other_digits_is_refused(capsys, argv: list[str]) -> None:
    line = refused(capsys, *argv)
    assert "digits other than 0-9" in line and "write it with the digits 0-9" in line


# -- 7. stdout on a full disk ------------------------------------------------------------------------------------


def _to_full_disk(*argv: str) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "engine", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_to_a_full_disk_is_one_line_and_the_history_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    done = _to_full_disk("run", "24", "--threads", "2", "--ops", "2", "--history", str(path))
    [line] = done.stderr.strip().splitlines()
    assert done.returncode == 1 and line.startswith("error: could not write the output to stdout: No space left")
    assert f"calls are in {path}" in line
    assert path.read_text().count("\n") > 4  # the header line and the calls


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_is_only_flushed_at_exit_to_a_full_disk_is_one_line_too() -> None:
    done = _to_full_disk("list")  # small enough to sit in the buffer until the end
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "No space left" in done.stderr
