"""The embedded server's process leaves no orphan: it exits when the process that started it is gone."""

from __future__ import annotations

import os
import sys
import threading


def die_with_parent(parent_pid: int) -> None:
    """Leave no orphan. The parent holds the write end of our stdin: when its process dies, for any reason,
    the read returns EOF and we exit. (PR_SET_PDEATHSIG would fire when the parent's *thread* that started
    us exits, e.g. a Streamlit script run.) A getppid watchdog covers a parent that handed stdin elsewhere."""

    def watch_stdin() -> None:
        # The raw fd, not sys.stdin.buffer: a thread blocked inside the buffered reader holds its lock, and the
        # interpreter's shutdown (on SIGTERM) then aborts with "Fatal Python error: _enter_buffered_busy".
        try:
            fd = sys.stdin.fileno()
            while os.read(fd, 4096):
                pass
        except (OSError, ValueError):
            pass
        os._exit(0)

    def watch_parent() -> None:
        while os.getppid() == parent_pid:
            threading.Event().wait(0.5)
        os._exit(0)

    if not sys.stdin.isatty():
        threading.Thread(target=watch_stdin, name="parent-stdin", daemon=True).start()
    threading.Thread(target=watch_parent, name="parent-watchdog", daemon=True).start()
