"""python -m dashboard [--expose] [--dev] [streamlit options...]

Runs `streamlit run dashboard/streamlit_app.py` bound to 127.0.0.1 with the project's settings
(.streamlit/config.toml: no usage stats, error details off, the projector theme), wherever it is started
from. Further arguments go to `streamlit run` unchanged, e.g. `--server.port 8600`. `--expose` binds
0.0.0.0 (with a warning: anyone on the network can then start runs); `--dev` shows full error details.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from dashboard.state.env_settings import check_settings
from engine.errors import LabError

HERE = Path(__file__).resolve().parent
APP = HERE / "streamlit_app.py"
CONFIG = HERE.parent / ".streamlit" / "config.toml"


def _flatten(table: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _flag_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def streamlit_args(argv: Sequence[str]) -> list[str]:
    """The `streamlit run` command line for our arguments (exposed for tests)."""
    args = list(argv)
    expose = "--expose" in args
    dev = "--dev" in args
    args = [a for a in args if a not in ("--expose", "--dev")]
    given = {a.split("=", 1)[0] for a in args if a.startswith("--")}
    settings: dict[str, object] = {}
    if CONFIG.is_file():  # the project's config, wherever we are started from (streamlit reads ./.streamlit only)
        with open(CONFIG, "rb") as f:
            settings = _flatten(tomllib.load(f))
    settings["server.address"] = "0.0.0.0" if expose else settings.get("server.address", "127.0.0.1")
    if dev:
        settings["client.showErrorDetails"] = "full"
        settings["client.toolbarMode"] = "developer"
    flags: list[str] = []
    for name, value in settings.items():
        if f"--{name}" in given or isinstance(value, (list, dict)):
            continue
        flags.append(f"--{name}={_flag_value(value)}")
    return ["streamlit", "run", str(APP), *flags, *args]


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    try:
        check_settings()
    except LabError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if "--expose" in argv:
        print(
            "warning: --expose binds 0.0.0.0: anyone who can reach this machine can start runs against your backend",
            file=sys.stderr,
        )
    from streamlit.web import cli as stcli

    sys.argv = streamlit_args(argv)
    return stcli.main()


if __name__ == "__main__":
    sys.exit(main())
