"""python -m engine walkthrough: replay one seed's scene (or all of them) in the seed's call-log format, or as one
JSON document per scene (--json)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from engine.backends.backend import Backend
from engine.commands.backend_args import backend_for
from engine.errors import BadInput
from engine.patterns import all_patterns, get_pattern
from engine.record.calllog import NO_RESULT
from engine.record.history import call_to_dict, dumps

if TYPE_CHECKING:
    from engine.run.walkthrough import Scene


def cmd_walkthrough(args: argparse.Namespace) -> int:
    from engine.run.walkthrough import check_variant, run_walkthrough

    refs = list(all_patterns()) if args.pattern == "all" else [get_pattern(args.pattern).name]
    if args.variant is not None:
        if len(refs) > 1:
            raise BadInput("--variant needs one pattern, not 'all'", "e.g. walkthrough 23 --variant version-attribute")
        check_variant(get_pattern(refs[0]), args.variant)  # unknown or sceneless: refused before any server starts
    with backend_for(args) as backend:
        if args.json:
            return _json_scenes(refs, backend, args.variant)
        if backend.profile.simulated:
            print(f"server profile: {backend.profile.describe()}\n")
        for ref in refs:
            pattern = get_pattern(ref)
            if len(refs) > 1:
                print(f"##### {pattern.seed} · {pattern.title}\n")
            run_walkthrough(ref, backend, sys.stdout, variant=args.variant)
    return 0


def _json_scenes(refs: list[str], backend: Backend, variant: str | None) -> int:
    """One line of JSON per scene, printed as it ends; a scene that stops ends the command as in the text mode
    (its document says so, the error goes to stderr), after its own document."""
    from engine.run.walkthrough import play_scene

    for ref in refs:
        scene = play_scene(ref, backend, variant=variant)
        print(dumps(scene_document(scene, backend)), flush=True)
        if scene.stopped is not None:
            print(f"error: {scene.stopped}", file=sys.stderr)
            return scene.stopped.exit_code
    return 0


def scene_document(scene: Scene, backend: Backend) -> dict[str, Any]:
    """A scene as --json prints it: where it played (the profile as a run's summary gives it: aws-like is
    simulated, and says so), its titled results in order, and its calls."""
    return {
        "pattern": scene.pattern,
        "seed": scene.seed,
        "variant": scene.variant,  # None: the pattern's one scene
        "backend": backend.kind.value,
        "endpoint_url": backend.endpoint_url,
        "table": scene.table,
        "profile": backend.profile.as_dict(),
        "state": "stopped" if scene.stopped is not None else "done",
        "error": str(scene.stopped) if scene.stopped is not None else None,
        # a heading alone has no "value" (a value may itself be null)
        "results": [{"title": t} if v is NO_RESULT else {"title": t, "value": v} for t, v in scene.results],
        # each as the history file writes it (times from the scene's start, retries, detail, request)
        "calls": [call_to_dict(c, scene.history.t0_ns) for c in scene.history],
    }
