"""What the home asks a Dask scheduler to run itself at the end of a cluster run: forget the run's messages.

The scheduler keeps the last events of every topic (up to `distributed.admin.low-level-log-length`, 1,000 by
default) after it has pushed them, and forgets a client's topic only Dask's `events-cleanup-delay` (an hour by
default) after that client left: without this, each run would leave its last call batches in a long-lived
scheduler's memory for an hour. This module's functions are pickled by value (cloudpickle), so the scheduler runs
them without the lab installed; they use nothing but the scheduler they are given.
"""

from __future__ import annotations

import sys
from typing import Any


def forget_topic(topic: str, dask_scheduler: Any = None) -> int:
    """On the scheduler: drop what it keeps of `topic`'s events; returns how many there were."""
    broker = dask_scheduler._broker  # Dask's own store of events (no public call empties one topic)
    kept = len(broker.get_events(topic))
    broker.truncate(topic)
    return kept


def by_value() -> None:
    """Have cloudpickle (and so Dask) send this module's functions by value rather than by name."""
    import cloudpickle

    module = sys.modules[__name__]
    if __name__ not in cloudpickle.list_registry_pickle_by_value():
        cloudpickle.register_pickle_by_value(module)
