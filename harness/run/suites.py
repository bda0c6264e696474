"""Suite presets: which items a run evaluates, generated fresh from the run's seed.

- ``quick``: a smoke-sized pass over every belief depth (one false- and one true-belief story
  per depth), two applied stories and four fresh game variants. It finishes in a few minutes on
  two CPU cores with the embedded model, and is enough for the reference agents to be diagnosed.
  Its NestToM items are B1's and B4's first stories (``meta["block"] == "quick"``), without
  companion questions: at one story per cell joint accuracy is not estimable, and companions
  would more than double the model's work (26 → 66 items).
- ``baseline``: seed 002's baseline table at full size — B1 (NestToM R0–R5, 60 false- and 60
  true-belief items per depth cell, 12 events, 4 agents, plus the companion questions of every
  shallower prefix on its false-belief stories, for joint accuracy), B2 (R2 length sweep at 6,
  12 and 20 events, 60 false + 60 true each), B4 (behaviour and judgment questions on B1's
  R1–R3 stories, 150), B5 (strategic: 60 level-k trials on fresh variants,
  :data:`ABC_SCENARIOS` = 120 A/B/C scenarios against scripted populations, 400 items, and
  :data:`POPULATION_SCENARIOS` = 40 scenarios whose population is the run's own agents, 240
  items), B6 (30-round RPS against 4 bots that
  switch strategy mid-game, 5 sessions each: 20 episodes, 600 turns, reported on their own),
  seed 003's repeated PD/RPS games in a balanced design (:data:`EPISODES_PER_CELL` = 8 episodes
  in each of the 8 cells game × label × payoff, in matched sets: 64 episodes, 1,280 turns), the
  same games against the run's own agents (:data:`SEAT_SETS` = 2 matched sets per game and seat,
  ``agent:control`` and ``agent:self``, each in the four settings: 32 episodes), and
  B3 (100 Hi-ToM items) when a Hi-ToM file is given. B1, B2 and B4 are
  :func:`nesttom.baseline_items`, the same items ``mindledger nesttom generate --suite`` writes.
- ``seats``: only those 32 agent-seat episodes, to run them on their own.
- ``smoke``: three items (quick's first two belief questions and one game variant): a wiring
  check, and what the daemon's soak benchmark (``bench/soak_daemon.py``) runs every cycle.

Agent seats (issue 15 item 4, seed 003's LLM-vs-LLM setting). Per game, 2 sets × 2 seats × 4
settings = 16 episodes, the same in PD and RPS (balanced: 2 episodes in every game × seat ×
setting cell, so the counterfactual gap has 2 matched pairs per game and seat — reported with
its value and n; it needs 10 for an interval). An agent under test plays both seats' episodes
(against its control, and against itself), an ablation too; a control plays the ``self`` ones
(its moves against its agent are in the agent's trials). Each episode is two players' turns:
per agent and seat, 8 PD episodes × 16 rounds + 8 RPS × 24 = 320 turns of the agent's and 320
of its opponent's.

Why these sizes (issue 15). A/B/C: the three kinds of scenario come in rotation, so 120
scenarios hold 40 of each and 40 opponent-level (K) items, one per guessing scenario. A 95%
Wilson interval is narrower than ±15 points at any accuracy from n = 39 (its widest, at 0.5);
A − B and B − C are paired by scenario (Newcombe's paired interval, as reports computes them),
which needs 82 scenarios at accuracies near 0.5 with independent answers (discordance 0.5) and
120 for discordance up to 0.72 — 120 scenarios give K n = 40 and 120 pairs.

Condition C against an LLM population (issue 15 item 4; seed 002 §15.1 "LLM populations"):
:data:`POPULATION_SCENARIOS` = 40 scenarios, 20 beauty contests and 20 11–20 variants in
rotation, each with K = :data:`games.POPULATION_SAMPLES` = 5 play items (every agent of the run
answers the game 5 times: agents, controls, ablations and reference players alike) and one
C-llm item (the predicted distribution of the other agents' plays), 240 items. A predictor's
C-llm figure pools one prediction per scenario, so 40 scenarios give its top-1 accuracy n = 40,
above the 39 a Wilson interval needs to be narrower than ±15 points, and its log and Brier
scores a t interval (n ≥ 10). Repeated
games: 8 episodes per cell, 2 matched sets per opponent; per game the counterfactual gap has 6
to 8 matched pairs with defined exploitation (the equilibrium players leave none to exploit),
below reports' 10 for an interval, so it is reported with its value and n and estimated with
its interval over both games (12 to 14 pairs); an interval per game needs 16 per cell. ``quick``
has neither: one episode per cell would be 160 model turns, six times the rest of ``quick``.

NestToM items of both presets have identifiable lures (``nesttom.b1_items`` and friends generate
with ``lures="require"``): a wrong answer that is reality, the projection or a truncation is
exactly one of them, except what ``meta["ambiguous"]`` lists.

Each block draws from its own stream of the seed, so adding a block never changes another's
items. A suite's items are generated lazily, a block at a time (:meth:`Suite.items`), so that
creating a run streams them into storage.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mindledger.errors import UserError
from mindledger.items import Item

__all__ = [
    "ABC_SCENARIOS",
    "EPISODES_PER_CELL",
    "POPULATION_SCENARIOS",
    "SEAT_EPISODES",
    "SEAT_SETS",
    "SUITES",
    "Suite",
    "get_suite",
]

ABC_SCENARIOS = 120
"""A/B/C scenarios in ``baseline`` (kinds in rotation: 40 each, 40 with a K item)."""
POPULATION_SCENARIOS = 40
"""LLM-population A/B/C scenarios in ``baseline`` (20 beauty contests, 20 11–20 variants)."""
POPULATION_ITEMS = POPULATION_SCENARIOS * (5 + 1)
"""Their items: K = 5 plays and one C-llm prediction each (:data:`games.POPULATION_SAMPLES`)."""
EPISODES_PER_CELL = 8
"""Repeated-game episodes in each counterfactual cell (game × label × payoff) of ``baseline``."""
B6_SESSIONS = 5
"""B6 sessions per switching bot in ``baseline``."""
SEAT_SETS = 2
"""Matched sets of agent-seat repeated games per game and seat (control, self) in ``baseline``
and ``seats``; each set is played in the four counterfactual settings."""
SEAT_EPISODES = SEAT_SETS * 2 * 2 * 4
"""Agent-seat episodes: sets × games × seats × settings."""


@dataclass(frozen=True)
class Suite:
    """A named preset: a description, its item counts, and how to build its items."""

    name: str
    description: str
    counts: dict[str, int]
    builder: Callable[[int, Path | None], Iterator[Item]]

    def items(self, seed: int, *, hitom_path: Path | None = None) -> Iterator[Item]:
        """The suite's items in order, generated a block at a time as they are read."""
        return self.builder(seed, hitom_path)

    def build(self, seed: int, *, hitom_path: Path | None = None) -> list[Item]:
        """All the suite's items at once."""
        return list(self.items(seed, hitom_path=hitom_path))

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


