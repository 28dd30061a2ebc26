import sys

from engine import interrupts

interrupts.install()
try:
    from engine.cli import main  # imports boto3 and pandas: a second or more, and Ctrl-C may come meanwhile

    code = main()
except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (interrupts.Terminated)
    code = interrupts.report(e)
sys.exit(code)
