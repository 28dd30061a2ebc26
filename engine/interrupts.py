"""Ctrl-C that lands where Python cannot raise it (a weakref callback, a __del__) still stops the program.

Python reports such a KeyboardInterrupt as "Exception ignored in ..." with a traceback and goes on, so the
interrupt was both noisy and lost: an import lock's weakref callback took one in CI. The hook below has it sent
again to the main thread once the main thread is out of the hook, where the CLI's own handler turns it into one
line. A sent-again interrupt that lands in another such place comes back to the hook, and is sent once more.

SIGTERM is raised as `Terminated`, a KeyboardInterrupt, from the CLI's first line on: by default it ended the
process silently (-15) wherever no command had a handler of its own yet (importing boto3, starting the server),
skipping the clean-ups Ctrl-C runs. `report` turns either into the CLI's one line and exit code.
"""

import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so the same clean-ups run (a started server is stopped)."""


_wanted = threading.Event()
_again = signal.SIGINT  # which signal the sender sends again: the one whose exception was lost
_sender_lock = threading.Lock()
_sender: threading.Thread | None = None


def _hand_back_interrupts(unraisable: Any) -> None:
    try:
        # Only where SIGINT has a Python handler: ignored (a background job's), sending it again would do nothing.
        if (
            unraisable.exc_type is not None
            and issubclass(unraisable.exc_type, KeyboardInterrupt)
            and callable(signal.getsignal(_signal_of(unraisable.exc_type)))
        ):
            _send_again(_signal_of(unraisable.exc_type))
        else:
            sys.__unraisablehook__(unraisable)
    except KeyboardInterrupt as e:  # an interrupt sent again that landed in this very hook: once more, later
        _send_again(_signal_of(type(e)))


def _signal_of(exc_type: type[BaseException]) -> signal.Signals:
    return signal.SIGTERM if issubclass(exc_type, Terminated) else signal.SIGINT


def _send_again(signum: signal.Signals) -> None:
    global _sender, _again
    _again = signum
    _wanted.set()
    with _sender_lock:
        if _sender is None:
            _sender = threading.Thread(target=_sender_loop, name="ctrl-c-again", daemon=True)
            _sender.start()


def _sender_loop() -> None:
    main = threading.main_thread().ident
    while main is not None:
        _wanted.wait()
        time.sleep(0.01)
        # Not while the main thread is still in the hook: raised there, the interrupt would be lost again.
        if _in_the_hook(sys._current_frames().get(main)):
            continue
        _wanted.clear()
        try:
            signal.pthread_kill(main, _again)  # a real signal: a sleep or a wait in the main thread ends too
        except (OSError, ValueError):
            return  # the main thread has ended


_HOOK_CODE = {_hand_back_interrupts.__code__, _send_again.__code__}


def _in_the_hook(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code in _HOOK_CODE:
            return True
        frame = frame.f_back
    return False


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


def install() -> None:
    """Send again the interrupts Python would print and drop (every other report is printed as before), and
    raise SIGTERM as Terminated until a command handles it its own way."""
    sys.unraisablehook = _hand_back_interrupts
    signal.signal(signal.SIGTERM, _raise_terminated)


def report(interrupt: KeyboardInterrupt) -> int:
    """Ctrl-C or SIGTERM that ended a command before it could finish: one line on stderr, and the exit code."""
    if isinstance(interrupt, Terminated):
        print("terminated", file=sys.stderr)
        return EXIT_TERMINATED
    print("interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED
