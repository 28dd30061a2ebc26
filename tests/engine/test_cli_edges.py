"""The command line's edges: every argument and setting is checked before anything starts, each refusal is one
line with its fix and exit 2, no input gives a traceback, and no secret is echoed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.backends.backend import BackendSpec
from engine.backends.tables import validate_table_name
from engine.cli import EXIT_STOPPED, main
from engine.errors import BadInput
from engine.record.history import Call, History, Outcome
from engine.run.runner import RunConfig


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """main(argv) must refuse at once: exit 2, one line on stderr naming the fix, nothing on stdout."""
    started = time.monotonic()
    assert main(list(argv)) == 2
    assert time.monotonic() - started < 5  # refused before any server was started
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and " — " in line  # the problem — the fix
    return line


@pytest.mark.parametrize(
    "url",
    ["http://[::1", "http://[::1]x:80", "http://h:99999", "http://h:0", "http://h x:80", "http://h/path", "http://:80"],
)
def test_a_malformed_endpoint_url_is_one_line_not_a_traceback(capsys, url: str) -> None:
    assert "endpoint URL" in refused(capsys, "run", "23", "--endpoint-url", url)


def test_a_password_in_an_endpoint_url_is_refused_and_never_echoed(capsys, monkeypatch) -> None:
    line = refused(capsys, "run", "23", "--endpoint-url", "http://admin:hunter2@127.0.0.1:8000")
    assert "hunter2" not in line and "admin" not in line and "***@127.0.0.1:8000" in line
    with pytest.raises(BadInput) as e:
        BackendSpec.parse("https://:s3cret@db.example:443")
    assert "s3cret" not in str(e.value)


@pytest.mark.parametrize(
    ("flag", "pair"), [("--set", "accounts"), ("--set", "=4"), ("--profile-set", "commit_ms"), ("--profile-set", " =5")]
)
def test_a_pair_that_is_not_name_value_is_named_with_its_own_flag(capsys, flag: str, pair: str) -> None:
    line = refused(capsys, "run", "24", "--profile", "aws-like", flag, pair)
    assert f"{flag} {pair!r} is not NAME=VALUE" in line and f"write it like {flag} " in line


@pytest.mark.parametrize("interval", ["0", "-1", "0.001", "1e9"])
def test_serve_refuses_a_ttl_interval_that_would_spin_a_core(capsys, interval: str) -> None:
    assert "--ttl-interval" in refused(capsys, "serve", "--ttl-interval", interval)


@pytest.mark.parametrize("interval", ["nan", "inf"])
def test_serve_refuses_a_ttl_interval_that_is_not_a_number(capsys, interval: str) -> None:
    with pytest.raises(SystemExit) as e:
        main(["serve", "--ttl-interval", interval])
    assert e.value.code == 2 and "finite" in capsys.readouterr().err


@pytest.mark.parametrize(
    "threads, message",
    [
        ("", "empty"),
        (",", "empty"),
        (" , ,", "empty"),
        ("1,x", "whole numbers"),
        ("0,4", "from 1"),
        ("1,9999", "from 1"),
    ],
)
def test_a_bad_sweep_thread_list_is_refused_before_the_server_starts(capsys, threads: str, message: str) -> None:
    assert message in refused(capsys, "sweep", "24", "--threads", threads)


def test_a_history_path_that_is_a_folder_is_refused_before_the_run(capsys, tmp_path: Path) -> None:
    assert "is a folder" in refused(capsys, "run", "23", "--history", str(tmp_path))


def test_a_failed_history_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch) -> None:
    history = History()
    history.append(
        Call(client=0, action="a", op="PutItem", key="k", invoke_ns=1, complete_ns=2, outcome=Outcome.OK, detail={})
    )

    def disk_full(*_: object, **__: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(History, "write_jsonl", disk_full)
    with pytest.raises(OSError):
        history.export(tmp_path / "run.jsonl")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["abc\n", "ab", "a b c", "tab\tle", "x" * 256, "ünï"])
def test_a_table_name_check_lets_nothing_odd_through(capsys, name: str) -> None:
    with pytest.raises(BadInput):
        validate_table_name(name)
    assert "not a valid DynamoDB table name" in refused(capsys, "run", "23", "--table", name)


@pytest.mark.parametrize("region", ["us east 1", "../etc", "eu-west-1\n", "x-", "a" * 70])
def test_a_bad_region_is_named_as_a_region_not_an_endpoint(capsys, region: str) -> None:
    line = refused(capsys, "run", "23", "--region", region)
    assert "region" in line and "is not a region name" in line and "endpoint" not in line.split(" — ")[0]


def test_a_bad_region_from_the_environment_names_the_variable(capsys, monkeypatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "not a region")
    assert "AWS_DEFAULT_REGION" in refused(capsys, "run", "23")


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("cpu", [0.3, 0.7, 1.2])
def test_ctrl_c_in_the_first_instant_is_one_line_not_a_traceback(cpu: float) -> None:
    cli = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "23", "--ops", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal leaves it
    )
    # Measured in the CLI's own CPU time, not wall time: on a loaded machine a wall-clock instant may still be
    # Python's own start-up (site), where no program can catch the signal. Past it: importing boto3 and pandas,
    # or starting the embedded server.
    deadline = time.monotonic() + 60
    while cli.poll() is None and cpu_s(cli.pid) < cpu and time.monotonic() < deadline:
        time.sleep(0.01)
    cli.send_signal(signal.SIGINT)
    _, err = cli.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert cli.returncode in (0, EXIT_STOPPED, 130, -signal.SIGINT), err


def servers_of(pid: int) -> list[int]:
    """The embedded servers process `pid` started (they are told its pid on their command line)."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:  # not a process, or it has just ended
            continue
        if b"engine.server" in argv and argv[argv.index(b"--parent-pid") + 1 :][:1] == [str(pid).encode()]:
            found.append(int(entry))
    return found


