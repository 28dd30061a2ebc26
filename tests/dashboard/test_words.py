"""Counts in words: one of a thing is singular, on every screen."""

from __future__ import annotations

from dashboard.text.words import plural


def test_a_count_of_one_is_singular_and_every_other_plural() -> None:
    assert plural(1, "lease") == "1 lease"
    assert plural(0, "takeover") == "0 takeovers"
    assert plural(1_000, "call") == "1,000 calls"
    assert plural(1, "retry", "retries") == "1 retry" and plural(2, "retry", "retries") == "2 retries"


def test_no_count_of_one_is_shown_with_a_plural_noun_in_the_dashboards_text() -> None:
    """Every count + noun in the views and panels goes through `plural`: none is written as "{n} nouns"."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "dashboard"
    pattern = re.compile(
        r"\{[^{}]*(?:len\(|total|count|facts|lost|refused|stale|extra|retries)[^{}]*\}\*{0,2} (?!vs\b)[a-z]+s\b"  # "vs" is no noun
    )
    found = [
        f"{path.relative_to(root)}: {m.group(0)}"
        for path in [*root.glob("views/*.py"), *root.glob("widgets/*.py"), *root.glob("figures/*.py")]
        for m in pattern.finditer(path.read_text())
    ]
    assert not found, found
