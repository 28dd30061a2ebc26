import os
import sys

from engine import interrupts, stdout_guard

EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, what a shell reports for a program whose reader went away

interrupts.install()
stdout_guard.install()
try:
    from engine.cli import main  # imports boto3 and pandas: a second or more, and Ctrl-C may come meanwhile

    code = main()
    sys.stdout.flush()  # what is still buffered, now: at exit, a full disk would be a traceback
except stdout_guard.OutputLost as e:
    print(f"error: {e}", file=sys.stderr)
    code = e.exit_code
except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (interrupts.Terminated)
    code = interrupts.report(e)
except BrokenPipeError:
    # The reader went away (`| head`): the clean-ups ran on the way here; what is left to print goes nowhere,
    # rather than into a traceback and a second one when Python flushes stdout at exit.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = EXIT_PIPE_CLOSED
sys.exit(code)
