"""Run-scoped tables: a fixed name prefix and a tag, so the lab only ever deletes what it created.

Every pattern uses one single-table layout: string keys PK and SK, and optionally the index GSI1
(GSI1PK/GSI1SK, all attributes projected) and TTL on `expiresAt`.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from engine.errors import BadInput, ForeignTable, LabError, TableNameTaken

PREFIX = "ddblab-"
OWNER_TAG = "ddblab:created-by"
OWNER_VALUE = "ddb-concurrency-lab"
GSI_LAG_TAG = "ddblab:gsi-lag-ms"  # read by the embedded server (engine/server/simulated/gsi_lag.py)
PROFILE_TAG = "ddblab:profile"  # read by the embedded server (engine/server/profile.py)
_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


@dataclass(frozen=True, slots=True)
class TableSpec:
    gsi: bool = False
    ttl_attribute: str | None = None
    gsi_lag_ms: int = 0  # simulated on the embedded server only
    profile_tag: str = ""  # the embedded server's profile for this table (engine/server/profile.py), if any


@dataclass(frozen=True, slots=True)
class Table:
    """A table the run uses; `created` says whether the lab made it (and so may delete it)."""

    name: str
    client: Any
    created: bool
    spec: TableSpec

    def scan_all(self, consistent: bool = True) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.name, "ConsistentRead": consistent}
        while True:
            page = self.client.scan(**kwargs)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def get(self, pk: str, sk: str, consistent: bool = True) -> dict[str, Any] | None:
        return self.client.get_item(TableName=self.name, Key={"PK": pk, "SK": sk}, ConsistentRead=consistent).get(
            "Item"
        )

    def put(self, item: dict[str, Any]) -> None:
        self.client.put_item(TableName=self.name, Item=item)


def run_table_name(pattern: str) -> str:
    return f"{PREFIX}{pattern}-{secrets.token_hex(3)}"


def validate_table_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # fullmatch: `$` would let a final newline in
        raise BadInput(
            f"table name {str(name)[:80]!r} is not a valid DynamoDB table name",
            "use 3-255 characters from letters, digits, '_', '-' and '.'",
        )
    return name


def open_table(
    client: Any, pattern: str, spec: TableSpec, *, name: str | None = None, allow_foreign: bool = False
) -> Table:
    """Create the run's table (or adopt a named one) and wait until it is ACTIVE."""
    name = validate_table_name(name) if name else run_table_name(pattern)
    existing = _describe(client, name)
    if existing is not None:
        if not _is_ours(client, existing) and not allow_foreign:
            raise ForeignTable(
                f"table {name!r} already exists and was not created by the lab",
                "pick another --table name, or pass --allow-foreign-table to write to it "
                "(the lab never deletes a table it did not create)",
            )
        _check_layout(existing, spec, name)
        if client.scan(TableName=name, Limit=1, ConsistentRead=True).get("Items"):
            # Invariants count what is in the table: old items would make a correct run look broken.
            raise BadInput(
                f"table {name!r} already holds items (an earlier run's, or someone's data)",
                "pick a new --table name, or leave out --table for a fresh ddblab-* table",
            )
        return Table(name, client, created=False, spec=spec)
    return create_table(client, name, spec)


def create_table(client: Any, name: str, spec: TableSpec) -> Table:
    """Create a new table and wait until it is ACTIVE. The CreateTable call is the claim on the name: when
    another client got there first, TableNameTaken is raised and that table is left alone."""
    table = Table(name, client, created=True, spec=spec)
    try:
        _create(client, name, spec)
    except TableNameTaken:
        raise  # not ours: never drop it
    except BaseException:
        try:
            drop_table(table)  # created but never became usable: do not leave it behind
        except Exception:
            pass
        raise
    return table


def drop_table(table: Table) -> bool:
    """Delete the table only if the lab created it in this run. Returns whether it deleted."""
    if not table.created:
        return False
    try:
        table.client.delete_table(TableName=table.name)
    except ClientError as e:
        if e.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
    return True


def _describe(client: Any, name: str) -> dict[str, Any] | None:
    try:
        return client.describe_table(TableName=name)["Table"]
    except ClientError as e:
        if e.response["Error"]["Code"] == "ResourceNotFoundException":
            return None
        raise


def _is_ours(client: Any, description: dict[str, Any]) -> bool:
    try:
        tags = client.list_tags_of_resource(ResourceArn=description["TableArn"]).get("Tags", [])
    except ClientError:
        return False
    return any(t["Key"] == OWNER_TAG and t["Value"] == OWNER_VALUE for t in tags)


def _check_layout(description: dict[str, Any], spec: TableSpec, name: str) -> None:
    keys = {k["AttributeName"]: k["KeyType"] for k in description.get("KeySchema", [])}
    if keys != {"PK": "HASH", "SK": "RANGE"}:
        raise BadInput(
            f"table {name!r} has keys {keys}, the lab needs PK (hash) and SK (range), both strings",
            "let the lab create its own table (leave out --table)",
        )
    if spec.gsi and not any(i["IndexName"] == "GSI1" for i in description.get("GlobalSecondaryIndexes", [])):
        raise BadInput(
            f"table {name!r} has no index GSI1 (GSI1PK/GSI1SK), which this pattern queries",
            "let the lab create its own table (leave out --table)",
        )


def _create(client: Any, name: str, spec: TableSpec) -> None:
    attributes = [{"AttributeName": "PK", "AttributeType": "S"}, {"AttributeName": "SK", "AttributeType": "S"}]
    kwargs: dict[str, Any] = {
        "TableName": name,
        "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"}, {"AttributeName": "SK", "KeyType": "RANGE"}],
        "BillingMode": "PAY_PER_REQUEST",
        "Tags": [{"Key": OWNER_TAG, "Value": OWNER_VALUE}],
    }
    if spec.gsi:
        attributes += [
            {"AttributeName": "GSI1PK", "AttributeType": "S"},
            {"AttributeName": "GSI1SK", "AttributeType": "S"},
        ]
        kwargs["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "GSI1",
                "KeySchema": [
                    {"AttributeName": "GSI1PK", "KeyType": "HASH"},
                    {"AttributeName": "GSI1SK", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
        if spec.gsi_lag_ms > 0:
            kwargs["Tags"].append({"Key": GSI_LAG_TAG, "Value": str(int(spec.gsi_lag_ms))})
    if spec.profile_tag:
        kwargs["Tags"].append({"Key": PROFILE_TAG, "Value": spec.profile_tag})
    kwargs["AttributeDefinitions"] = attributes
    try:
        client.create_table(**kwargs)
    except ClientError as e:
        if e.response["Error"].get("Code") == "ResourceInUseException":
            raise TableNameTaken(
                f"table {name!r} was created by someone else a moment ago", "pick another table name"
            ) from None
        raise LabError(
            f"could not create table {name!r}: {e.response['Error'].get('Message', '')}",
            "check the backend's permissions and limits",
        ) from None
    _wait_active(client, name)
    if spec.ttl_attribute:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute}
        )


def _wait_active(client: Any, name: str, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while time.monotonic() < deadline:
        description = client.describe_table(TableName=name)["Table"]
        indexes = description.get("GlobalSecondaryIndexes", [])
        if description["TableStatus"] == "ACTIVE" and all(i.get("IndexStatus", "ACTIVE") == "ACTIVE" for i in indexes):
            return
        time.sleep(delay)
        delay = min(delay * 2, 2.0)
    raise LabError(f"table {name!r} did not become ACTIVE within {timeout_s:.0f}s", "try again, or check the backend")
