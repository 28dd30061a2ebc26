"""Open loop of a workload (engine/workloads/load.py): at a rate this machine sustains, is the achieved rate
within ±5 % of the target; at one it cannot, does the run say so and count the late arrivals?

    python -m bench --only workload

A small read-mostly workload on the embedded server (exact profile), 8 client threads. The achieved rate is
each thread's arrivals over its own span, summed; a Poisson schedule of N arrivals has a relative standard
deviation of about 1/√N, so the sustainable point sends 4,000 arrivals (1.6 %: ±5 % is three of them; 1,200 and
2.9 % with --quick). Late: sent more than 10 ms after the scheduled time."""

from __future__ import annotations

import argparse
from typing import Any

from engine.backend import Backend, BackendSpec
from engine.commands.workload import config_for, run_workload
from engine.workloads.report import load_line
from engine.workloads.schema import parse

SPEC = """
name: open-loop-bench
table: {{items: 100, item_size: 300}}
operations:
  - {{name: read, type: get, weight: 80}}
  - {{name: add, type: update, weight: 20, mode: add}}
load: {{mode: open, rate: {rate}, clients: {clients}, ops: {ops}}}
"""
SUSTAINABLE = 200.0
TOO_FAST = 5000.0


def _point(backend: Backend, rate: float, clients: int, ops: int) -> dict[str, Any]:
    w = parse(SPEC.format(rate=rate, clients=clients, ops=ops))
    args = argparse.Namespace(profile="exact", profile_set=[], seed=3)
    _run, data = run_workload(w, config_for(w, "as-written", args), backend)
    load = data["workload"]["load"]
    return {
        "target_per_s": load["target_per_s"],
        "achieved_per_s": load["achieved_per_s"],
        "ratio": round(load["achieved_per_s"] / load["target_per_s"], 3),
        "arrivals": load["arrivals"],
        "late": load["late"],
        "sustained": load["sustained"],
        "line": load_line(load),
    }


def measure(quick: bool = False) -> dict[str, Any]:
    with Backend(BackendSpec()) as backend:
        return {
            "sustainable": _point(backend, SUSTAINABLE, 8, 150 if quick else 500),
            "too_fast": _point(backend, TOO_FAST, 4, 100),
        }


def verdicts(result: dict[str, Any]) -> list[dict[str, Any]]:
    ok, fast = result["sustainable"], result["too_fast"]
    return [
        {
            "figure": f"open loop at {ok['target_per_s']:g}/s: achieved / target ({ok['arrivals']} arrivals, "
            f"{ok['late']} late)",
            "value": ok["ratio"],
            "target": "0.95-1.05",
            "pass": 0.95 <= ok["ratio"] <= 1.05,
        },
        {
            "figure": f"open loop at {fast['target_per_s']:g}/s: says it could not sustain it",
            "value": f"achieved {fast['achieved_per_s']:g}/s, {fast['late']} of {fast['arrivals']} late",
            "target": "not sustained, late arrivals counted",
            "pass": not fast["sustained"] and fast["late"] > 0,
            "note": fast["line"],
        },
    ]


if __name__ == "__main__":
    import json

    out = measure()
    print(json.dumps(out, indent=1))
    for v in verdicts(out):
        print(v)