@pytest.mark.parametrize("instant", [0.05, 0.3, 0.6, "server up", 1.0, 1.5])
def test_sigterm_at_any_instant_is_one_line_and_a_documented_exit_code(instant: float | str) -> None:
    # Before the run's own handler (importing boto3, starting the server, creating the table) SIGTERM used to end
    # the CLI at once and silently (-15), skipping the clean-ups Ctrl-C runs. Measured in CPU time, as above.
    cli = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "23", "--duration", "30"],  # still running at every instant
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while cli.poll() is None and time.monotonic() < deadline:
        if servers_of(cli.pid) if instant == "server up" else cpu_s(cli.pid) >= float(instant):
            break
        time.sleep(0.005)
    cli.send_signal(signal.SIGTERM)
    out, err = cli.communicate(timeout=60)
    assert "Traceback" not in err, err
    if cli.returncode == 128 + signal.SIGTERM:  # before the run started: nothing to verify
        assert (out, err) == ("", "terminated\n")
    else:  # the run was stopped in order and verified on the calls it made
        assert cli.returncode == EXIT_STOPPED, (cli.returncode, err)
        assert "STOPPED" in out, out
    deadline = time.monotonic() + 10  # the server it started has gone with it
    while servers_of(cli.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert servers_of(cli.pid) == []


# A Ctrl-C that Python takes inside a weakref callback (as CI's did, in an import lock's) cannot be raised
# there: Python prints "Exception ignored in ..." with a traceback and goes on as if no one had pressed it.
_INTERRUPT_IN_A_CALLBACK = """
import time, weakref
{install}
class Item: pass
def callback(_):
    raise KeyboardInterrupt
item = Item()
ref = weakref.ref(item, callback)
try:
    del item
    time.sleep({seconds})
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


# Callbacks that run most of the time: a Ctrl-C, and each time it is sent again, mostly lands in one of them.
_INTERRUPTS_IN_BUSY_CALLBACKS = """
import os, signal, threading, time, weakref
{install}
class Item: pass
def busy(_):
    sum(range(20000))
def press_ctrl_c():
    time.sleep(0.1)
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=press_ctrl_c).start()
deadline = time.monotonic() + {seconds}
try:
    while time.monotonic() < deadline:
        item = Item()
        ref = weakref.ref(item, busy)
        del item
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


_HOOK = "from engine import interrupts; interrupts.install()"


