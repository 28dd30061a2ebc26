import sys

from engine import interrupts

interrupts.install()
try:
    from engine.cli import main  # imports boto3 and pandas: a second or more, and Ctrl-C may come meanwhile

    code = main()
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    code = 130
sys.exit(code)
