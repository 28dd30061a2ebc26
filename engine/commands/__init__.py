"""The bodies of `python -m engine walkthrough | serve | sweep | demos | calibrate | explain`, one module each;
engine/cli.py parses the arguments and dispatches here."""
