"""A Dask worker preload (`dask_setup`) that puts the worker process in a session of its own, as the pool's client
processes are (engine/clients/processes.py starts each with start_new_session). engine/clients/cluster/local.py loads it into the
workers of a cluster the lab starts itself; a user's cluster keeps its own settings.

Why: Linux's scheduler (with autogroup, as here: /proc/sys/kernel/sched_autogroup_enabled) shares the CPU out
between sessions first, then between the threads of one session. A nanny's worker is in the session of the
process that started the cluster: with the run's home (its scheduler, nannies, Dask client, History) and both
workers' 64 client threads all in one group, the clients were preempted more often while holding the GIL, and
every such preemption stalls the share's other threads. Measured 2026-12-02 (scratch probe, per-thread clocks;
two clusters side by side, alternating passes of 64 threads at 10 ms; medians of the passes' ratios, own session
/ shared): 6 passes at load 3-11, CPU per call 0.97, calls/s 1.12, context switches per call 0.68; 8 passes at
load 10-11, 0.83, 1.20 and 0.91 (a shared session's clients switched either 23-26 or 40-53 times a call, by pass;
in their own sessions 25-36, as the pool's children: 19-37).
"""

from __future__ import annotations

import os
from typing import Any


def dask_setup(worker: Any) -> None:
    """Called by Dask in the worker process as it starts (a preload): make the process a session leader. A process
    that already leads a group (a worker started by hand without a nanny) stays where it is."""
    try:
        os.setsid()
    except OSError:
        pass
