"""Why a run broke a rule, not only that it did: witnesses and a linearizability check.

What lives here:
- `witness`: the records (Witness, Step, Edge), the anomaly vocabulary (lost update, double apply, oversell,
  two owners of one lease, stale fenced write, duplicate unique value, stale read) and the story helpers;
- `calls`: the run's calls picked out of a History once, with the look-ups the witness finders share;
- `registry`: the finders by (pattern, invariant key), and `explain`, which asks them for each broken invariant;
- `shapes`: witness shapes several patterns share (two clients' writes computed from one value read);
- `operations`: how a run's calls read as operations on single objects (Op, Kind, Reading), each pattern saying
  how its own do (`@operations`, in its witnesses module);
- `linearizable`: a check of each object's operations for linearizability (Wing & Gong with Lowe's memoization);
- `opinion`: that check as a second opinion on a run's invariants, in the shape a summary carries.

Each pattern owns its witness finders, next to its invariants (engine/patterns/<pattern>/witnesses.py, or
engine/patterns/<pattern>_witnesses.py for a one-file pattern): the pattern knows what proves its rule.

What it may import: engine.record, engine.patterns.base (an invariant's key) and the standard library. Nothing
here imports a pattern: `registry` imports a pattern's witness module by name when it is first asked about it,
so the patterns depend on this package and never the other way round.
"""

from __future__ import annotations

from engine.explain.registry import explain, finds, witness_for
from engine.explain.witness import Edge, Step, Witness

__all__ = ["Edge", "Step", "Witness", "explain", "finds", "witness_for"]
