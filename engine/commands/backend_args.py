"""What the backend and profile flags of every command ask for: the Backend to run against, the server profile,
the NAME=VALUE knobs."""

from __future__ import annotations

import argparse

from engine.backends.backend import Backend, BackendKind, BackendSpec
from engine.digits import ONLY, foreign_digits
from engine.errors import BadInput
from engine.server.profile import ProfileSpec


def knob_settings(pairs: list[str], flag: str = "--set", example: str = "accounts=4") -> dict[str, str]:
    """NAME=VALUE pairs as a dict; a malformed one is refused naming the flag it came with."""
    options: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"{flag} {pair!r} is not NAME=VALUE", f"write it like {flag} {example}")
        name, value = name.strip(), value.strip()
        if foreign_digits(value):  # the knob's own parsing (int/float) would take it as a number
            raise BadInput(f"{flag} {name}={value!r} has digits other than 0-9", f"{ONLY}, like {flag} {example}")
        if options.get(name, value) != value:  # the last one silently won
            raise BadInput(
                f"{flag} {name} was given twice: {options[name]!r} and {value!r}", f"give {flag} {name} once"
            )
        options[name] = value
    return options


def profile_for(args: argparse.Namespace) -> ProfileSpec:
    return ProfileSpec.parse(
        args.profile, knob_settings(args.profile_set, "--profile-set", "commit_ms=20") if args.profile_set else None
    )


def backend_for(args: argparse.Namespace) -> Backend:
    spec = BackendSpec.parse(args.endpoint_url, aws=args.aws, confirm_aws=args.confirm_aws, region=args.region)
    profile = profile_for(args)
    if profile.simulated and spec.kind is BackendKind.AWS:
        raise BadInput("--profile aws-like simulates AWS on the embedded server; on AWS it is real", "drop --profile")
    return Backend(spec, profile=profile)
