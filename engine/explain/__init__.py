"""Why a run broke a rule, not only that it did: witnesses and a linearizability check.

What lives here:
- `witness`: the records (Witness, Step, Edge), the anomaly vocabulary (lost update, double apply, oversell,
  two owners of one lease, stale fenced write, duplicate unique value, stale read) and the story helpers;
- `calls`: the run's calls picked out of a History once, with the look-ups the witness finders share;
- `registry`: the finders by (pattern, invariant key), and `explain`, which asks them for each broken invariant;
- `linearizable`: a generic check of each key's single-item calls against a register, counter or
  conditional-write model (a second opinion that knows nothing of any pattern).

Each pattern owns its witness finders, next to its invariants (engine/patterns/<pattern>/witnesses.py, or
engine/patterns/<pattern>_witnesses.py for a one-file pattern): the pattern knows what proves its rule.

What it may import: engine.history, engine.patterns.base (an invariant's key), the standard library. Nothing here imports a pattern
at import time; `registry` imports a pattern's witness module by name when it is first asked about it, so
the patterns depend on this package and never the other way round.
"""

from __future__ import annotations

from engine.explain.registry import explain, finds, witness_for
from engine.explain.witness import Edge, Step, Witness

__all__ = ["Edge", "Step", "Witness", "explain", "finds", "witness_for"]
