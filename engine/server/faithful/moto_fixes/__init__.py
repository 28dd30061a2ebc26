"""moto's behaviour corrected where DynamoDB's differs, each by a patch installed once per process: transactions
undone item by item, the item-size limit, number arithmetic, UPDATED_NEW/OLD answers, an UpdateItem applied whole
or not at all, projections through scalars, conditions read with DynamoDB's tokens. `install` puts them all in place (idempotent)."""

from __future__ import annotations

from engine.server.faithful.moto_fixes import (
    condition_tokens,
    item_size,
    number_math,
    projections,
    undo,
    updated_values,
    whole_update,
)


def install() -> None:
    """Install every patch (each skips itself when already in place)."""
    undo.install()  # transactions restore the items they touched, not whole-table copies
    item_size.install()  # moto's item-size limit set to DynamoDB's
    number_math.install()  # sums of numbers written with an exponent
    updated_values.install()  # UpdateItem's UPDATED_NEW/UPDATED_OLD: the named paths, not what changed
    whole_update.install()  # an UpdateItem one of whose actions is refused writes none of them
    projections.install()  # a projected path through a number or a boolean matches nothing (moto crashed)
    condition_tokens.install()  # conditions and filters read with DynamoDB's tokens: no `n = 1`, `l[10]` taken
