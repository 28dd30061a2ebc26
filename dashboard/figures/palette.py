"""The outcome labels every chart shares, their fixed colours and legend order, and the safe/racy label."""

from __future__ import annotations

from collections.abc import Iterable

OK = "ok"
OK_READ = "ok (read)"
INFO = "info (unknown)"
CCF = "ConditionalCheckFailed"
TX_CANCELED = "TransactionCanceled"
TX_CONFLICT = "TransactionConflict"

# One fixed colour per outcome and error code, everywhere (timeline, rates, logs). Chosen to stay apart on a
# washed-out projector: no two are neighbours in hue and lightness.
COLOURS: dict[str, str] = {
    OK: "#2E7D32",  # green: applied
    OK_READ: "#A5D6A7",  # pale green: a read that returned
    CCF: "#EF6C00",  # orange: a condition refused the write
    TX_CANCELED: "#7B1FA2",  # purple: a transaction was cancelled
    TX_CONFLICT: "#D81B60",  # magenta: transactions collided
    INFO: "#1565C0",  # blue: unknown outcome (response lost)
}
_OTHER_COLOURS = ("#C62828", "#6D4C41", "#00838F", "#9E9D24", "#455A64", "#AD1457", "#283593")
LABEL_ORDER = (OK, OK_READ, CCF, TX_CANCELED, TX_CONFLICT, INFO)
FLAG_COLOUR = "#B71C1C"
SAFE_COLOUR = "#2E7D32"
RACY_COLOUR = "#C62828"


def short_code(code: str) -> str:
    """ConditionalCheckFailedException -> ConditionalCheckFailed (how people say it out loud)."""
    return code.removesuffix("Exception") if code else code


def colour(label: str) -> str:
    if label in COLOURS:
        return COLOURS[label]
    return _OTHER_COLOURS[sum(map(ord, label)) % len(_OTHER_COLOURS)]


def ordered(labels: Iterable[str]) -> list[str]:
    """Labels in the fixed legend order: the known ones first, then the rest alphabetically."""
    present = set(labels)
    return [x for x in LABEL_ORDER if x in present] + sorted(present - set(LABEL_ORDER))


def variant_title(variant: str, kind: str) -> str:
    """ "add (safe)", "read-then-put (racy)"; a variant named for its kind (a workload's "as-written") alone."""
    return variant if variant.replace("-", " ") == kind else f"{variant} ({kind})"


def safety(safe: bool | None) -> str:
    """How a variant is labelled everywhere: "safe" or "racy" ("?" for a variant this version does not know)."""
    return "?" if safe is None else "safe" if safe else "racy"
