"""Who may see a held-out run's seed: operators only.

The daemon's scheduled runs draw their seeds from the held-out share of the seed space so that an
agent tuned to the suite shows up. Whoever knows such a run's seed (or an item's seed with its
generator, version and parameters) can regenerate its items, so every door — the reports, the
dashboard, the CLI, the daemon's API — withholds it unless an operator asks for it with
``reveal_held_out=True``. A development run's seed is always shown: it reproduces the run.

The rule lives here, once, so that every layer words it the same way.
"""

from __future__ import annotations

__all__ = ["SEED_WITHHELD", "SEED_WITHHELD_PHRASE", "seed_cell", "seed_phrase", "shown_seed"]

SEED_WITHHELD = "withheld"
"""What a table cell shows in place of a held-out run's seed."""

SEED_WITHHELD_PHRASE = "seed withheld (held-out run)"
"""What a sentence says in place of ``seed N`` for a held-out run."""


def shown_seed(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> int | None:
    """The seed a reader may see: ``seed`` for a development run or when an operator asks,
    else None."""
    return seed if reveal_held_out or not held_out else None


def seed_cell(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> str:
    """A table cell: ``"1234"``, or :data:`SEED_WITHHELD` for a held-out run (also when an
    operator asks but the seed was already withheld upstream)."""
    shown = shown_seed(seed, held_out=held_out, reveal_held_out=reveal_held_out)
    if shown is None:
        return SEED_WITHHELD if held_out else "—"
    return str(shown)


def seed_phrase(seed: int | None, *, held_out: bool, reveal_held_out: bool = False) -> str:
    """Prose: ``"seed 1234"``, or :data:`SEED_WITHHELD_PHRASE` for a held-out run."""
    shown = shown_seed(seed, held_out=held_out, reveal_held_out=reveal_held_out)
    if shown is None:
        return SEED_WITHHELD_PHRASE if held_out else "seed unknown"
    return f"seed {shown}"
