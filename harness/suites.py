"""Suite presets: which items a run evaluates, generated fresh from the run's seed.

- ``quick``: a smoke-sized pass over every belief depth (one false- and one true-belief story
  per depth), two applied stories and four fresh game variants. It finishes in a few minutes on
  two CPU cores with the embedded model, and is enough for the reference agents to be diagnosed.
- ``baseline``: seed 002's baseline table at full size — B1 (NestToM R0–R5, 60 false- and 60
  true-belief items per depth cell, 12 events, 4 agents), B2 (R2 length sweep, 3 × 60), B4
  (applied questions on R1–R3 stories, 150), B5 (strategic: 60 level-k trials on fresh variants
  and 16 A/B/C scenarios), B6 (30-round RPS against 4 bots that switch strategy mid-game, 5
  sessions each), 16 repeated PD/RPS games with label, payoff and joint counterfactuals
  (seed 003), and B3 (100 Hi-ToM items) when a Hi-ToM file is given.

Each block draws from its own stream of the seed, so adding a block never changes another's
items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mindledger.errors import UserError
from mindledger.items import Item

__all__ = ["SUITES", "Suite", "get_suite"]

DEPTHS = ("R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5")


@dataclass(frozen=True)
class Suite:
    """A named preset: a description, its item counts, and how to build its items."""

    name: str
    description: str
    counts: dict[str, int]
    builder: Callable[[int, Path | None], list[Item]]

    def build(self, seed: int, *, hitom_path: Path | None = None) -> list[Item]:
        return self.builder(seed, hitom_path)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _nesttom() -> Any:
    import nesttom

    return nesttom


def _games() -> Any:
    import games

    return games


def _hitom_sample(seed: int, path: Path, n: int) -> list[Item]:
    items, _report = _nesttom().import_hitom(path)
    if not items:
        raise UserError(f"{path}: no Hi-ToM items found")
    rng = np.random.default_rng([seed, 0xB3])
    pick = rng.choice(len(items), size=min(n, len(items)), replace=False)
    return [items[int(i)] for i in sorted(pick)]


def _quick(seed: int, hitom_path: Path | None) -> list[Item]:
    nt = _nesttom()
    items: list[Item] = []
    items += nt.b1_items(seed, per_cell=1)  # each depth once as false, once as true belief
    items += nt.b4_items(seed, per_cell=1)  # behaviour + judgment on the R1–R3 stories above
    items += _games().generate_items(seed, 4, conditions=("recursive",), variants=True)
    if hitom_path is not None:
        items += _hitom_sample(seed, hitom_path, 10)
    return items


def _baseline(seed: int, hitom_path: Path | None) -> list[Item]:
    nt = _nesttom()
    g = _games()
    items: list[Item] = []
    # B1: 60 false + 60 true belief per depth cell, 12-event 4-agent stories.
    items += nt.generate_items(
        seed, len(DEPTHS) * 2 * 60, depths=DEPTHS, length=12, agents=4, stream=1
    )
    # B2: R2 false-belief length sweep, 60 per length.
    items += nt.generate_items(
        seed, 180, depths=("R2",), belief_types=("false",), length=(6, 12, 20), agents=4, stream=2
    )
    # B4: behaviour + judgment questions on R1–R3 stories (50 stories × 3 questions).
    items += nt.generate_items(
        seed, 50, depths=("R1", "R2", "R3"), belief_types=("false",), applied=True, stream=3
    )
    # B5: 60 level-k trials on fresh variants + A/B/C scenarios (~60 items).
    items += g.generate_items(seed, 60, variants=True)
    items += g.generate_abc_items(seed, 16)
    import games.repeated as repeated

    # B6: 30-round RPS against 4 biased bots that switch mid-game, 5 sessions each.
    items += repeated.generate_episodes(seed, **repeated.B6_PRESET)
    # Repeated PD and RPS with label, payoff and joint counterfactuals (seed 003).
    items += repeated.generate_episodes(seed + 1, 16)
    if hitom_path is not None:
        items += _hitom_sample(seed, hitom_path, 100)
    return items


SUITES: dict[str, Suite] = {
    "quick": Suite(
        "quick",
        "smoke pass: every depth once as false and true belief, 6 applied questions, 4 game variants",
        {"nesttom_belief": 16, "nesttom_applied": 6, "games": 4},
        _quick,
    ),
    "baseline": Suite(
        "baseline",
        "seed 002 baseline table: B1 960, B2 180, B4 150, B5 ~120, B6 20 episodes, "
        "16 counterfactual repeated games (+ B3 100 with --hitom)",
        {"B1": 960, "B2": 180, "B4": 150, "B5": 120, "B6": 20, "repeated": 16},
        _baseline,
    ),
}


def get_suite(name: str) -> Suite:
    """The preset ``name``; a UserError lists the known ones."""
    try:
        return SUITES[name]
    except KeyError:
        raise UserError(f"unknown suite {name!r} (known: {', '.join(SUITES)})") from None
