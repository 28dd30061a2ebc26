"""Ctrl-C that lands where Python cannot raise it (a weakref callback, a __del__) still stops the program.

Python reports such a KeyboardInterrupt as "Exception ignored in ..." with a traceback and goes on, so the
interrupt was both noisy and lost: an import lock's weakref callback took one in CI. The hook below sends it
again, a moment later, to the main thread, where the CLI's own handler turns it into one line.
"""

import signal
import sys
import threading
import time
from typing import Any


def _send_again() -> None:
    # Later, not at once: the main thread may still be in the callback, where the signal would be lost again.
    time.sleep(0.02)
    main = threading.main_thread().ident
    if main is not None:
        signal.pthread_kill(main, signal.SIGINT)  # a real signal, so a sleep or a wait in the main thread ends too


def _hand_back_interrupts(unraisable: Any) -> None:
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        threading.Thread(target=_send_again, name="ctrl-c-again", daemon=True).start()
        return
    sys.__unraisablehook__(unraisable)


def install() -> None:
    """Send again the interrupts Python would print and drop; every other report is printed as before."""
    sys.unraisablehook = _hand_back_interrupts
