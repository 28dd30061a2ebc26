"""What the backend and profile flags of every command ask for: the Backend to run against, the server profile,
the NAME=VALUE knobs."""

from __future__ import annotations

import argparse
from typing import Any

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


def pattern_options(pairs: list[str], gsi_lag_ms: float | None) -> dict[str, Any]:
    """The pattern knobs of `--set NAME=VALUE ...` and `--gsi-lag-ms` (its own flag for one knob)."""
    options: dict[str, Any] = dict(knob_settings(pairs))
    if gsi_lag_ms is not None:
        if "gsi_lag_ms" in options:  # two ways to set one knob: neither may silently win
            raise BadInput(
                f"--gsi-lag-ms {gsi_lag_ms:g} and --set gsi_lag_ms={options['gsi_lag_ms']} were both given",
                "give one of them",
            )
        options["gsi_lag_ms"] = gsi_lag_ms
    return options


def profile_for(args: argparse.Namespace) -> ProfileSpec:
    knobs = knob_settings(args.profile_set, "--profile-set", "commit_ms=20") if args.profile_set else None
    if getattr(args, "profile_file", None):
        from engine.run.calibrate import load_profile

        calibrated = load_profile(args.profile_file)
        if not knobs:
            return calibrated
        merged = {k: str(v) for k, v in calibrated.knobs().items()} | knobs  # --profile-set wins
        return ProfileSpec.parse("aws-like", merged).calibrated_from(calibrated.source + ", with --profile-set")
    return ProfileSpec.parse(args.profile, knobs)


def backend_for(args: argparse.Namespace) -> Backend:
    spec = BackendSpec.parse(args.endpoint_url, aws=args.aws, confirm_aws=args.confirm_aws, region=args.region)
    profile = profile_for(args)
    if profile.simulated and spec.kind is BackendKind.AWS:
        raise BadInput("--profile aws-like simulates AWS on the embedded server; on AWS it is real", "drop --profile")
    backend = Backend(spec, profile=profile)
    # Asked now, before any table: another server would refuse the profile only at the run's start, after the
    # command had begun (a sweep's first point, a run's empty summary), and its knobs would read as accepted.
    if profile.simulated and spec.kind is BackendKind.ENDPOINT and not backend.profiles_supported():
        given = " and --profile-set " + " ".join(args.profile_set) if args.profile_set else ""
        raise BadInput(
            f"--profile aws-like{given}: only the lab's own server simulates a profile, and {spec.endpoint_url} is "
            "not one (it does not answer /_lab/health), so no profile applies there",
            "leave out --profile and --profile-set to use this endpoint as it is, or point --endpoint-url at "
            "`python -m engine serve`",
        )
    return backend
