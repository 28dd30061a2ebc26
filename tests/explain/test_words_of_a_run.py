"""A run's words, as a kind, over every shipped demo and a fresh run of every variant: a client has one name and
one number everywhere (the call's own `client`: "client 3" in a story, "client-3" in an item it writes, never
"worker-4"), and a count of one is singular ("1 write landed", never "1 writes")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.explain import explain
from engine.patterns import all_patterns
from engine.record.history import History, read_jsonl
from engine.run.demos import demo_files
from engine.run.runner import RunConfig, run_pattern
from engine.run.summary import summary
from engine.words import agree, plural

# Any other name a client could be given: a worker, a thread, a lane, or the "w3-" prefix of an owner token.
OTHER_NAME = re.compile(r"\b(?:worker|thread|lane)[- ]?\d+\b|\bw\d+-\d+\b", re.IGNORECASE)
# "client 3", "client-3", "clients 1, 2 and 4": the numbers named.
NAMED = re.compile(r"\bclients?[- ](\d+(?:(?:, | and )\d+)*)")
# The user a client writes as its own, numbered as the client is: USER#3, user3, EMAIL#u3-1@x.com.
OWN_USER = re.compile(r"\bUSER#(\d+)\b|\buser(\d+)\b|#u(\d+)-\d+@")
# A request named by the client that first sent it (req-3-1: client 3's first); another may deliver it again.
REQUEST_OF = re.compile(r"\breq-(\d+)-\d+\b")
# A count of one and the word after it ("1 write"), not inside a number ("GSI1 lists", "0.1 s", "2,001 calls").
ONE = re.compile(r"(?<![\w.,])1 (?!of\b)([a-z]+)\b")  # "1 of 4 calls": the noun counts the 4
NOT_NOUNS = {"is", "was", "has", "ms", "s", "process", "status"}  # "after 1 ms", "1 process": singular as it is


def named(text: str) -> set[int]:
    return {int(n) for m in NAMED.finditer(text) for n in re.findall(r"\d+", m.group(1))}


@dataclass(frozen=True)
class Recorded:
    """One run's calls, its summary (verdicts) and the explainer's stories."""

    name: str
    history: History
    summary: Mapping[str, Any]
    stories: tuple[tuple[str, frozenset[int]], ...]  # each witness's story, and the clients of its calls

    @property
    def verdict_texts(self) -> list[str]:
        return [str(i.get(k)) for i in self.summary["invariants"] for k in ("expected", "observed", "explanation")]


def recorded(name: str, history: History, run_summary: Mapping[str, Any]) -> Recorded:
    witnesses = explain(run_summary["pattern"], history, run_summary["invariants"])
    stories = tuple((w.story, frozenset(s.call.client for s in w.steps)) for w in witnesses.values() if w is not None)
    return Recorded(name, history, run_summary, stories)


def shipped() -> Iterator[Recorded]:
    for path in demo_files():
        history, meta = read_jsonl(path)
        yield recorded(path.stem, history, meta["summary"])


@pytest.fixture(scope="module")
def fresh(backend: Backend) -> list[Recorded]:
    """Every variant, 2 clients of 1 op each: two numbers to mix up, and counts of one in most verdicts."""
    out = []
    for name, cls in all_patterns().items():
        for variant in cls.variants:
            run = run_pattern(RunConfig(pattern=name, variant=variant, threads=2, ops_per_client=1, seed=7), backend)
            out.append(recorded(f"{name}--{variant}", run.history, summary(run)))
    return out


def one_name_throughout(run: Recorded) -> None:
    threads = int(run.summary["threads"])
    for seq, call in enumerate(run.history.calls()):
        request = call.request or ""
        # What a call sends is its own: a lock's owner, a sign-up's name, a claim's owner token, its user.
        assert named(request) <= {call.client}, (run.name, seq, call.client, request)
        own = {int(next(g for g in m.groups() if g)) for m in OWN_USER.finditer(request)}
        assert own <= {call.client}, (run.name, seq, call.client, request)
        detail = json.dumps(call.detail or {})  # may name another client: the item a refusal returned
        for text in (request, detail):
            assert not OTHER_NAME.search(text), (run.name, seq, text)
            assert named(text) <= set(range(threads)), (run.name, seq, text)
            assert {int(n) for n in REQUEST_OF.findall(text)} <= set(range(threads)), (run.name, seq, text)
    for text in run.verdict_texts:
        assert not OTHER_NAME.search(text), (run.name, text)
        assert named(text) <= set(range(threads)), (run.name, text)
    for story, clients in run.stories:
        assert not OTHER_NAME.search(story), (run.name, story)
        assert named(story) and named(story) <= clients, (run.name, story, sorted(clients))


def singular_counts(run: Recorded) -> list[str]:
    """The counts of one in the run's verdicts and stories, each with its word; a plural one fails."""
    found = []
    for text in [*run.verdict_texts, *(story for story, _ in run.stories)]:
        for m in ONE.finditer(text):
            word = m.group(1)
            assert not word.endswith("s") or word in NOT_NOUNS, (run.name, m.group(0), text)
            found.append(m.group(0))
    return found


@pytest.mark.parametrize("run", list(shipped()), ids=lambda r: r.name)
def test_a_shipped_demo_names_each_client_as_its_calls_do(run: Recorded) -> None:
    one_name_throughout(run)
    singular_counts(run)


def test_a_fresh_run_of_every_variant_names_each_client_as_its_calls_do(fresh: list[Recorded]) -> None:
    assert len(fresh) == sum(len(cls.variants) for cls in all_patterns().values())
    for run in fresh:
        one_name_throughout(run)


def test_a_fresh_run_of_every_variant_counts_one_of_a_thing_in_the_singular(fresh: list[Recorded]) -> None:
    counted = [one for run in fresh for one in singular_counts(run)]
    # Not vacuous: two clients of one op each leave counts of one in the lock's, the orders' and the sign-ups'
    # verdicts, whichever way the race went.
    assert len(counted) >= 10, counted


def test_the_words_for_a_count_and_a_client() -> None:
    assert plural(1, "lease") == "1 lease" and plural(2, "lease") == "2 leases" and plural(0, "lease") == "0 leases"
    assert plural(1, "entry", "entries") == "1 entry" and plural(1_000, "entry", "entries") == "1,000 entries"
    assert agree(1, "was", "were") == "was" and agree(3, "was", "were") == "were"


def test_the_locks_verdicts_say_one_of_a_thing_in_the_singular() -> None:
    """The distributed lock's wording at a count of one, which a run reaches only by chance: one overlap, one
    lease, one release refused."""
    from engine.patterns.distributed_locking.invariants import _holder_story

    assert _holder_story(1, 2, 0, locked=True).startswith("once a worker started while another was still inside")
    held = _holder_story(0, 1, 1, locked=True)
    assert held.startswith("the one lease (acquire") and "; 1 release by a worker whose lease had expired was " in held
    assert _holder_story(0, 1, 0, locked=False) == "the one critical section had none to overlap"
    assert _holder_story(0, 2, 0, locked=False) == "the 2 critical sections happened not to overlap"
    assert "2 releases by workers whose lease had expired were refused" in _holder_story(0, 3, 2, locked=True)


def test_no_docs_quote_a_client_by_another_name() -> None:
    root = Path(__file__).resolve().parents[2]
    for doc in [root / "README.md", *(root / "docs").glob("*.md")]:
        assert not OTHER_NAME.search(doc.read_text()), doc.name