def _quick(seed: int, hitom_path: Path | None) -> Iterator[Item]:
    nt = _nesttom()
    # each depth once as false, once as true belief; behaviour + judgment on the R1–R3 stories
    yield from nt.b1_items(seed, per_cell=1, block="quick")
    yield from nt.b4_items(seed, per_cell=1, block="quick")
    yield from _games().generate_items(seed, 4, conditions=("recursive",), variants=True)
    if hitom_path is not None:
        yield from _hitom_sample(seed, hitom_path, 10)


def _smoke(seed: int, hitom_path: Path | None) -> Iterator[Item]:
    # the first two belief questions of quick's and one game variant: a wiring check
    yield from itertools.islice(_nesttom().b1_items(seed, per_cell=1, block="quick"), 2)
    yield from _games().generate_items(seed, 1, conditions=("recursive",), variants=True)


def _baseline(seed: int, hitom_path: Path | None) -> Iterator[Item]:
    nt = _nesttom()
    g = _games()
    # B1 (60 false + 60 true per depth cell, 12 events, 4 agents, with the companions of its
    # false-belief stories), B2 (R2 at 6/12/20 events, 60 + 60 each), B4 (150 applied questions
    # on B1's R1–R3 stories)
    for block in nt.baseline_items(seed).values():
        yield from block
    # B5: 60 level-k trials on fresh variants + 120 A/B/C scenarios (400 items, 40 of them K).
    yield from g.generate_items(seed, 60, variants=True)
    yield from g.generate_abc_items(seed, ABC_SCENARIOS)
    # C against the run's own agents: 40 scenarios, 5 plays by every agent and 1 prediction.
    yield from g.generate_population_items(seed, POPULATION_SCENARIOS)
    import games.repeated as repeated

    # B6: 30-round RPS against 4 biased bots that switch mid-game, 5 sessions each; apart from
    # the counterfactual cells.
    yield from repeated.b6_episodes(seed, B6_SESSIONS)
    # Repeated PD and RPS (seed 003): 8 episodes in each cell game × label × payoff.
    yield from repeated.counterfactual_design(seed + 1, EPISODES_PER_CELL)
    # The same games against the run's own agents: its control, and itself.
    yield from _seats(seed, None)
    if hitom_path is not None:
        yield from _hitom_sample(seed, hitom_path, 100)


