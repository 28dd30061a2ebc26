"""What the lab prints masks account ids where an account id can be, and leaves every other 12-digit number (a
count, an amount, a port, a request id) as it is, so an error about a number still names that number."""

from __future__ import annotations

import re

import pytest

from engine.cli import main
from engine.errors import LabError, redact

ACCOUNT = "123456789012"


@pytest.mark.parametrize(
    "message",
    [
        "account 123456789012 is not subscribed to DynamoDB",
        "AccountId: '123456789012'",
        '{"accountId": "123456789012"}',
        "aws_account_id=123456789012",
        "owner ID: 123456789012",
        "Principal 123456789012 may not call this",
        "role iam::123456789012:role/lab was cut short",  # an ARN's account field without its "arn:"
        "User: arn:aws:iam::123456789012:user/bob is not authorized to perform: dynamodb:PutItem",
    ],
)
def test_a_message_that_carries_an_account_id_keeps_it_masked(message: str) -> None:
    shown = str(LabError(message, f"ask the owner of {message}"))
    assert ACCOUNT not in shown
    assert "********9012" in shown or "arn:aws:…" in shown


def test_every_account_in_a_list_of_accounts_is_masked() -> None:
    shown = redact("accounts 111122223333, 444455556666 and 777788889999 may not read it")
    assert not re.search(r"\d{12}", shown)
    assert shown == "accounts ********3333, ********6666 and ********9999 may not read it"


@pytest.mark.parametrize(
    "message",
    [
        "the counter read 123456789012 but 123456789013 were added",
        "RequestId 123456789012 was answered twice",
        "balance 100000000000 went below zero",
        "12 ms at 2026-12-02 18:10:05 (run 123456789012)",
    ],
)
def test_a_twelve_digit_number_that_is_not_an_account_is_shown_as_it_is(message: str) -> None:
    assert str(LabError(message)) == message


def test_a_twelve_digit_port_is_named_in_its_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    # The user typed the number; a refusal that masks it ("port ********9012") hides what was wrong.
    assert main(["serve", "--port", ACCOUNT]) == 2
    err = capsys.readouterr().err
    assert f"port {ACCOUNT} is out of range" in err and "****" not in err
