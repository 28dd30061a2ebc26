"""A broken AWS config or credentials file is refused first, in one line naming its variable, its value, what is
wrong and the fix, by every command that starts a server or a client, and by the dashboard. It was reported as an
embedded server that "did not start", with a fix about installing moto. What botocore reads as no file at all
(missing, a folder, an empty variable) is not refused: the run goes ahead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.backends.aws_files import check_aws_files
from engine.cli import main

VARIABLES = ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")
MALFORMED = {
    "no section header": (b"region = us-east-1\n", "line 1 comes before any [section] header"),
    "not name = value": (b"[default]\nregion = us-east-1\n!!!\n", "line 3 is not a name = value line"),
    "binary": (b"\xff\xfe\x00\x01garbage\n", "byte 1 is not text"),
    "bad indented block": (b"[default]\ns3 =\n  nonsense\n", "an indented block under a setting"),
    "a section twice": (b"[default]\na = 1\n[default]\nb = 2\n", "line 3 opens [default] again"),
    "a setting twice": (b"[default]\na = 1\na = 2\n", "line 3 sets 'a' again in [default]"),
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS file of the user's in play: both variables unset and a HOME without ~/.aws."""
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def write(folder: Path, content: bytes) -> Path:
    path = folder / "aws.ini"
    path.write_bytes(content)
    return path


def refused_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2  # bad input, as other bad settings are
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert " — " in line and "did not start" not in line and "moto" not in line
    return line


@pytest.mark.parametrize("variable", VARIABLES)
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_file_botocore_cannot_parse_is_named_with_its_variable_and_the_fix(
    capsys: pytest.CaptureFixture[str], clean_env: Path, monkeypatch: pytest.MonkeyPatch, variable: str, case: str
) -> None:
    content, why = MALFORMED[case]
    path = write(clean_env, content)
    monkeypatch.setenv(variable, str(path))
    line = refused_line(capsys, ["run", "22", "--threads", "2"])
    assert f"{variable}={str(path)!r}: botocore cannot parse it ({why}" in line
    assert f"unset {variable} or fix the file" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "22", "--threads", "2"],
        ["run", "22", "--endpoint-url", "http://127.0.0.1:1"],
        ["serve", "--port", "1"],
        ["walkthrough", "22"],
        ["walkthrough", "all"],
        ["sweep", "22", "--threads", "1", "--ops", "1"],
        ["demos", "--out", "DIR"],
    ],
)
def test_every_command_that_starts_a_server_or_a_client_refuses_it_first(
    capsys: pytest.CaptureFixture[str], clean_env: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    path = write(clean_env, MALFORMED["no section header"][0])
    monkeypatch.setenv("AWS_CONFIG_FILE", str(path))
    argv = [str(clean_env / "demos") if a == "DIR" else a for a in argv]
    assert "unset AWS_CONFIG_FILE or fix the file" in refused_line(capsys, argv)


def test_a_secret_on_the_line_at_fault_is_never_echoed(
    capsys: pytest.CaptureFixture[str], clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(clean_env, b"aws_secret_access_key = wJalrXUtnFEMIexampleKEY\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(path))
    line = refused_line(capsys, ["run", "22"])
    assert "wJalrXUtnFEMI" not in line and "aws_secret_access_key" not in line and "line 1" in line


def test_the_default_file_read_when_the_variable_is_unset_is_named_as_such(
    capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    (clean_env / ".aws").mkdir()
    (clean_env / ".aws" / "config").write_bytes(b"garbage [[[\n")
    line = refused_line(capsys, ["walkthrough", "22"])
    assert "~/.aws/config (read because AWS_CONFIG_FILE is not set): botocore cannot parse it" in line
    assert "AWS_CONFIG_FILE=/dev/null skips it" in line


def test_what_botocore_reads_as_no_file_is_not_refused_and_a_run_goes_ahead(
    capsys: pytest.CaptureFixture[str], clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for value in ("", os.devnull, str(clean_env), str(clean_env / "missing.ini")):
        for variable in VARIABLES:
            check_aws_files({variable: value})
    monkeypatch.setenv("AWS_CONFIG_FILE", str(clean_env))  # a folder
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(clean_env / "missing.ini"))
    assert main(["run", "22", "--threads", "2", "--ops", "2", "--json"]) == 0
    assert '"state": "done"' in capsys.readouterr().out


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_skipped_by_botocore_so_it_is_not_refused(clean_env: Path) -> None:
    path = write(clean_env, b"garbage [[[\n")
    path.chmod(0)
    check_aws_files({"AWS_CONFIG_FILE": str(path)})
