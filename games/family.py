"""The games' item families (:class:`mindledger.family.Family`): ``"games"`` (level-k trials on
the paper's games and fresh variants, and A/B/C scenarios) and ``"repeated"`` (repeated-game
episodes against scripted opponents, played turn by turn)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from games import reference, repeated, scoring
from games.strategic import ABC_GENERATOR, make_abc_item
from games.trials import GENERATOR as TRIAL_GENERATOR
from games.trials import make_trial
from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score

__all__ = ["GAMES", "ITEM_FAMILIES", "REPEATED", "OneShotGames", "RepeatedGames"]


@dataclass(frozen=True)
class OneShotGames:
    """Level-k trials (``games.trial``) and A/B/C scenarios (``games.abc``): one choice each."""

    name: str = "games"
    title: str = "Level-k games and A/B/C scenarios"
    plays: PlayMode = "single"
    generators: tuple[str, ...] = (TRIAL_GENERATOR, ABC_GENERATOR)
    policies: tuple[str, ...] = ("oracle", "random", "depth-capped", "level")
    scaffold_modules: tuple[str, ...] = ("opponent_sim",)

    def score(self, item: Item, answer: Any) -> Score:
        return scoring.score(item, answer)

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        return reference.reference_answer(item, policy, rng)

    def regenerate(self, item: Item) -> Item | None:
        if item.generator == TRIAL_GENERATOR:
            return make_trial(item.seed, item.params)
        if item.generator == ABC_GENERATOR:
            return make_abc_item(item.seed, item.params)
        return None


@dataclass(frozen=True)
class RepeatedGames:
    """Repeated-game episodes (:mod:`games.repeated`): many rounds, one trial."""

    name: str = repeated.FAMILY
    title: str = "Repeated games against scripted opponents"
    plays: PlayMode = "episode"
    generators: tuple[str, ...] = (repeated.GENERATOR,)
    policies: tuple[str, ...] = repeated.REFERENCE_POLICIES
    scaffold_modules: tuple[str, ...] = ()

    def score(self, item: Item, answer: Any) -> Score:
        return repeated.score(item, answer)

    def reference_answer(self, item: Item, policy: str, rng: np.random.Generator) -> Any:
        return repeated.reference_answer(item, policy, rng)

    def regenerate(self, item: Item) -> Item | None:
        if item.generator == repeated.GENERATOR:
            return repeated.make_episode_item(item.seed, item.params)
        return None


GAMES = OneShotGames()
REPEATED = RepeatedGames()

ITEM_FAMILIES: tuple[Family, ...] = (GAMES, REPEATED)
