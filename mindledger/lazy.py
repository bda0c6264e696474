"""Lazy re-exports: a package's ``__init__`` names its public API without importing it (PEP 562).

A package re-exports its public API from ``__init__``, but a command that needs one name should
not pay for every module behind the others (SQLAlchemy, NumPy, SciPy, …). Such a package
imports its names for type checkers and readers only, and resolves them on first use::

    if TYPE_CHECKING:
        from ledger.store import Store
    else:
        __getattr__, __dir__ = lazy_exports(__name__, {"ledger.store": ("Store",)})

``from ledger import Store`` then imports :mod:`ledger.store` when it runs, not when ``ledger``
is imported; the value is kept in the package, so the next lookup is an ordinary attribute.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` and ``__dir__`` for ``package`` that import each exported name
    from its module (``exports``: module → the names it gives) when it is first looked up."""
    home = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *home})

    return __getattr__, __dir__
