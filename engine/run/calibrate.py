"""Calibrate the aws-like model from a real account: a fixed, bounded set of probes on a lab table, fitted to the
model's knobs, written as a profile file that `--profile-file` loads.

The probes (their request count is known before the first call: `plan`):
- latency, per operation (op_latency.py): GetItem, PutItem, UpdateItem, Query, TransactWriteItems and
  TransactGetItems, each call less the same call against the lab's own embedded server made just before it (this
  machine's part, which every run adds by itself); each operation's median and 99th percentile go into the
  file, and the plain operations' pooled figures are the model's one network time (latency_ms, latency_p99_ms).
- stale reads: a PutItem of a new item, then a GetItem without ConsistentRead sent at a controlled delay after
  it (0 to 640 ms, and never before the PutItem's answer); a read that misses the item is stale. Fitted to the model's own law, P(stale at d) =
  stale_share × P(lag > d), lag lognormal (median stale_ms, 99th percentile stale_spread × median) capped at
  stale_cap_ms (not fitted), by maximum likelihood on a grid.
- commit and abort windows: two clients' transactions on one item at controlled offsets. A committed one
  (commit_ms) or one its failed condition cancels (abort_ms) is followed by another on its item; that one's
  TransactionConflict share at offset d is P(window > d), fitted the same way (window_spread from the commit).
- hot key: a few threads write one key as fast as they can, without retries, for a few seconds: the accepted
  writes per second are the key's ceiling (write_units), when throttling was reached at all.

Each fitted value comes with a 95 % interval (likelihood ratio on the grid, or the order statistics of a
median). Delays are measured from send to send on the client: both requests cross the same network, so its
one-way time cancels to first order.
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from botocore.exceptions import BotoCoreError, ClientError

from engine.errors import BadInput, LabError
from engine.run import op_latency
from engine.server.profile import KNOBS, Z99, ProfileSpec
from engine.small_file import read_small_text

MAX_PROFILE_BYTES = 1 << 20  # a profile file is a few KB
FORMAT = 2  # of the profile file: 2 added each operation's latency ("latency"); a file without "format" is 1
STALE_DELAYS_MS = (0, 10, 20, 40, 80, 120, 200, 300, 400, 500, 640)
STALE_TRIALS = 40  # per delay
WINDOW_OFFSETS_MS = (1, 5, 10, 15, 20, 25, 30, 35, 40, 50, 60, 75, 90, 150)
WINDOW_TRIALS = 12  # per offset, for each of commit and abort
HOT_THREADS = 16
HOT_SECONDS = 3.0
HOT_MAX_CALLS = 2400
PARALLEL = 8  # trials under way at once (each on items of its own)
# On-demand list prices in us-east-1 (USD per million request units, 2024-11): the estimate printed first.
PRICE_WRITE, PRICE_READ = 0.625, 0.125
CALIBRATED = ("latency_ms", "latency_p99_ms", "stale_share", "stale_ms", "stale_spread", "commit_ms", "abort_ms",
              "window_spread", "write_units")  # fmt: skip


@dataclass(frozen=True)
class Plan:
    requests: int
    write_units: float
    read_units: float
    parts: tuple[tuple[str, int], ...] = ()  # (probe, its requests)

    @property
    def cost_usd(self) -> float:
        return (self.write_units * PRICE_WRITE + self.read_units * PRICE_READ) / 1e6


def plan() -> Plan:
    """The probes' request count and request units at most (a transaction costs two units per item)."""
    stale = len(STALE_DELAYS_MS) * STALE_TRIALS
    windows = 2 * len(WINDOW_OFFSETS_MS) * WINDOW_TRIALS
    latency_requests, latency_writes, latency_reads = op_latency.planned()
    requests = latency_requests + 2 * stale + 2 * windows + HOT_MAX_CALLS + 3  # +table create/wait/delete
    writes = latency_writes + stale + 2 * 2 * windows + HOT_MAX_CALLS
    reads = latency_reads + 0.5 * stale + len(WINDOW_OFFSETS_MS) * WINDOW_TRIALS * 2  # a failed condition reads
    parts = (
        (f"latency ({len(op_latency.OPERATIONS)} operations x {op_latency.CALLS})", latency_requests),
        ("stale reads", 2 * stale),
        ("commit and abort windows", 2 * windows),
        ("hot key", HOT_MAX_CALLS),
    )
    return Plan(requests, writes, reads, parts)


