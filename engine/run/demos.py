"""Recorded demos: every pattern's variants run by the lab itself and kept as histories, so a talk can replay
them with no DynamoDB at all (the dashboard's "Open a recorded demo").

    python -m engine demos                 # re-record every demo into demos/
    python -m engine demos --out DIR --threads 4 --ops 6 --seed 7

Each file is the run's JSONL export (its summary in the meta line), the same format the History page imports.
Small on purpose: a few threads and ops are enough to show each race, and the folder ships in the repo.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.backends.backend import Backend
from engine.errors import BadInput, LabError
from engine.patterns import all_patterns
from engine.run.runner import Run, RunConfig, RunState
from engine.run.summary import summary

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "demos"
# A few threads and ops show every race and keep the folder small enough to ship (its size is in the README).
DEFAULT_THREADS = 4
DEFAULT_OPS = 6
DEFAULT_SEED = 7
# Knobs that make a race show within a few ops: with its default pool of 40 emails, 24 sign-ups rarely collide;
# at its default 5 %, 24 requests often reuse no key, and the reuse rule is left unjudged.
DEMO_OPTIONS: dict[str, dict[str, Any]] = {
    "unique-constraints": {"emails": 4},
    "idempotency-keys": {"reuse_share": 0.25},
}
PROBE = "atomic-counters"  # any pattern: threads, ops and seed are checked the same way for all of them


def demo_name(pattern: str, variant: str) -> str:
    return f"{pattern}--{variant}.jsonl"


def demo_files(folder: Path = DEFAULT_DIR) -> list[Path]:
    """The recorded demos in `folder`, by name (pattern, then variant); none if it does not exist."""
    return sorted(folder.glob("*--*.jsonl")) if folder.is_dir() else []


def check_demos(out: Path, *, threads: int, ops_per_client: int, seed: int) -> None:
    """BadInput, naming the flag, for a run setting every demo would refuse or a folder that cannot take them,
    which is created here: before any server starts or any demo is recorded, never after the first one."""
    RunConfig(pattern=PROBE, threads=threads, ops_per_client=ops_per_client, seed=seed).validated()
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {str(out)!r} is a file, not a folder", "give a folder (it is created if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(
            f"--out {str(out)!r}: cannot create it ({e.strerror})", "give a folder you can write in"
        ) from None


def record_demos(
    backend: Backend,
    out: Path = DEFAULT_DIR,
    *,
    threads: int = DEFAULT_THREADS,
    ops_per_client: int = DEFAULT_OPS,
    seed: int = DEFAULT_SEED,
    progress: Callable[[str], None] | None = None,
) -> list[Path]:
    """One history per (pattern, variant), written whole or not at all; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, cls in all_patterns().items():
        for variant in cls.variants:
            if progress:
                progress(f"{name} {variant}")
            config = RunConfig(
                pattern=name,
                variant=variant,
                threads=threads,
                ops_per_client=ops_per_client,
                seed=seed,
                options=dict(DEMO_OPTIONS.get(name, {})),
                profile=backend.profile,  # --profile aws-like records aws-like demos (their summaries say SIMULATED)
            )
            run = Run(config, backend).run_to_end()
            if run.state is not RunState.DONE:  # a LabError: one line from the CLI, never a traceback
                raise LabError(
                    f"demo {name} {variant} ended {run.state.value}: {run.error}",
                    "the demos written so far are whole; fix what the line says, then record them again",
                )
            path = out / demo_name(name, variant)
            try:
                run.history.export(path, meta={"summary": summary(run), "demo": True})
            except OSError as e:
                raise LabError(
                    f"could not write the demo {str(path)!r}: {e.strerror}", "give --out a folder you can write in"
                ) from None
            written.append(path)
    return written
