"""What a run is asked to do (RunConfig), checked field by field before anything starts: every refusal names the
problem and the fix. Checking returns a ValidRun (the pattern, the config with its defaults filled in, its
options), which is what the runner runs: a caller validates once and hands that on, never checks again.
engine.run.runner re-exports both, where scripts have always imported RunConfig from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from engine.backends.backend import RetryPolicy
from engine.backends.tables import validate_table_name
from engine.clients.cluster.check import check_config
from engine.errors import BadInput
from engine.patterns import Pattern, RunOptions, get_pattern
from engine.server.profile import EXACT, ProfileSpec

DEFAULT_MAX_THREADS = 256
MAX_THREADS_CAP = 4_096  # the highest --max-threads (and dashboard DDBLAB_MAX_THREADS_PER_RUN): threads are OS threads
# A run's History keeps every call in memory (about 200 bytes each): ten million per client is already gigabytes.
MAX_OPS_PER_CLIENT = 10_000_000
MAX_SEED = 2**31 - 1  # as the dashboard's Random seed control; a run without one draws from the same range
MAX_PROCESSES = 64
AWS_DEFAULT_MAX_CALLS = 20_000  # per run on real AWS, unless the user sets another budget


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    pattern: str
    variant: str | None = None  # None: the pattern's safe variant
    threads: int = 8
    ops_per_client: int | None = None  # None with no duration: the pattern's default
    duration_s: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    lost_response_share: float | None = None  # None: the pattern's default
    latency_ms: float = 0.0
    table_name: str | None = None
    keep_table: bool = False
    allow_foreign_table: bool = False
    max_threads: int = DEFAULT_MAX_THREADS
    seed: int | None = None
    record_requests: bool = True
    max_calls: int | None = None  # a budget for the whole run (set by default on AWS: calls cost money)
    processes: int = 1  # client processes the threads are spread over (engine/clients/processes.py): past one GIL's CPU
    cluster: str | None = (
        None  # a Dask scheduler address: the clients run on its workers (engine/clients/cluster/home.py)
    )
    profile: ProfileSpec = EXACT  # the embedded server's profile for this run's table (aws-like is SIMULATED)

    def validated(self) -> ValidRun:
        """Check every field; return the pattern class, the config with defaults filled, and its options."""
        pattern = get_pattern(self.pattern)
        # Only None means the default: an empty name is a variant the pattern lacks, refused below.
        variant = pattern.safe_variant() if self.variant is None else self.variant
        if not isinstance(self.max_threads, int) or not 1 <= self.max_threads <= MAX_THREADS_CAP:
            raise BadInput(
                f"the thread cap must be from 1 to {MAX_THREADS_CAP}, got {self.max_threads}",
                f"use --max-threads 1 to {MAX_THREADS_CAP} (default {DEFAULT_MAX_THREADS})",
            )
        if not isinstance(self.threads, int) or self.threads < 1:
            raise BadInput(f"threads must be at least 1, got {self.threads}", "use --threads 1 or more")
        if self.threads > self.max_threads:
            raise BadInput(
                f"{self.threads} threads is above the cap of {self.max_threads}",
                f"use at most {self.max_threads}, or raise the cap with --max-threads",
            )
        ops = self.ops_per_client
        if ops is not None and not 1 <= ops <= MAX_OPS_PER_CLIENT:
            raise BadInput(
                f"ops per client must be from 1 to {MAX_OPS_PER_CLIENT:,}, got {ops}",
                f"use --ops 1 to {MAX_OPS_PER_CLIENT}, or --duration for a longer run",
            )
        if self.duration_s is not None and not 0 < self.duration_s <= 24 * 3600:
            raise BadInput(
                f"duration must be above 0 s and at most a day, got {self.duration_s}",
                "use --duration SECONDS, e.g. --duration 10",
            )
        if ops is None and self.duration_s is None:
            ops = pattern.default_ops
        share = pattern.lost_response_default if self.lost_response_share is None else self.lost_response_share
        if not 0.0 <= share <= 1.0:
            raise BadInput(f"lost-response share must be from 0 to 1, got {share}", "use e.g. --lost-responses 0.2")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            # Python's random treats -n as n, so a negative seed would replay other seeds' clients.
            raise BadInput(f"the random seed must be from 0 to {MAX_SEED}, got {self.seed}", "use e.g. --seed 7")
        if self.max_calls is not None and self.max_calls < 1:
            raise BadInput(f"max calls must be at least 1, got {self.max_calls}", "use e.g. --max-calls 10000")
        if not isinstance(self.processes, int) or not 1 <= self.processes <= min(self.threads, MAX_PROCESSES):
            raise BadInput(
                f"processes must be from 1 to {min(self.threads, MAX_PROCESSES)} (at most one per "
                f"thread), got {self.processes}",
                "use e.g. --processes 2, or about one per CPU core",
            )
        if self.processes > 1 and not pattern.process_pool:
            raise BadInput(
                f"{pattern.name}'s clients meet in memory (shared state), so they must share one process",
                "use --processes 1 for this pattern",
            )
        if self.allow_foreign_table and self.table_name is None:  # it would allow nothing: the lab makes a new table
            raise BadInput(
                "--allow-foreign-table was given without --table",
                "add --table NAME for the existing table, or leave out --allow-foreign-table",
            )
        if self.table_name is not None:
            validate_table_name(self.table_name)  # before anything starts, not when the table is opened
        if self.cluster is not None:
            check_config(pattern, self)
        if not 0.0 <= self.latency_ms <= 10_000:
            raise BadInput(f"latency must be from 0 to 10000 ms, got {self.latency_ms}", "use e.g. --latency-ms 10")
        values = pattern.resolve_options(variant, self.options)
        pattern.check_run(variant, self)  # what a variant cannot honour (e.g. a botocore fault without botocore)
        config = RunConfig(
            **{
                **{f: getattr(self, f) for f in self.__dataclass_fields__},
                "pattern": pattern.name,
                "variant": variant,
                "ops_per_client": ops,
                "lost_response_share": share,
                "options": values,
            }
        )
        return ValidRun(pattern, config, RunOptions(variant, self.threads, ops, values))


@dataclass(frozen=True, slots=True)
class ValidRun:
    """A RunConfig that passed `validated()`, with what checking it worked out: made only there."""

    pattern: type[Pattern]
    config: RunConfig
    options: RunOptions

    def with_max_calls(self, max_calls: int | None) -> ValidRun:
        """The same run under another call budget (the dashboard's and AWS's caps are applied after the check)."""
        if max_calls is not None and max_calls < 1:
            raise BadInput(f"max calls must be at least 1, got {max_calls}", "use e.g. --max-calls 10000")
        return ValidRun(self.pattern, replace(self.config, max_calls=max_calls), self.options)
