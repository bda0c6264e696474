"""Seeds and the held-out share of the seed space.

A seed is held out when the first 8 bytes of ``sha256("mindledger-seed:<seed>")``, read as a
fraction of 2⁶⁴, fall below the held-out fraction (30% by default). The daemon's scheduled runs
draw held-out seeds; development runs and tests never do, so an agent tuned to the suite shows
up as a gap between the two.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["SEED_SPACE", "draw_seed", "is_held_out"]

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
