"""The games' item families (:class:`mindledger.family.Family`): ``"games"`` (level-k trials on
the paper's games and fresh variants, and A/B/C scenarios) and ``"repeated"`` (repeated-game
episodes against scripted opponents or another agent of the run, played turn by turn).

Their design records (``design``) read the generators' meta. A one-shot item gives ``game``,
``condition``, ``target_depth``, ``lambda``, ``excluded`` (a level-k trial whose K_B would be
ambiguous), ``question`` ("A"/"B"/"C", "K" for opponent-type inference) and the scenario that
ties a scenario's items (:data:`SCENARIO_KEYS`), with the truth's ``target_action`` (or
``answer``) and ``abc_differ``; a repeated-game episode gives its ``game``, ``counterfactual``
setting, ``opponent``, matched set (:func:`games.repeated.matched_set`) and whether it is a B6
switching-bot episode (``b6``: then it has no counterfactual cell and no matched set). An
episode against an agent of the run has the opponent ``agent:control`` or ``agent:self``
(:data:`games.repeated.AGENT_OPPONENTS`); reports keep those apart from the scripted cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from games import _reference as reference
from games import _scoring as scoring
from games import repeated
from games._strategic import ABC_GENERATOR, make_abc_item
from games._trials import GENERATOR as TRIAL_GENERATOR
from games._trials import make_trial
from mindledger.design import DesignRecord, answer_choices, number, text
from mindledger.family import Family, PlayMode
from mindledger.items import Item, Score

__all__ = ["GAMES", "ITEM_FAMILIES", "REPEATED", "SCENARIO_KEYS", "OneShotGames", "RepeatedGames"]

SCENARIO_KEYS = ("scenario", "abc_group", "abc_id", "scenario_id", "group_id", "group")
"""Meta keys, in order, that tie the A, B and C items about one scenario together: the A/B/C
generator writes ``scenario``; the others are the spellings reports have accepted from the
start (synthetic runs write ``scenario_id``), so stored and imported items keep their group."""


@dataclass(frozen=True)
class OneShotGames:
    """Level-k trials (``games.trial``) and A/B/C scenarios (``games.abc``): one choice each."""

    name: str = "games"
    title: str = "Level-k games and A/B/C scenarios"
    plays: PlayMode = "single"
    generators: tuple[str, ...] = (TRIAL_GENERATOR, ABC_GENERATOR)
    policies: tuple[str, ...] = ("oracle", "random", "depth-capped", "level", "believer")
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

    def design(self, item: Item) -> DesignRecord:
        meta, truth = item.meta, item.truth
        group = ""
        for key in SCENARIO_KEYS:
            if meta.get(key) is not None:
                group = text(meta[key])
                break
        differ = truth.get("abc_differ")
        chance = scoring.resolve_chance(truth) if item.generator == TRIAL_GENERATOR else None
        return DesignRecord(
            game=text(meta.get("game")),
            condition=text(meta.get("condition")),
            target_depth=number(meta.get("target_depth")),
            lam=number(meta.get("lambda")),
            question=text(meta.get("question")),
            group=group,
            n_choices=answer_choices(item.answer),
            excluded=meta.get("excluded") is True,
            truth_answer=truth.get("answer", truth.get("target_action")),
            abc_differ=differ if isinstance(differ, bool) else None,
            resolve_chance=chance if chance is not None else math.nan,
        )


@dataclass(frozen=True)
class RepeatedGames:
    """Repeated-game episodes (:mod:`games.repeated`): many rounds, one trial."""

    name: str = repeated.FAMILY
    title: str = "Repeated games against scripted opponents and the run's agents"
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

    def design(self, item: Item) -> DesignRecord:
        meta = item.meta
        opponent = text(meta.get("opponent"))
        b6 = opponent in repeated.B6_OPPONENTS or meta.get("switch_round") is not None
        return DesignRecord(
            game=text(meta.get("game")),
            n_choices=answer_choices(item.answer),
            counterfactual="" if b6 else text(meta.get("counterfactual")),
            opponent=opponent,
            matched="" if b6 else repeated.matched_set(item),
            b6=b6,
        )


GAMES = OneShotGames()
REPEATED = RepeatedGames()

ITEM_FAMILIES: tuple[Family, ...] = (GAMES, REPEATED)
