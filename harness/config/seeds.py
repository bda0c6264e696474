"""Seeds and the held-out share of the seed space.

A seed is held out when the first 8 bytes of ``sha256("mindledger-seed:<seed>")``, read as a
fraction of 2⁶⁴, fall below the held-out fraction (30% by default). The daemon's scheduled runs
draw held-out seeds; development runs and tests never do, so an agent tuned to the suite shows
up as a gap between the two.
"""

from __future__ import annotations

import hashlib
import secrets

from mindledger.errors import InputError

__all__ = ["SEED_SPACE", "check_seed", "draw_seed", "is_held_out"]

SEED_SPACE = 2**31


def is_held_out(seed: int, fraction: float = 0.3) -> bool:
    """Whether ``seed`` belongs to the held-out share of the seed space."""
    digest = hashlib.sha256(f"mindledger-seed:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def draw_seed(*, held_out: bool, fraction: float = 0.3) -> int:
    """A fresh seed from the held-out share, or from the rest (OS randomness; the seed is logged
    with the run, which is what makes the run reproducible)."""
    while True:
        seed = secrets.randbelow(SEED_SPACE)
        if is_held_out(seed, fraction) == held_out:
            return seed


def check_seed(seed: int | None, *, held_out: bool = False, fraction: float = 0.3) -> None:
    """Refuse (InputError naming ``--seed``) a seed outside the seed space, or a held-out seed
    for a development run: the held-out share stays unseen until the scheduler draws it."""
    if seed is None:
        return
    if not 0 <= seed < SEED_SPACE:
        raise InputError(f"expected a seed from 0 to {SEED_SPACE - 1}, got {seed}", where="--seed")
    if is_held_out(seed, fraction) and not held_out:
        raise InputError(
            f"seed {seed} is in the held-out share of the seed space, reserved for scheduled "
            "runs; pick another seed, or omit --seed to draw one",
            where="--seed",
        )
