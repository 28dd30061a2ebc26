"""CPU time of another process or one of its threads, in nanoseconds' resolution where Linux keeps it.

/proc/PID/stat counts 10 ms ticks: a bench round of 3,000 requests at ~130 µs is ~40 of them, so a figure moved in
2.5 % steps. Each thread's /proc/PID/task/TID/schedstat gives its time on a CPU in ns."""

from __future__ import annotations

import os


def thread_cpu_s(pid: int, tid: int) -> float:
    """One thread's CPU seconds so far (OSError, ValueError or IndexError when Linux does not say)."""
    with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def process_cpu_s(pid: int) -> float:
    """A process's CPU seconds so far: its live threads' schedstat, else /proc/PID/stat's ticks (user + system).
    A thread that ended takes its time with it, so a process measured this way should keep its threads."""
    try:
        total = 0.0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                total += thread_cpu_s(pid, int(tid))
            except FileNotFoundError:  # a thread that ended meanwhile
                continue
        return total
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
