"""moto keeps every model object it ever makes (each Item written, each old version overwritten) in its class's
`instances_tracked` list, for its /moto-api state dashboard, and never lets go: an embedded server that took 60,000
overwrites of one item grew by about 1.15 KB a write (74 MB), 11 GB at the dashboard's 10M-call cap. The lab never
reads that dashboard, so DynamoDB's model classes stop tracking (what the server answers is unchanged)."""

from __future__ import annotations

from typing import Any


class Untracked(list[Any]):
    """A list that keeps nothing appended to it."""

    def append(self, item: Any) -> None:
        pass


def stop_tracking() -> None:
    """Every DynamoDB model class of moto (Item, Table, StreamRecord, ...) appends its new objects to nothing."""
    import moto.dynamodb.models  # noqa: F401  (defines the classes, which register themselves in model_data)
    from moto.core.model_instances import model_data

    for cls in model_data["dynamodb"].values():
        cls.instances_tracked = Untracked()  # type: ignore[attr-defined]
