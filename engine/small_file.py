"""A small file read from a path a user typed (a calibrated profile file, named in the dashboard's sidebar or on
the command line): refused unless it is a regular file of at most a given size, before anything is read. A FIFO
would block the reader for ever (the dashboard's script thread, on every rerun), and /dev/zero or a huge file
would fill the memory of a process every user shares."""

from __future__ import annotations

import os
import stat

from engine.errors import BadInput


def read_small_text(path: str, limit: int, what: str, fix: str) -> str:
    """The UTF-8 text of the regular file at `path`, of at most `limit` bytes; BadInput naming `what`, the
    problem and `fix` otherwise (UnicodeDecodeError, a ValueError, for one that is not UTF-8)."""
    try:
        # Without blocking: opening a FIFO for reading waits for a writer otherwise. Checked on the file opened,
        # not the name, so nothing can be swapped in between.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        raise BadInput(f"cannot read the {what} {path!r}: {e.strerror}", fix) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            mode = info.st_mode
            kind = "folder" if stat.S_ISDIR(mode) else "FIFO" if stat.S_ISFIFO(mode) else "device or socket"
            raise BadInput(f"the {what} {path!r} is a {kind}, not a regular file", fix)
        if info.st_size > limit:
            raise BadInput(f"the {what} {path!r} is {info.st_size:,} bytes, more than the {limit:,} one may be", fix)
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):  # never more, even if it grew since
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise BadInput(f"the {what} {path!r} is more than the {limit:,} bytes one may be", fix)
    return b"".join(chunks).decode("utf-8")
