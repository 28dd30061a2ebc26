"""python -m engine explain FILE: why a recorded run broke its rules. For each broken invariant, its witness (the
anomaly, the story, the few calls that prove it, in the seed's log format); then the linearizability check of the
file's calls as a second opinion, saying so when it and the file's verdicts disagree."""

from __future__ import annotations

import argparse
import json
from typing import Any


def cmd_explain(args: argparse.Namespace) -> int:
    from engine.errors import BadInput
    from engine.explain import explain
    from engine.explain.opinion import opinion_line, second_opinion
    from engine.record.history import read_jsonl

    if not 0 < args.budget <= 600:
        raise BadInput(f"--budget {args.budget:g} is out of range", "give the check from 0.1 to 600 seconds")
    history, meta = read_jsonl(args.file)
    summary: dict[str, Any] = meta.get("summary") or {}
    pattern, invariants = summary.get("pattern"), summary.get("invariants") or []
    if not pattern or not invariants:
        raise BadInput(
            f"{args.file} carries no verdicts to explain (its header has no pattern or invariants)",
            "give a .jsonl exported by the lab after its run ended",
        )
    witnesses = explain(str(pattern), history, invariants)
    opinion = second_opinion(str(pattern), history, summary.get("options") or {}, invariants, args.budget)
    if args.json:
        out = {
            "witnesses": {key: w.as_dict() if w else None for key, w in witnesses.items()},
            "linearizability": opinion,
        }
        print(json.dumps(out, default=str))
        return 0
    print(f"{pattern} / {summary.get('variant')}: {len(history):,} calls, {len(witnesses)} broken invariants")
    names = {str(inv.get("key")): str(inv.get("name")) for inv in invariants}
    for key, witness in witnesses.items():
        print(f"\nFAIL  {names.get(key, key)}")
        if witness is None:
            print("      no small set of calls in this file proves it on its own")
            continue
        print(f"      {witness.anomaly.value}: {witness.story}")
        for step in witness.steps:
            call = step.call
            print(f"      #{step.seq} client {call.client} {call.op} {call.key} -> {call.outcome.value}: {step.says}")
        for edge in witness.edges:
            print(f"      #{edge.call} {edge.relation.value} #{edge.other}")
    print(f"\nlinearizability  {opinion_line(opinion)}")
    return 0
