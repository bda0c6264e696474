"""JSON data as the serialisers of :mod:`reports` write it.

A figure travels between layers as a typed record; only its serialiser (a ``to_json`` or
``to_dict`` at the edge, for ``--format json``, the API or a notification) turns it into
:data:`JsonObject`, which ``json.dumps`` writes as it is. Nothing in :mod:`reports` reads a
:data:`JsonObject` back by key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = (
    "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
"""A JSON value; sequences and mappings are read-only so that a tuple or a typed dict fits."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object, as a serialiser returns it."""
