"""The base of the schema's models, and how a model-level check names the field it refuses."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    # An unknown field is a typo until proven otherwise: refused, with the known ones named.
    model_config = ConfigDict(extra="forbid", frozen=True)


_AT = " | "  # a model-level check's message is "field path | problem and fix": the path names the field


def _at(field: str, message: str) -> ValueError:
    return ValueError(f"{field}{_AT}{message}")
