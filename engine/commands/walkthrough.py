"""python -m engine walkthrough: replay one seed's scene (or all of them) in the seed's call-log format."""

from __future__ import annotations

import argparse
import sys

from engine.commands.backend_args import backend_for
from engine.errors import BadInput
from engine.patterns import all_patterns, get_pattern


def cmd_walkthrough(args: argparse.Namespace) -> int:
    from engine.walkthrough import check_variant, run_walkthrough

    refs = list(all_patterns()) if args.pattern == "all" else [get_pattern(args.pattern).name]
    if args.variant is not None:
        if len(refs) > 1:
            raise BadInput("--variant needs one pattern, not 'all'", "e.g. walkthrough 23 --variant version-attribute")
        check_variant(get_pattern(refs[0]), args.variant)  # unknown or sceneless: refused before any server starts
    with backend_for(args) as backend:
        if backend.profile.simulated:
            print(f"server profile: {backend.profile.describe()}\n")
        for ref in refs:
            pattern = get_pattern(ref)
            if len(refs) > 1:
                print(f"##### {pattern.seed} · {pattern.title}\n")
            run_walkthrough(ref, backend, sys.stdout, variant=args.variant)
    return 0
