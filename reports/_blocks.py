"""Reading a block of a run's profile by key or path, whether the model types it or not.

The headline figures of :class:`~reports.model.AgentProfile` are typed models; several
sections are not (``calibration``, ``applied_gap``, ``minus_control``, ``by_mechanism``, …
are plain objects, and a typed section may carry extra keys: ``games.accuracy``,
``games.abc.log_score_c``). A reader that follows a figure by its path (the comparison, the
simulation study) reads it here, and nowhere else by string key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["Block", "block_at", "field_of"]

Block = BaseModel | Mapping[str, Any]
"""A block of a profile: a typed model, or a section the model leaves untyped."""


def field_of(block: Block, key: str) -> Any:
    """One key of a block: a typed model's field, else one of its extra keys, else a key of
    an untyped section. None when it has no such key."""
    if isinstance(block, BaseModel):
        if key in type(block).model_fields:
            return getattr(block, key)
        return (block.model_extra or {}).get(key)
    return block.get(key)


def block_at(root: Block | None, path: Iterable[str]) -> Block | None:
    """The block at ``path`` under ``root`` (None when a step is missing or not a block)."""
    node: Any = root
    for step in path:
        if not isinstance(node, BaseModel | Mapping):
            return None
        node = field_of(node, step)
    return node if isinstance(node, BaseModel | Mapping) else None
