"""JSON values that cannot change once built, so that many requests may share them.

The parts of a chat request that depend only on an item's answer spec (the answer tool, the
``response_format``) are the same for many requests. :func:`freeze` makes such a value
immutable all the way down: a :class:`FrozenList` of :class:`FrozenDict` (subclasses of
``list`` and ``dict``, so everything that reads, compares, hashes to canonical JSON or encodes
them sees plain JSON, byte for byte). Because they cannot change, a request encoder may keep the
encoding of one by its identity (:mod:`harness.adapters.openai` does). Copying one (``copy``,
``deepcopy``, ``pickle``) gives plain, mutable ``list`` and ``dict`` values.
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["FrozenDict", "FrozenList", "freeze"]


def _refuse(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"a {type(self).__name__} cannot be changed (it is shared by requests)")


class FrozenList(list[Any]):
    """A JSON array that cannot be changed (see the module docstring)."""

    __slots__ = ()
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __copy__(self) -> list[Any]:
        return list(self)


class FrozenDict(dict[str, Any]):
    """A JSON object that cannot be changed (see the module docstring)."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))

    def __copy__(self) -> dict[str, Any]:
        return dict(self)


def freeze(value: Any) -> Any:
    """``value`` (a JSON value) with every list and dict in it, at any depth, made frozen (a
    copy: ``value`` itself is left as it is; tuples become frozen lists, as JSON has them)."""
    if isinstance(value, dict):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value