@dataclass
class Calibration:
    knobs: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    samples: dict[str, int] = field(default_factory=dict)
    latency: dict[str, op_latency.OpLatency] = field(default_factory=dict)  # per operation


def run(table: Any, reference: Any, progress: Callable[[str], None] = lambda _: None) -> Calibration:
    """Every probe against `table` (engine.backends.tables.Table, whose client has threads enough for PARALLEL trials of
    two calls and no retries), fitted; `reference` is op_latency.local_reference()'s table."""
    result = Calibration()
    progress("latency of each operation")
    _latency(table, reference, result)
    progress("stale reads")
    _stale(table, result)
    progress("commit and abort windows")
    _windows(table, result)
    progress("hot key")
    _hot_key(table, result)
    return result


# -- probes ---------------------------------------------------------------------------------------------------


def _latency(table: Any, reference: Any, result: Calibration) -> None:
    added, local_spread, failed = op_latency.measure(table, reference)
    result.latency, network = op_latency.fitted(added, local_spread, failed)
    result.samples["latency"] = sum(len(v) for v in added.values())
    if network is None:
        result.notes.append("no latency probe call succeeded: latency_ms left at its default")
        return
    result.knobs["latency_ms"] = network.median_ms
    result.knobs["latency_p99_ms"] = network.p99_ms
    result.intervals["latency_ms"] = network.interval_95
    if any(failed.values()):
        result.notes.append(f"latency probe calls that failed (left out): {failed}")


def _after(
    delay_s: float, first: Callable[[], Any], second: Callable[[], Any], *, after_answer: bool = False
) -> tuple[float, Any, Any]:
    """Send `first` (in a thread of its own: its answer may wait), then `second` `delay_s` after it (and, with
    `after_answer`, not before the first's answer: a read sent earlier could overtake the write and miss it
    without being stale); their outcomes (an answer, or the error code) and the offset between the sends, ms."""
    box: dict[str, Any] = {}
    sent = threading.Event()

    def call_first() -> None:
        box["sent"] = time.perf_counter()
        sent.set()
        try:
            box["first"] = _outcome(first)
        except BaseException as e:  # said by the caller's thread: this one's death would go unseen
            box["error"] = e

    thread = threading.Thread(target=call_first)
    thread.start()
    sent.wait()
    time.sleep(max(0.0, box["sent"] + delay_s - time.perf_counter()))
    if after_answer:
        thread.join()
    offset = (time.perf_counter() - box["sent"]) * 1000.0
    out = _outcome(second)
    thread.join()
    if "error" in box:
        raise box["error"]
    return offset, box["first"], out


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except ClientError as e:
        reasons = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
        return "TransactionConflict" if "TransactionConflict" in reasons else str(e.response["Error"]["Code"])
    except BotoCoreError as e:  # no answer at all (a read timeout, a dropped connection): no outcome to fit
        raise LabError(
            f"calibrate stopped: a probe call got no answer from the DynamoDB measured ({type(e).__name__}: {e})",
            "check the network to it and run calibrate again; no profile was written",
        ) from None


def _stale(table: Any, result: Calibration) -> None:
    client, name = table.client, table.name

    def trial(delay_ms: float) -> tuple[float, bool]:
        key = {"PK": f"stale-{uuid.uuid4().hex[:12]}", "SK": "S"}
        offset, _, read = _after(
            delay_ms / 1000.0,
            lambda: client.put_item(TableName=name, Item=key),
            lambda: client.get_item(TableName=name, Key=key),
            after_answer=True,
        )
        return offset, isinstance(read, dict) and "Item" not in read

    with ThreadPoolExecutor(PARALLEL) as pool:
        trials = list(pool.map(trial, [d for d in STALE_DELAYS_MS for _ in range(STALE_TRIALS)]))
    offsets = np.array([t[0] for t in trials])
    stale = np.array([t[1] for t in trials], dtype=float)
    result.samples["stale_reads"] = len(trials)
    if stale.sum() == 0:
        result.knobs["stale_share"] = 0.0
        result.notes.append("no read without ConsistentRead was stale: stale_share 0")
        return
    fit = _fit_survival(offsets, stale, KNOBS["stale_cap_ms"][0], fit_share=True)
    for knob, (value, low, high) in (("stale_share", fit["share"]), ("stale_ms", fit["median"])):
        result.knobs[knob] = value
        result.intervals[knob] = (low, high)
    result.knobs["stale_spread"] = fit["spread"][0]


