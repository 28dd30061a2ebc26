"""DDBLAB_PLAIN_MOTO is a yes/no switch: 1/true/yes/on turn the fast path off, 0/false/no/off/empty leave it on,
and anything else is refused when the server starts, in one line naming the variable and the values it takes."""

from __future__ import annotations

import pytest

from engine.errors import BadInput
from engine.server.control import PLAIN_MOTO_ENV
from engine.server.fast import handler as fastpath
from engine.server.host import serve
from engine.server.host.process import EmbeddedServer


def fast_path_on(monkeypatch: pytest.MonkeyPatch, value: str) -> bool:
    """Whether the app the server builds with this DDBLAB_PLAIN_MOTO answers through the fast path."""
    monkeypatch.setenv(PLAIN_MOTO_ENV, value)
    app = serve.build_app()
    try:
        return isinstance(app._moto, fastpath.DirectDynamo)
    finally:
        app.close()


@pytest.mark.skipif(not fastpath.verified(), reason="the fast path is off with this moto release")
@pytest.mark.parametrize("value", ["0", "false", "", "No", " off "])
def test_a_no_leaves_the_fast_path_on(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    # "0" and "false" used to count as set, so asking for the fast path turned it off.
    assert fast_path_on(monkeypatch, value)


@pytest.mark.parametrize("value", ["1", "true", "YES", "on"])
def test_a_yes_turns_the_fast_path_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    assert not fast_path_on(monkeypatch, value)


@pytest.mark.parametrize("value", ["2", "maybe", "fasle"])
def test_any_other_value_is_refused_at_server_start(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(PLAIN_MOTO_ENV, value)
    server = EmbeddedServer()
    with pytest.raises(BadInput) as refused:
        server.start()
    message = str(refused.value)
    assert "\n" not in message
    assert f"{PLAIN_MOTO_ENV}={value!r}" in message
    assert all(word in message for word in ("1, true, yes or on", "0, false, no, off or empty"))
    assert not server.alive()  # refused before a child was started
    with pytest.raises(BadInput, match=PLAIN_MOTO_ENV):
        serve.build_app()  # `python -m engine serve` builds the app in its own process: refused there too
