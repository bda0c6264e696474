"""mindledger: measure how well an LLM agent models other minds.

This package holds the few pieces every other package shares and that depend on nothing but
the standard library: the canonical JSON contract (:mod:`mindledger.canonical`), the error tree
(:mod:`mindledger.errors`), the :class:`~mindledger.items.Item` value that generators produce
and the harness runs, and the rule that a held-out run's seed is shown to operators only
(:mod:`mindledger.disclosure`).
"""

import typing

if typing.TYPE_CHECKING:
    from mindledger.canonical import canonical_json, content_hash
    from mindledger.disclosure import SEED_WITHHELD, seed_cell, seed_phrase, shown_seed
    from mindledger.errors import (
        ConfigError,
        InputError,
        MindledgerError,
        StorageError,
        UserError,
    )
    from mindledger.items import Item
else:  # every command imports mindledger.errors: the package itself loads nothing more
    from mindledger.lazy import lazy_exports as _lazy_exports

    __getattr__, __dir__ = _lazy_exports(
        __name__,
        {
            "mindledger.canonical": ("canonical_json", "content_hash"),
            "mindledger.disclosure": ("SEED_WITHHELD", "seed_cell", "seed_phrase", "shown_seed"),
            "mindledger.errors": (
                "ConfigError", "InputError", "MindledgerError", "StorageError", "UserError",
            ),
            "mindledger.items": ("Item",),
        },
    )

__version__ = "0.1.0"

__all__ = [
    "SEED_WITHHELD",
    "ConfigError",
    "InputError",
    "Item",
    "MindledgerError",
    "StorageError",
    "UserError",
    "__version__",
    "canonical_json",
    "content_hash",
    "seed_cell",
    "seed_phrase",
    "shown_seed",
]