def _windows(table: Any, result: Calibration) -> None:
    client, name = table.client, table.name

    def update(pk: str) -> dict[str, Any]:
        return {
            "Update": {
                "TableName": name,
                "Key": {"PK": pk, "SK": "S"},
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": 1},
            }
        }

    def trial(args: tuple[str, float]) -> tuple[str, float, bool]:
        kind, delay_ms = args
        pk = f"window-{uuid.uuid4().hex[:12]}"
        first = [update(pk)]
        if kind == "abort":  # a condition on an item that does not exist: cancelled after prepare
            missing = {"PK": f"missing-{pk}", "SK": "S"}
            check = {"TableName": name, "Key": missing, "ConditionExpression": "attribute_exists(PK)"}
            first = [{"ConditionCheck": check}, update(pk)]
        offset, first_out, second = _after(
            delay_ms / 1000.0,
            lambda: client.transact_write_items(TransactItems=first),
            lambda: client.transact_write_items(TransactItems=[update(pk)]),
        )
        # A second sent 1 ms after may arrive first: then the first is the one that meets a window. Either way
        # the two collided within about `offset`.
        return kind, offset, "TransactionConflict" in (first_out, second)

    jobs = [(kind, d) for kind in ("commit", "abort") for d in WINDOW_OFFSETS_MS for _ in range(WINDOW_TRIALS)]
    with ThreadPoolExecutor(PARALLEL) as pool:
        trials = list(pool.map(trial, jobs))
    result.samples["window_pairs"] = len(trials)
    for kind in ("commit", "abort"):
        offsets = np.array([t[1] for t in trials if t[0] == kind])
        conflicted = np.array([t[2] for t in trials if t[0] == kind], dtype=float)
        knob = f"{kind}_ms"
        if conflicted.sum() == 0:
            result.knobs[knob] = 0.0
            result.notes.append(f"no {kind} window seen: no second transaction conflicted, even 1 ms after")
            continue
        fit = _fit_survival(offsets, conflicted, math.inf, fit_share=False)
        result.knobs[knob] = fit["median"][0]
        result.intervals[knob] = (fit["median"][1], fit["median"][2])
        if kind == "commit":
            result.knobs["window_spread"] = fit["spread"][0]