def _seats(seed: int, hitom_path: Path | None) -> Iterator[Item]:
    import games.repeated as repeated

    yield from repeated.agent_seat_design(seed + 2, SEAT_SETS)


SUITES: dict[str, Suite] = {
    "quick": Suite(
        "quick",
        "smoke pass: every depth once as false and true belief, 6 applied questions, 4 game variants",
        {"nesttom_belief": 16, "nesttom_applied": 6, "games": 4},
        _quick,
    ),
    "smoke": Suite(
        "smoke",
        "wiring check: two belief questions and one game variant (an agent's first look; "
        "the daemon's soak benchmark runs it every cycle)",
        {"nesttom_belief": 2, "games": 1},
        _smoke,
    ),
    "baseline": Suite(
        "baseline",
        "seed 002 baseline table: B1 960 (+ 1,200 companion questions), B2 360, B4 150, "
        "B5 700 (60 level-k + 120 A/B/C scenarios + 40 LLM-population scenarios of 5 plays "
        "and 1 prediction), B6 20 episodes, 64 counterfactual repeated "
        f"games (8 per cell), {SEAT_EPISODES} against the run's agents (+ B3 100 with --hitom)",
        {
            "B1": 960,
            "B1_companions": 1200,
            "B2": 360,
            "B4": 150,
            "B5_level_k": 60,
            "B5_abc": 3 * ABC_SCENARIOS + ABC_SCENARIOS // 3,
            "B5_abc_llm": POPULATION_ITEMS,
            "B6": 4 * B6_SESSIONS,
            "repeated": 8 * EPISODES_PER_CELL,
            "repeated_agents": SEAT_EPISODES,
        },
        _baseline,
    ),
    "seats": Suite(
        "seats",
        f"repeated PD and RPS against the run's own agents: agent vs control and agent vs "
        f"itself, {SEAT_SETS} matched sets per game and seat in the 4 settings "
        f"({SEAT_EPISODES} episodes)",
        {"repeated_agents": SEAT_EPISODES},
        _seats,
    ),
}


def get_suite(name: str) -> Suite:
    """The preset ``name``; a UserError lists the known ones."""
    try:
        return SUITES[name]
    except KeyError:
        raise UserError(f"unknown suite {name!r} (known: {', '.join(SUITES)})") from None
