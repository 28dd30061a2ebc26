"""Version-attribute optimistic locking, as the second seed describes pydynox's VersionAttribute.

- The first save sets version 1 and checks the item does not exist (creating twice fails).
- Each save increments the version and checks the stored version equals the one we hold.
- Delete checks the version too.
- A user condition is ANDed with the version check.
One improvement over the seed's library: a failed save leaves the caller's item untouched (the seed warns
that pydynox's local version is wrong after a failure); `save` returns the saved item instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

VERSION = "version"


class Recorder(Protocol):
    """What the store calls through: engine.record.calls.Caller (and a run's ClientContext), or a walkthrough's printer."""

    def call(
        self, action: str, op: str, *, key: str, detail: Mapping[str, Any] | None = None, **params: Any
    ) -> dict[str, Any]: ...


def _and(user: str | None, version_check: str) -> str:
    return f"({user}) AND {version_check}" if user else version_check


class VersionedStore:
    """save/get/delete with a version attribute, every call recorded through a Caller.

    `key_text` names the item in the recorded calls (default "PK|SK"); `action` is the recorded intent.
    """

    def __init__(self, caller: Recorder, table_name: str) -> None:
        self.caller = caller
        self.table_name = table_name

    def get(
        self, key: Mapping[str, Any], *, consistent: bool = True, action: str = "get", key_text: str | None = None
    ) -> dict[str, Any] | None:
        response = self.caller.call(
            action,
            "GetItem",
            key=key_text or _key_text(key),
            TableName=self.table_name,
            Key=dict(key),
            ConsistentRead=consistent,
        )
        return response.get("Item")

    def save(
        self,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        action: str = "save",
        detail: Mapping[str, Any] | None = None,
        key_text: str | None = None,
    ) -> dict[str, Any]:
        """Create (no version yet) or update (version = held version); returns the item as saved."""
        held = item.get(VERSION)
        new = dict(item)
        attr_values = dict(values or {})
        if held is None:
            new[VERSION] = 1
            check = "attribute_not_exists(PK)"
        else:
            new[VERSION] = int(held) + 1
            check = f"{VERSION} = :held_version"
            attr_values[":held_version"] = int(held)
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": new,
            "ConditionExpression": _and(condition, check),
        }
        if names:
            params["ExpressionAttributeNames"] = dict(names)
        if attr_values:
            params["ExpressionAttributeValues"] = attr_values
        self.caller.call(
            action,
            "PutItem",
            key=key_text or _key_text(item),
            detail={"read_version": held, "version": new[VERSION], **(detail or {})},
            **params,
        )
        return new

    def delete(
        self,
        item: Mapping[str, Any],
        *,
        condition: str | None = None,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
    ) -> None:
        attr_values = {**(values or {}), ":held_version": int(item[VERSION])}
        params: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"PK": item["PK"], "SK": item["SK"]},
            "ConditionExpression": _and(condition, f"{VERSION} = :held_version"),
            "ExpressionAttributeValues": attr_values,
        }
        if names:
            params["ExpressionAttributeNames"] = dict(names)
        self.caller.call("delete", "DeleteItem", key=_key_text(item), detail={"read_version": item[VERSION]}, **params)


def _key_text(item: Mapping[str, Any]) -> str:
    return f"{item.get('PK', '')}|{item.get('SK', '')}"