def _hot_key(table: Any, result: Calibration) -> None:
    client, name = table.client, table.name
    counts = {"ok": 0, "throttled": 0, "calls": 0}
    lock = threading.Lock()
    stop = time.perf_counter() + HOT_SECONDS

    errors: list[BaseException] = []

    def hammer() -> None:
        while time.perf_counter() < stop:
            with lock:
                if counts["calls"] >= HOT_MAX_CALLS or errors:
                    return
                counts["calls"] += 1
            try:
                outcome = _outcome(lambda: client.put_item(TableName=name, Item={"PK": "hot", "SK": "S"}))
            except BaseException as e:  # raised below: a thread it killed would leave a rate of part of the calls
                with lock:
                    errors.append(e)
                return
            with lock:
                counts["ok" if isinstance(outcome, dict) else "throttled"] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=hammer) for _ in range(HOT_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    elapsed = time.perf_counter() - started
    result.samples["hot_key_calls"] = counts["calls"]
    if counts["throttled"] == 0:
        result.notes.append(
            f"one key took {counts['ok'] / elapsed:.0f} writes/s without throttling: its ceiling is above what"
            " this machine sent (write_units left at its default)"
        )
        return
    rate = counts["ok"] / elapsed
    spread = 1.96 * math.sqrt(counts["ok"]) / elapsed
    result.knobs["write_units"] = rate
    result.intervals["write_units"] = (rate - spread, rate + spread)


# -- fitting --------------------------------------------------------------------------------------------------


def _fit_survival(offsets: Any, hits: Any, cap_ms: float, *, fit_share: bool) -> dict[str, tuple[float, ...]]:
    """Maximum likelihood, on a grid, of P(hit at offset d) = share × P(T > d), T lognormal (median, sigma)
    capped at cap_ms: each parameter with its 95 % likelihood-ratio interval (the grid points within 1.92 of the
    best log-likelihood)."""
    medians = np.exp(np.linspace(math.log(0.5), math.log(3000.0), 160))
    sigmas = np.linspace(0.02, 2.0, 60)
    shares = np.linspace(0.01, 1.0, 100) if fit_share else np.array([1.0])
    d = np.maximum(offsets, 1e-3)[None, None, :]
    z = (np.log(d) - np.log(medians)[:, None, None]) / sigmas[None, :, None]
    survival = 0.5 * _erfc(z / math.sqrt(2.0))
    survival = np.where(d >= cap_ms, 0.0, survival)
    loglik = np.empty((len(shares), len(medians), len(sigmas)))  # share × median × sigma
    for i, share in enumerate(shares):
        p = np.clip(share * survival, 1e-9, 1 - 1e-9)
        loglik[i] = (hits * np.log(p) + (1 - hits) * np.log(1 - p)).sum(axis=-1)
    best = np.unravel_index(np.argmax(loglik), loglik.shape)
    inside = loglik >= loglik[best] - 1.92
    s_idx, m_idx, g_idx = np.nonzero(inside)

    def span(values: Any, index: Any, at: int) -> tuple[float, float, float]:
        return float(values[at]), float(values[index.min()]), float(values[index.max()])

    spread = np.exp(Z99 * sigmas)
    return {
        "share": span(shares, s_idx, int(best[0])),
        "median": span(medians, m_idx, int(best[1])),
        "spread": span(spread, g_idx, int(best[2])),
    }


_erfc_vec = np.vectorize(math.erfc)


def _erfc(x: Any) -> Any:
    return _erfc_vec(x)


# -- the profile file -----------------------------------------------------------------------------------------


def write_profile(path: Path, calibration: Calibration, region: str, endpoint: str) -> dict[str, Any]:
    """The measured knobs (clamped to their ranges), their intervals, where and when: what --profile-file reads."""
    knobs = {}
    for knob, value in calibration.knobs.items():
        _, low, high, _ = KNOBS[knob]
        knobs[knob] = round(min(max(value, low), high), 3)
    if knobs.get("latency_p99_ms", math.inf) < knobs.get("latency_ms", 0.0):
        knobs["latency_p99_ms"] = knobs["latency_ms"]
    doc = {
        "profile": "aws-like",
        "format": FORMAT,
        "calibrated": {"region": region, "date": datetime.now(UTC).strftime("%Y-%m-%d"), "endpoint": endpoint},
        "knobs": knobs,
        "intervals_95": {k: [round(a, 3), round(b, 3)] for k, (a, b) in calibration.intervals.items()},
        "samples": calibration.samples,
        # Each operation's added time: the model's network time is one law for all (knobs above), plus a
        # transaction's windows; this says how far that is from the account.
        "latency": {op: figures.as_dict() for op, figures in calibration.latency.items()},
        "notes": calibration.notes,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return doc


def load_profile(path: str) -> ProfileSpec:
    """An aws-like ProfileSpec from a calibrated profile file, labelled with where it came from; BadInput
    naming the problem and the fix for a file that is missing or not one."""
    where = Path(path)
    try:  # a regular file of at most MAX_PROFILE_BYTES only: the path is typed by any user of the dashboard
        doc = json.loads(read_small_text(path, MAX_PROFILE_BYTES, "profile file", "give the file `calibrate` wrote"))
    except ValueError:
        raise BadInput(f"{path!r} is not JSON", "give the file `python -m engine calibrate` wrote") from None
    if not isinstance(doc, dict) or doc.get("profile") != "aws-like" or not isinstance(doc.get("knobs"), dict):
        raise BadInput(f"{path!r} is not a calibrated profile", "give the file `python -m engine calibrate` wrote")
    # A file before "format" (1) has no per-operation latency: its knobs load as they are.
    written = doc.get("format", 1)
    if not isinstance(written, int) or isinstance(written, bool) or written > FORMAT:
        raise BadInput(
            f"{path!r} is a profile file of format {written!r}, newer than this lab reads (at most {FORMAT})",
            "update the lab, or calibrate again with this one",
        )
    spec = ProfileSpec.parse("aws-like", {k: str(v) for k, v in doc["knobs"].items()})
    made = doc.get("calibrated")
    made = made if isinstance(made, dict) else {}
    label = f"{where.name} ({made.get('region', '?')}, {made.get('date', '?')})"
    return spec.calibrated_from(label)
