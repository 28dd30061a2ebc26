"""A bad workload file is refused before anything runs, one message per problem, each naming its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main
from engine.workloads.schema.limits import MAX_CLIENTS, MAX_RATE
from engine.workloads.schema.parsing import WorkloadInvalid, parse

GOOD = """
name: t
operations:
  - {name: a, type: update, weight: 1}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(WorkloadInvalid) as e:
        parse(text)
    return e.value.lines()


def test_a_good_file_parses_with_its_defaults() -> None:
    w = parse(GOOD)
    assert w.load.mode == "closed" and w.load.clients == 8
    assert w.declared_invariants() == ("no-lost-change",)


def test_an_unknown_operation_is_named_with_the_known_ones() -> None:
    [line] = problems("name: t\noperations:\n  - {name: a, type: upsert, weight: 1}\n")
    assert line.startswith("operations[0].type: 'upsert' is not an operation type")
    assert "transact_write" in line


def test_an_unknown_field_is_named_by_its_path() -> None:
    [line] = problems("name: t\noperations:\n  - {name: a, type: get, weight: 1, consistant: true}\n")
    assert line.startswith("operations[0].consistant: unknown field")


def test_weights_summing_to_zero_are_refused() -> None:
    [line] = problems(
        "name: t\noperations:\n  - {name: a, type: get, weight: 0}\n  - {name: b, type: get, weight: 0}\n"
    )
    assert line.startswith("operations: the operations' weights sum to 0")


def test_more_than_100_items_per_transaction_are_refused() -> None:
    [line] = problems(
        "name: t\ntable: {items: 500}\noperations:\n  - {name: a, type: transact_write, weight: 1, items: 101}\n"
    )
    assert line == "operations[0].items: 101 is out of range: use a value at most 100"


def test_an_item_over_400_kb_is_refused() -> None:
    [line] = problems(f"name: t\ntable: {{item_size: 409601}}\n{GOOD.split(chr(10), 2)[2]}")
    assert line == "table.item_size: 409601 is out of range: use a value at most 409600"


def test_rates_and_clients_past_the_caps_are_refused_together() -> None:
    lines = problems(
        f"name: t\nload: {{mode: open, clients: {MAX_CLIENTS + 1}, rate: {MAX_RATE * 2:g}}}\n"
        "operations:\n  - {name: a, type: get, weight: 1}\n"
    )
    assert [line.split(":")[0] for line in lines] == ["load.clients", "load.rate"]


def test_a_yaml_syntax_error_names_its_line_and_column() -> None:
    [line] = problems("name: t\noperations:\n  - {name: a, type: get, weight: 1\n")
    assert line.startswith("YAML syntax error at line 4, column 1")


def test_an_invariant_the_mix_cannot_keep_is_refused() -> None:
    [line] = problems(GOOD + "  - {name: b, type: put, weight: 1, mode: unconditional}\ninvariants: [no-lost-change]\n")
    assert line.startswith("invariants: invariant 'no-lost-change' does not apply")


def test_workload_check_prints_every_problem_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: t\ncolour: red\noperations:\n  - {name: a, type: nope, weight: 1}\n")
    assert main(["workload", "check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{path}: operations[0].type: 'nope' is not an operation type: use one of get, put, update, delete, "
        "transact_write, transact_get, batch_write, query",
        f"{path}: colour: unknown field: remove it, or check its spelling against docs/workloads.md",
    ]


def test_workload_run_refuses_a_bad_file_before_any_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: t\noperations:\n  - {name: a, type: get, weight: 0}\n")
    assert main(["workload", "run", str(path), "--endpoint-url", "http://127.0.0.1:9"]) == 2
    assert "operations: the operations' weights sum to 0" in capsys.readouterr().err


def test_a_command_line_override_past_the_cap_is_refused_like_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(GOOD)
    assert main(["workload", "run", str(path), "--clients", "100000", "--endpoint-url", "http://127.0.0.1:9"]) == 2
    assert "load.clients: 100000 is out of range" in capsys.readouterr().err


def test_yaml_aliases_are_refused_before_they_expand() -> None:
    laughs = 'name: t\na: &a ["x", "x", "x"]\nb: &b [*a, *a, *a]\noperations:\n  - {name: a, type: get, weight: 1}\n'
    [line] = problems(laughs)
    assert line == "YAML aliases (*name) are not allowed: write the values out"


def test_a_file_past_64_kb_is_refused_unread() -> None:
    [line] = problems(GOOD + "#" * 70_000)
    assert line.startswith("the file is 70,") and "at most 65,536" in line


def test_a_transaction_of_items_and_checks_past_100_is_refused() -> None:
    [line] = problems(
        "name: t\ntable: {items: 200}\noperations:\n  - {name: a, type: transact_write, weight: 1, items: 60, checks: 41}\n"
    )
    assert line == "operations[0].checks: items + checks is 101: a transaction takes at most 100"


def test_a_file_attribute_may_not_take_a_name_the_lab_keeps() -> None:
    [line] = problems(f"name: t\ntable: {{attributes: {{version: 3}}}}\n{GOOD.split(chr(10), 2)[2]}")
    assert line == "table.attributes: 'version' is an attribute the lab keeps itself: give it another name"


def test_a_condition_value_may_not_take_a_name_the_lab_defines() -> None:
    op = "{name: a, type: update, weight: 1, mode: set, guard: condition, condition: 'x = :one', values: {':one': 2}}"
    [line] = problems(f"name: t\noperations:\n  - {op}\n")
    assert line == "operations[0].values: ':one' is a value the lab defines itself: give it another name"
