"""Read a walkthrough's printed ``=== title ===`` blocks back as values.

Servers order an item's attributes as they like (moto as written; DynamoDB Local and AWS as the seed shows),
and the walkthrough prints what the server returned, so tests compare the value rather than its text.
"""

from __future__ import annotations

import json
from typing import Any


def printed_result(text: str, title: str) -> Any:
    heading = f"=== {title} ===\n"
    assert heading in text, f"no block titled {title!r} in the walkthrough"
    value, _ = json.JSONDecoder().raw_decode(text.split(heading, 1)[1])
    return value
