"""DDBLAB_ENDPOINT_URL, the dashboard's default backend (docker-compose: DynamoDB Local), checked as `--endpoint-url`
is: `python -m dashboard` refuses a bad one at launch, and the app itself (`streamlit run` on the file) shows the
same refusal instead of starting on the embedded server unannounced."""

from __future__ import annotations

from engine.backends.backend import BackendSpec, redact_url
from engine.errors import AwsNotConfirmed, BadInput, LabError

ENDPOINT_ENV = "DDBLAB_ENDPOINT_URL"


def check_endpoint_setting(raw: str | None) -> BackendSpec | None:
    """The backend DDBLAB_ENDPOINT_URL names (None when unset or empty); BadInput, naming the variable, its value
    and the fix, when it is malformed or an AWS endpoint (AWS is chosen in the sidebar, where it is confirmed)."""
    if raw is None or not raw.strip():
        return None
    try:
        return BackendSpec.parse(raw)
    except LabError as e:
        fix = f"unset it for the embedded server, or give e.g. {ENDPOINT_ENV}=http://127.0.0.1:8000"
        if isinstance(e, AwsNotConfirmed):
            fix = "unset it and choose AWS in the sidebar, where it is confirmed"
        problem = e.problem.replace("--endpoint-url", "the endpoint URL")
        shown = redact_url(raw.strip())[:200]  # never a password the URL may carry
        # The value is named once: the URL checks quote it already, the AWS refusal does not.
        named = ENDPOINT_ENV if repr(shown) in problem else f"{ENDPOINT_ENV}={shown!r}"
        raise BadInput(f"{named}: {problem}", fix) from None
