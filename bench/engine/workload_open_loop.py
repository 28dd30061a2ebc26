"""Workloads (engine/workloads/). Open loop (load.py): at a rate this machine sustains, is the achieved rate
within ±5 % of the target; at one it cannot, does the run say so and count the late arrivals? And two presets'
conflict rates on three servers side by side (info): the embedded server exact and aws-like, and Amazon's
DynamoDB Local when Java is here. Where they differ, and why: exact applies each request whole and one at a
time, so a transaction never meets another (TransactionConflict 0), and only version checks conflict;
aws-like holds a committed transaction's items for its commit window and adds network time, so transactions
collide and refused version checks grow with the time between a read and its write; DynamoDB Local is
Amazon's own emulator with no per-key throttling (in the runs measured here, at 8 clients, it refused no
transaction for a conflict: its transactions did not overlap, so the inventory preset meets none there).

    python -m bench --only workload

A small read-mostly workload on the embedded server (exact profile), 8 client threads. The achieved rate is
each thread's arrivals over its own span, summed; a Poisson schedule of N arrivals has a relative standard
deviation of about 1/√N, so the sustainable point sends 4,000 arrivals (1.6 %: ±5 % is three of them; 1,200 and
2.9 % with --quick). Late: sent more than 10 ms after the scheduled time."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.backends.backend import Backend, BackendSpec
from engine.commands.workload import config_for, run_workload, with_load
from engine.workloads.report import CAUSES, load_line
from engine.workloads.schema.parsing import load, parse

PRESETS = Path(__file__).resolve().parents[1] / "workloads"
SIDE_BY_SIDE = ("hot-customer", "inventory-transfers")

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


def _rates(backend: Backend, preset: str, profile: str, ops: int) -> dict[str, Any]:
    """Refusals per call, by cause, over the whole mix: the figures a team compares across servers."""
    w = with_load(load(str(PRESETS / f"{preset}.yaml")), clients=8, ops=ops)
    _run, data = run_workload(
        w, config_for(w, "as-written", argparse.Namespace(profile=profile, profile_set=[], seed=5)), backend
    )
    ops_report = data["workload"]["operations"].values()
    calls = sum(op["calls"] for op in ops_report)
    return {
        "calls": calls,
        **{c: round(sum(op["refusals"][c] for op in ops_report) / max(1, calls), 3) for c in CAUSES[:3]},
        "holds": all(inv["holds"] for inv in data["invariants"]),
    }


def side_by_side(quick: bool) -> dict[str, Any]:
    ops = 8 if quick else 20
    rows: dict[str, dict[str, Any]] = {}
    with Backend(BackendSpec()) as embedded:
        for profile in ("exact", "aws-like"):
            rows[profile] = {p: _rates(embedded, p, profile, ops) for p in SIDE_BY_SIDE}
    try:
        from tests import dynamodb_local

        why = dynamodb_local.missing()
        if why is None:
            proc, url = dynamodb_local.start()
            try:
                with Backend(BackendSpec.parse(url)) as local:
                    rows["dynamodb-local"] = {p: _rates(local, p, "exact", ops) for p in SIDE_BY_SIDE}
            finally:
                proc.kill()
                proc.wait(10)
        else:
            rows["dynamodb-local"] = {"note": why}
    except Exception as e:  # a missing Java must not cost the other figures
        rows["dynamodb-local"] = {"note": f"{type(e).__name__}: {e}"}
    return rows


def measure(quick: bool = False) -> dict[str, Any]:
    with Backend(BackendSpec()) as backend:
        result = {
            "sustainable": _point(backend, SUSTAINABLE, 8, 150 if quick else 500),
            "too_fast": _point(backend, TOO_FAST, 4, 100),
        }
    result["side_by_side"] = side_by_side(quick)
    return result


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
        *_side_by_side_verdicts(result.get("side_by_side") or {}),
    ]


def _side_by_side_verdicts(rows: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for server, presets in rows.items():
        if "note" in presets:
            out.append(
                {
                    "figure": f"workload presets on {server}",
                    "value": "n/a",
                    "target": "info",
                    "pass": True,
                    "note": presets["note"],
                }
            )
            continue
        for preset, r in presets.items():
            out.append(
                {
                    "figure": f"{preset} on {server}: refused per call (condition / TransactionConflict / throttled)",
                    "value": f"{r['condition_refused']} / {r['transaction_conflict']} / {r['throttled']} of {r['calls']}",
                    "target": "info",
                    "pass": True,
                    "note": "invariants hold" if r["holds"] else "INVARIANTS BROKEN",
                }
            )
    return out


if __name__ == "__main__":
    import json

    out = measure()
    print(json.dumps(out, indent=1))
    for v in verdicts(out):
        print(v)
