"""Benchmarks: figures measured side by side in one run, printed with their targets; never unit tests."""
