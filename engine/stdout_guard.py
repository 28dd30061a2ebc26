"""Output that cannot be written (stdout to a full disk, `> /dev/full`) is one line on stderr, not a traceback.

Only stdout's own writes and flushes are guarded, so a full disk there is told apart from every other OSError (a
history file, a socket); a reader that went away (BrokenPipeError) is left to engine/__main__ (exit 141)."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO, cast

from engine.errors import LabError


class OutputLost(LabError):
    """stdout refused what the command printed: its output is incomplete."""


class _GuardedStdout:
    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._lost(e) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as e:
            raise self._lost(e) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _lost(self, error: OSError) -> OutputLost:
        # What is still buffered goes nowhere from now on: flushed again at exit, it would fail again, in a
        # traceback Python prints itself.
        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())
        return OutputLost(
            f"could not write the output to stdout: {error.strerror or error}",
            "send it where there is room (a full disk?); files the command writes itself are not affected",
        )


def install() -> None:
    """Guard sys.stdout for the rest of the process (python -m engine only)."""
    sys.stdout = cast(TextIO, _GuardedStdout(sys.stdout))
