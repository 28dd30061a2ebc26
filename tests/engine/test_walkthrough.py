"""Walkthroughs on a shared server: each replay gets a table of its own, however many start at once."""

from __future__ import annotations

import io
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engine.backends.backend import Backend, BackendSpec
from engine.backends.tables import PREFIX
from engine.errors import LabError
from engine.run.walkthrough import Walk, run_walkthrough
from engine.server.profile import ProfileSpec

PLAIN = f"{PREFIX}p23-optimistic-locking"


def _tables_in(text: str) -> set[str]:
    return set(re.findall(r"^>>> \w+ (\S+)$", text, flags=re.MULTILINE))


class _ClaimTogether:
    """The test's backend: each walkthrough's CreateTable leaves only once all n walkthroughs have listed the
    tables, so all of them see the seed's name free and claim it at once (n dashboard sessions pressing the button
    in the same instant): the collision happens in every run, not only when the threads happen to meet."""

    def __init__(self, backend: Backend, n: int) -> None:
        self._backend = backend
        self._listed = threading.Barrier(n, timeout=30)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)

    def client(self, **kwargs: Any) -> Any:
        client = self._backend.client(**kwargs)
        claimed = threading.Event()  # one client per walkthrough: only its first claim waits

        def claim_together(**_: Any) -> None:
            if not claimed.is_set():
                claimed.set()
                self._listed.wait()

        client.meta.events.register("before-call.dynamodb.CreateTable", claim_together)
        return client


def _walk_together(backend: Backend, n: int) -> list[str]:
    """n walkthroughs of one pattern whose claims of a table name collide (see _ClaimTogether)."""
    together: Any = _ClaimTogether(backend, n)

    def walk(_: int) -> str:
        # The tables are kept until every replay has ended, so no replay can take a name another has freed.
        return run_walkthrough(23, together, keep_table=True)[0]

    with ThreadPoolExecutor(n) as pool:
        texts = list(pool.map(walk, range(n)))
    client = backend.client()
    for name in {t for text in texts for t in _tables_in(text)}:
        client.delete_table(TableName=name)
    return texts


def test_walkthroughs_started_together_each_get_their_own_table_and_tell_the_whole_scene(
    backend: Backend, client
) -> None:
    alone, _ = run_walkthrough(23, backend)
    assert _tables_in(alone) == {PLAIN}

    texts = _walk_together(backend, 2)
    tables = [_tables_in(text) for text in texts]
    assert all(len(t) == 1 for t in tables), tables  # each replay stayed on one table ...
    assert sorted(t for names in tables for t in names) == [PLAIN, f"{PLAIN}-2"]  # ... the loser of the claim the next
    for text, (name,) in zip(texts, tables):
        assert text.replace(name, PLAIN) == alone  # the whole scene, as if it had run alone
    leftover = [t for t in client.list_tables()["TableNames"] if t.startswith(f"{PREFIX}p23-")]
    assert leftover == []


def test_a_walkthrough_at_a_lab_endpoint_plays_under_the_profile_it_was_given(backend: Backend) -> None:
    # `walkthrough --profile aws-like --endpoint-url <engine serve>` said SIMULATED while the server played its own
    # default: the table now names the profile, as a run's does.
    if not backend.embedded:
        pytest.skip("needs the lab's server")
    assert backend.endpoint_url is not None
    at = Backend(BackendSpec.parse(backend.endpoint_url), profile=ProfileSpec.parse("aws-like", {"commit_ms": 20}))
    with at:
        text, _ = run_walkthrough(23, at, keep_table=True)
        [name] = _tables_in(text)
        client = at.client()
        arn = client.describe_table(TableName=name)["Table"]["TableArn"]
        tags = {t["Key"]: t["Value"] for t in client.list_tags_of_resource(ResourceArn=arn)["Tags"]}
        client.delete_table(TableName=name)
    assert tags["ddblab:profile"].startswith("aws-like commit_ms=20")


@pytest.mark.parametrize("pattern", [22, 23, 24, 25, 26, 27, 28, 29])
def test_every_walkthrough_plays_its_scene_where_every_eventually_consistent_read_is_stale(
    backend: Backend, pattern: int
) -> None:
    # The aws-like profile at its extreme: every read without ConsistentRead inside a second of a write returns the
    # item's previous state. A walkthrough reads to show what the table holds, so it reads consistently; the
    # optimistic-locking scene broke here once in four plays (its item was still absent to a plain GetItem).
    if not backend.embedded:
        pytest.skip("needs the lab's server")
    assert backend.endpoint_url is not None
    stale = ProfileSpec.parse("aws-like", {"stale_share": 1.0, "stale_ms": 1000.0})
    with Backend(BackendSpec.parse(backend.endpoint_url), profile=stale) as at:
        text, history = run_walkthrough(pattern, at)
    assert "Traceback" not in text and len(history) > 0


def test_a_scene_whose_read_fails_stops_with_the_error_and_keeps_what_it_printed(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A read whose answer a scene prints failed (throttled, say): the scene indexed the error as if it were the
    # answer and died of a TypeError. Now it stops with one message naming the call and its error.
    from engine.patterns.atomic_counters import AtomicCounters

    def scene(walk: Walk) -> None:
        walk.put({"PK": "POST#hello-world", "SK": "STATS", "views": 0})
        walk.result("Set up", "OK")
        walk.read("GetItem", Key={"PK": "POST#hello-world"})  # no SK: the server refuses it (ValidationException)
        walk.result("never printed")

    monkeypatch.setattr(AtomicCounters, "walkthrough", lambda self, walk: scene(walk))
    printed = io.StringIO()
    with pytest.raises(LabError) as stopped:
        run_walkthrough(24, backend, printed)
    assert "the atomic-counters scene stopped: GetItem failed: ValidationException" in str(stopped.value)
    text = printed.getvalue()
    assert '=== Set up ===\n"OK"' in text and ">>> GetItem" in text and "never printed" not in text
    assert "... the scene stopped: GetItem failed: ValidationException" in text
    leftover = [t for t in backend.client().list_tables()["TableNames"] if t.startswith(f"{PREFIX}p24-")]
    assert leftover == []  # its table is dropped as after a scene that ended
