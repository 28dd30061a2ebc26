"""A calibrated profile file is named by a path anyone at the dashboard may type: only a regular file of at most
1 MiB is read. A FIFO (which would block the reading thread for ever), a device that never ends (/dev/zero), a
huge file or a folder is refused with one message naming it, at once and without reading it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from engine.errors import BadInput
from engine.run.calibrate import MAX_PROFILE_BYTES, load_profile


def refusal(path: str) -> str:
    """load_profile's message for `path`, from a thread given 10 s: a read that blocks fails the test, not hangs it."""
    said: list[str] = []

    def load() -> None:
        try:
            load_profile(path)
        except BadInput as e:
            said.append(str(e))

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive(), f"reading {path} blocked"
    assert said, f"{path} was read as a profile"
    return said[0]


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "profile.json"
    os.mkfifo(fifo)
    assert "is a FIFO, not a regular file" in refusal(str(fifo))


@pytest.mark.parametrize(("path", "kind"), [("/dev/zero", "device or socket"), ("/tmp", "folder")])
def test_a_device_or_a_folder_is_refused(path: str, kind: str) -> None:
    assert f"is a {kind}, not a regular file" in refusal(path)


def test_a_file_larger_than_a_profile_may_be_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_PROFILE_BYTES + 1)  # sparse: no disk used
    said = refusal(str(big))
    assert "is 1,048,577 bytes, more than the 1,048,576 one may be" in said
    assert "give the file `calibrate` wrote" in said


def test_a_missing_file_still_says_it_cannot_be_read(tmp_path: Path) -> None:
    assert "cannot read the profile file" in refusal(str(tmp_path / "missing.json"))