def _python(script: str, installed: bool, seconds: float) -> subprocess.CompletedProcess[str]:
    install = _HOOK if installed else ""
    return subprocess.run(
        [sys.executable, "-c", script.format(install=install, seconds=seconds)],
        capture_output=True,
        text=True,
        timeout=120,
        # As a terminal leaves it: a background job (CI's, or `./test &`) inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.parametrize("script", [_INTERRUPT_IN_A_CALLBACK, _INTERRUPTS_IN_BUSY_CALLBACKS])
def test_ctrl_c_inside_a_weakref_callback_still_stops_the_program(script: str) -> None:
    done = _python(script, True, 60)  # interrupted, it ends at once
    assert (done.stdout, done.stderr) == ("interrupted\n", "")


def test_without_the_hook_python_prints_the_interrupt_and_goes_on() -> None:
    done = _python(_INTERRUPT_IN_A_CALLBACK, False, 0.5)  # what the hook is for
    assert done.stdout == "went on\n" and "Exception ignored in" in done.stderr


def test_where_sigint_is_ignored_the_hook_leaves_pythons_report_as_it_is() -> None:
    install = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); " + _HOOK
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_IN_A_CALLBACK.format(install=install, seconds=0.5)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == "went on\n" and "Exception ignored in" in done.stderr


def test_a_sigterm_lost_in_a_weakref_callback_is_sent_again_as_a_sigterm() -> None:
    # Sent again as Ctrl-C, it would end the program as "interrupted" (130), not as what was asked.
    script = _INTERRUPT_IN_A_CALLBACK.replace("raise KeyboardInterrupt", "raise interrupts.Terminated").replace(
        "except KeyboardInterrupt:", "except interrupts.Terminated:"
    )
    done = _python(script.replace('print("interrupted")', 'print("terminated")'), True, 60)
    assert (done.stdout, done.stderr) == ("terminated\n", "")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["23", "--variant", "blind-write"], "no walkthrough scene of its own for variant 'blind-write'"),
        (["24", "--variant", "add"], "no walkthrough scene of its own for variant 'add'"),
        (["23", "--variant", "nope"], "no variant 'nope'"),
        (["all", "--variant", "version-attribute"], "needs one pattern"),
    ],
)
def test_a_walkthrough_variant_it_would_not_play_is_refused(capsys, argv: list[str], says: str) -> None:
    # Never the default scene played under another variant's name.
    line = refused(capsys, "walkthrough", *argv)
    assert says in line


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--max-threads", "0"], "the thread cap must be from 1 to 4096, got 0"),
        (["--max-threads", "-3"], "the thread cap must be from 1 to 4096, got -3"),
        (["--max-threads", "100000", "--threads", "100000"], "the thread cap must be from 1 to 4096, got 100000"),
        (["--seed", "-1"], "the random seed must be from 0 to 2147483647, got -1"),
        (["--seed", "2147483648"], "the random seed must be from 0 to 2147483647"),
        (["--ops", "99999999"], "ops per client must be from 1 to 10,000,000"),
    ],
)
def test_every_numeric_run_option_has_both_bounds(capsys, argv: list[str], says: str) -> None:
    # --max-threads 0 said "use at most 0"; a huge cap, a negative seed (Python's random plays -n as n) and
    # a huge --ops were accepted.
    line = refused(capsys, "run", "23", *argv)
    assert says in line and "use at most 0" not in line


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "23", "--variant", ""],
        ["run", "23", "--history", " "],
        ["run", "23", "--endpoint-url", ""],
        ["run", "23", "--region", ""],
        ["walkthrough", "23", "--variant", ""],
        ["sweep", "23", "--variants", ""],
        ["demos", "--out", ""],
    ],
)
def test_an_empty_flag_value_is_refused_not_taken_as_the_flag_left_out(capsys, argv: list[str]) -> None:
    # --history "$OUT" with OUT unset ran without exporting; --out "" re-recorded the repo's own demos/.
    with pytest.raises(SystemExit) as e:  # argparse's refusal: before anything starts
        main(argv)
    out, err = capsys.readouterr()
    assert e.value.code == 2 and out == ""
    [line] = err.strip().splitlines()
    assert line.startswith(f"error: argument {argv[-2]}: an empty value") and " — " in line


