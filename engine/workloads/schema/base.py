"""The base of the schema's models, and how a model-level check names the field it refuses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    # An unknown field is a typo until proven otherwise: refused, with the known ones named.
    model_config = ConfigDict(extra="forbid", frozen=True)


FIELD_MARK = " | "  # a model-level check's message is "field path | problem and fix": the path names the field


def at_field(field: str, message: str) -> ValueError:
    return ValueError(f"{field}{FIELD_MARK}{message}")
