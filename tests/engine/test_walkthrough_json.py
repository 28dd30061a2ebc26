"""`walkthrough --json`: one JSON document per scene, the same results as the text in the same order, the calls
it made, the server profile (simulated says so), and a scene that stops says so and exits non-zero, as the text
mode does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.backends.backend import Backend
from engine.cli import main
from engine.run.walkthrough import Walk


def text_results(text: str) -> list[dict[str, Any]]:
    """The `=== title ===` blocks of a text walkthrough, with their JSON value when there is one."""
    results = []
    for block in text.split("\n\n"):
        head, _, body = block.strip("\n").partition("\n")
        if head.startswith("=== ") and head.endswith(" ==="):
            title = head[4:-4]
            results.append({"title": title, "value": json.loads(body)} if body else {"title": title})
    return results


def documents(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def at(backend: Backend) -> list[str]:
    assert backend.endpoint_url is not None
    return ["--endpoint-url", backend.endpoint_url]


def test_a_scene_as_json_has_the_texts_results_in_order_and_its_calls(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["walkthrough", "22", *at(backend)]) == 0
    text = capsys.readouterr().out
    assert main(["walkthrough", "22", "--json", *at(backend)]) == 0
    out, err = capsys.readouterr()
    [doc] = documents(out)  # nothing else on stdout
    assert err == ""
    assert (doc["pattern"], doc["seed"], doc["variant"], doc["state"], doc["error"]) == (
        "conditional-writes",
        22,
        None,
        "done",
        None,
    )
    assert doc["profile"]["simulated"] is False
    assert doc["results"] == text_results(text)  # same titles, same values, same order
    assert [r["title"] for r in doc["results"]][:2] == [
        "Create alice (first time)",
        "Create alice again (would overwrite)",
    ]
    shown = [line.split()[1] for line in text.splitlines() if line.startswith(">>> ")]
    made = [c for c in doc["calls"] if c["action"] != "set-up"]
    assert [c["op"] for c in made] == shown  # every call the text shows, in order
    assert {"client", "op", "outcome", "error", "key", "action"} <= set(made[0])
    refused = [c for c in made if c["error"]]
    assert refused and all(c["outcome"] == "fail" and c["error"] == "ConditionalCheckFailedException" for c in refused)


def test_a_heading_without_a_value_has_no_value_not_a_null(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["walkthrough", "25", "--json", *at(backend)]) == 0
    [doc] = documents(capsys.readouterr().out)
    assert {"title": "Order o1 (qty 2) succeeded"} in doc["results"]


def test_a_simulated_profile_and_a_variants_own_scene_say_so(
    embedded: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["walkthrough", "23", "--variant", "version-attribute", "--profile", "aws-like", "--json", *at(embedded)]
    assert main(argv) == 0
    [doc] = documents(capsys.readouterr().out)
    assert doc["variant"] == "version-attribute" and doc["state"] == "done"
    assert doc["profile"]["name"] == "aws-like" and doc["profile"]["simulated"] is True
    assert doc["profile"]["knobs"]["commit_ms"] > 0
    assert doc["results"][0] == {"title": "Before the first save the version is None", "value": None}


def test_a_scene_that_stops_gives_a_document_saying_so_and_exits_non_zero(
    backend: Backend, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.patterns.atomic_counters import AtomicCounters

    def scene(walk: Walk) -> None:
        walk.put({"PK": "POST#hello-world", "SK": "STATS", "views": 0})
        walk.result("Set up", "OK")
        walk.read("GetItem", Key={"PK": "POST#hello-world"})  # no SK: the server refuses it (ValidationException)
        walk.result("never reached")

    monkeypatch.setattr(AtomicCounters, "walkthrough", lambda self, walk: scene(walk))
    assert main(["walkthrough", "all", "--json", *at(backend)]) == 1  # as the text mode: the error's exit code
    out, err = capsys.readouterr()
    docs = documents(out)
    assert [d["seed"] for d in docs] == [22, 23, 24]  # the stopped scene ends the command, as in the text mode
    stopped = docs[-1]
    assert stopped["state"] == "stopped" and "GetItem failed: ValidationException" in stopped["error"]
    assert stopped["results"] == [{"title": "Set up", "value": "OK"}]
    assert stopped["calls"][-1]["op"] == "GetItem" and stopped["calls"][-1]["error"] == "ValidationException"
    [line] = err.strip().splitlines()
    assert line.startswith("error: the atomic-counters scene stopped: GetItem failed: ValidationException — ")


@pytest.mark.parametrize(
    "argv",
    [
        ["walkthrough", "all", "--variant", "version-attribute", "--json"],
        ["walkthrough", "23", "--variant", "no-such-variant", "--json"],
        ["walkthrough", "22", "--variant", "guarded", "--json"],  # a variant without a scene of its own
        ["walkthrough", "23", "--aws", "--profile", "aws-like", "--json"],
    ],
)
def test_a_bad_combination_is_refused_with_its_fix_and_no_json(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and " — " in line