def test_a_run_config_with_an_empty_variant_name_is_refused_not_run_as_the_safe_variant() -> None:
    with pytest.raises(BadInput, match="has no variant ''"):
        RunConfig(pattern="23", variant="").validated()


def test_a_sweep_variant_list_that_names_none_is_refused(capsys) -> None:
    assert "--variants ',' names no variant" in refused(capsys, "sweep", "23", "--variants", ",")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--threads", "0"], "threads must be at least 1"),
        (["--ops", "0"], "ops per client must be from 1"),
        (["--seed", "-1"], "the random seed must be from 0"),
        (["--threads", "9999"], "above the cap"),
    ],
)
def test_demos_refuse_a_bad_setting_before_recording_any(capsys, tmp_path: Path, argv: list[str], says: str) -> None:
    # It used to start the server and record (printing "recording ...") before the first run refused it.
    out = tmp_path / "demos"
    assert says in refused(capsys, "demos", "--out", str(out), *argv)
    assert not out.exists()


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_demos_refuse_a_folder_they_cannot_write_in_one_line(capsys, tmp_path: Path, where: str) -> None:
    # Was a FileExistsError / NotADirectoryError traceback from mkdir.
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    out = a_file if where == "a file" else a_file / "sub"
    assert f"--out {str(out)!r}" in refused(capsys, "demos", "--out", str(out))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["run", "23", "--set", "accounts=2", "--set", "accounts=3"], "--set accounts was given twice: '2' and '3'"),
        (
            ["run", "23", "--profile", "aws-like", "--profile-set", "commit_ms=5", "--profile-set", "commit_ms= 9"],
            "--profile-set commit_ms was given twice: '5' and '9'",
        ),
        (
            ["run", "28", "--gsi-lag-ms", "100", "--set", "gsi_lag_ms=200"],
            "--gsi-lag-ms 100 and --set gsi_lag_ms=200 were both given",
        ),
    ],
)
def test_a_knob_set_twice_to_different_values_is_refused_not_the_last_one_taken(
    capsys, argv: list[str], says: str
) -> None:
    assert says in refused(capsys, *argv)


def test_a_history_file_name_too_long_to_write_is_refused_before_the_run(capsys, tmp_path: Path) -> None:
    # Its folder is writable, so only writing shows it: it used to be refused after the run, its calls unsaved.
    path = tmp_path / ("a" * 300 + ".jsonl")
    assert "File name too long" in refused(capsys, "run", "23", "--history", str(path))
    assert list(tmp_path.iterdir()) == []


def test_a_folder_where_the_exports_scratch_file_goes_is_refused_before_the_run(capsys, tmp_path: Path) -> None:
    # The export writes PATH.tmp and renames it: a folder of that name let the run go, and the export then failed.
    path = tmp_path / "run.jsonl"
    (tmp_path / "run.jsonl.tmp").mkdir()
    assert "scratch file" in refused(capsys, "run", "23", "--history", str(path))
    assert not path.exists()


@pytest.mark.parametrize("argv", [["list"], ["walkthrough", "23"]])
def test_a_reader_that_goes_away_ends_the_cli_quietly(argv: list[str]) -> None:
    # `python -m engine list | head -1`: BrokenPipeError used to end it with a traceback (and exit 1).
    cli = subprocess.Popen(
        [sys.executable, "-m", "engine", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert cli.stdout is not None
    cli.stdout.close()  # before it writes a line: it is still importing
    _, err = cli.communicate(timeout=120)
    assert (cli.returncode, err) == (141, "")
    if argv[0] == "walkthrough":
        assert servers_of(cli.pid) == []  # the server it started went with it


def test_the_history_file_is_written_even_when_the_summarys_reader_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    cli = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "24", "--ops", "2", "--threads", "2", "--history", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert cli.stdout is not None
    cli.stdout.close()
    _, err = cli.communicate(timeout=120)
    assert (cli.returncode, err) == (141, "")
    assert path.read_text().count("\n") > 4  # the header line and the calls
