"""What a command that runs does around its run: the --history path checked before anything starts (a link
written through to its target), and the run started and waited on with a progress line, Ctrl-C and SIGTERM
stopping its clients. Shared by `run` and `workload run`."""

from __future__ import annotations

import os
import signal
import sys

from engine.errors import BadInput
from engine.run.runner import Run


def history_target(path: str) -> str:
    """Where --history writes: through a symbolic link to the file it names (the export renames a scratch file
    into place, which would replace the link itself with a file), said on stderr; the target keeps the name's
    type (.jsonl or .csv)."""
    if not os.path.islink(path):
        return path
    target = os.path.realpath(path)
    if os.path.splitext(target)[1].lower() != os.path.splitext(path)[1].lower():
        raise BadInput(
            f"--history {path[:200]!r} is a link to {target[:200]!r}, a file of another type",
            f"give the target's own path, or a {os.path.splitext(path)[1] or '.jsonl'} file",
        )
    print(f"history: {path} is a link; the calls will be written to the file it names, {target}", file=sys.stderr)
    return target


def check_history_path(path: str) -> None:
    """Before the run, so a typo never costs the calls it recorded."""
    if os.path.isdir(path):
        raise BadInput(
            f"--history {path!r} is a folder", f"give a file in it, e.g. --history {os.path.join(path, 'run.jsonl')}"
        )
    if not path.lower().endswith((".jsonl", ".csv")):
        raise BadInput(f"--history {path!r} must end in .jsonl or .csv", "e.g. --history run.jsonl")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise BadInput(f"--history {path!r}: cannot write in {folder}", "give a path in a writable folder")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise BadInput(f"--history {path!r} exists and cannot be overwritten", "give another file name")
    # The export writes PATH.tmp, then renames it: made and removed here, what the folder checks cannot see (a
    # name too long, a read-only disk, a folder only root may write in) is refused now, not after the run.
    scratch = path + ".tmp"
    try:
        with open(scratch, "x"):
            pass
        os.unlink(scratch)
    except FileExistsError:
        # Left by an export that was killed: the next export overwrites it, unless it is a folder or read-only.
        if os.path.isdir(scratch) or not os.access(scratch, os.W_OK):
            raise BadInput(
                f"--history {path[:200]!r}: the export's scratch file {scratch[:200]!r} is in the way (a folder, "
                "or not writable)",
                f"remove {scratch[:200]!r}, or give another path",
            ) from None
    except OSError as e:
        raise BadInput(f"--history {path[:200]!r}: cannot write it ({e.strerror})", "give another path") from None


def start_and_wait(run: Run, quiet: bool, refused: str = "fail", unknown: str = "info") -> None:
    """Start `run` and wait for its end: a progress line on a terminal, Ctrl-C and SIGTERM stop the clients (the
    run is then verified on the calls made)."""
    show = not quiet and sys.stderr.isatty()
    # From before the start: a SIGTERM between start and wait would otherwise leave the run's clients calling.
    previous = signal.signal(signal.SIGTERM, lambda *_: run.stop())
    try:
        run.start()
        _wait_with_progress(run, show, refused, unknown)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if show:
            print(file=sys.stderr)


def _wait_with_progress(run: Run, show: bool, refused: str, unknown: str) -> None:
    try:
        while not run.wait(0.5):
            if show:
                p = run.progress()
                print(
                    f"\r{p['state']:<9} {p['elapsed_s']:6.1f}s  calls {p['calls']:>7}  ok {p['ok']:>7}  "
                    f"{refused} {p['fail']:>6}  {unknown} {p['info']:>4}  {p['calls_per_s']:7.0f}/s",
                    end="",
                    file=sys.stderr,
                    flush=True,
                )
    except KeyboardInterrupt:
        print("\nstopping: the clients finish their current call, then the run is verified", file=sys.stderr)
        run.stop()
        run.wait()
