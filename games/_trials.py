"""Trial items for the paper's two conditions.

A trial puts the model against an opponent of level ``ℓ = k − 1`` for a target depth
``k ∈ 1…10``; the one correct action is ``a(k)``. In the recursive condition the opponent is
described (in the paper's words, or by the template); in the inductive condition the model may
call ``query_opponent_history`` for 30 actions drawn from the quantal level-k generator
(:mod:`games._quantal`; uniform for level 0).

Every item is regenerated from ``(generator, version, seed, params)`` by :func:`make_trial`;
:func:`generate_items` derives one seed per item from its own seed and lays the items over the
design cells (game × condition × λ × target depth) in a seeded order, so ``n`` equal to a
multiple of the number of cells gives a balanced design.

A trial whose correct action also matches another depth in the window ``0…10`` cannot
identify a depth; it is generated but marked ``excluded`` (the paper's Ring 11–20 at target
depth 10, where ``a(10) = a(0) = 20``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from games._catalog import FAMILIES, get_game
from games._idr import check_distinguishability
from games._prompts import (
    ANSWER_TOOL,
    HISTORY_TOOL,
    history_tool_spec,
    system_prompt,
    user_prompt,
)
from games._quantal import LAMBDAS, opponent_history
from games._spec import GameSpec
from games._variants import generate_variant
from mindledger.errors import InputError
from mindledger.items import Item

__all__ = [
    "CONDITIONS",
    "GENERATOR",
    "VERSION",
    "WINDOW",
    "design_cells",
    "generate_items",
    "make_trial",
    "trial_game",
]

GENERATOR = "games.trial"
VERSION = "1"
CONDITIONS: tuple[str, ...] = ("recursive", "inductive")
WINDOW = 10
"""Depths read off a number: ``a(0) … a(10)`` (Appendix A)."""


def _seed_for(seed: int, index: int) -> int:
    """A per-item seed derived from the batch seed and the item's position."""
    return int(np.random.SeedSequence([seed, index]).generate_state(1)[0])


def trial_game(seed: int, params: Mapping[str, Any]) -> tuple[GameSpec, np.random.Generator]:
    """The game a trial is played in, and the item's generator positioned after drawing it.

    Canonical games come from the registry; a variant is drawn first from the item's seed.
    """
    rng = np.random.default_rng(seed)
    family = params["game"]
    if params.get("variant"):
        spec, _ = generate_variant(family, rng, depth=WINDOW)
    else:
        spec = get_game(family)
    return spec, rng


def make_trial(seed: int, params: Mapping[str, Any]) -> Item:
    """Build one trial item from its seed and parameters.

    ``params``: ``game`` (a family name: ``11-20``, ``all-pay``, ``nash-demand``,
    ``ring-11-20``), ``condition`` (``recursive`` | ``inductive``), ``target_depth``
    (1…10), ``lambda`` (inductive only) and ``variant`` (bool).
    """
    game = params.get("game")
    if game not in FAMILIES:
        raise InputError(f"unknown game {game!r}; known: {', '.join(FAMILIES)}", where="game")
    condition = params.get("condition")
    if condition not in CONDITIONS:
        raise InputError(f"condition must be one of {CONDITIONS}", where="condition")
    k = params.get("target_depth")
    if not isinstance(k, int) or not 1 <= k <= WINDOW:
        raise InputError(f"target_depth must be an integer from 1 to {WINDOW}",
                         where="target_depth")
    lam: int | float = 0
    if condition == "inductive":
        raw = params.get("lambda")
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw < 1e6:
            raise InputError("the inductive condition needs a positive lambda", where="lambda")
        lam = int(raw) if isinstance(raw, float) and raw.is_integer() else raw
    variant = bool(params.get("variant", False))
    clean: dict[str, Any] = {"game": game, "condition": condition, "target_depth": k,
                             "variant": variant}
    if condition == "inductive":
        clean["lambda"] = lam

    spec, rng = trial_game(seed, clean)
    verdict = check_distinguishability(spec, WINDOW)
    idr = list(verdict.idr)
    level = k - 1
    target = idr[k]
    matches = [d for d, a in enumerate(idr) if a == target]
    excluded = len(matches) > 1
    lo, hi = spec.actions[0], spec.actions[-1]

    truth: dict[str, Any] = {
        "target_action": target,
        "target_depth": k,
        "opponent_level": level,
        "idr": idr,
        "kmax": verdict.kmax,
        "br_sets": [list(b) for b in verdict.br_sets],
        "actions": list(spec.actions),
        "payoff": [list(row) for row in spec.payoff],
        "anchor": spec.anchor,
        "excluded": excluded,
        "excluded_reason": (
            f"a({k}) = {target} also matches depth(s) {[d for d in matches if d != k]}: "
            "K_B would be ambiguous" if excluded else None
        ),
    }
    meta: dict[str, Any] = {
        "game": game,
        "game_name": spec.name,
        "condition": condition,
        "target_depth": k,
        "opponent_level": level,
        "variant": variant,
        "excluded": excluded,
        "answer_tool": ANSWER_TOOL,
        "system_prompt": system_prompt(condition),
        "description_form": "words" if level <= 3 else "template",
    }
    if variant:
        meta["game_params"] = dict(spec.params)
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_results: dict[str, str] = {}
    if condition == "inductive":
        history = list(opponent_history(spec, level, float(lam), rng))
        truth["history"] = history
        meta["lambda"] = lam
        tools = (history_tool_spec(),)
        tool_results[HISTORY_TOOL] = json.dumps(history)

    return Item(
        family="games",
        generator=GENERATOR,
        version=VERSION,
        seed=seed,
        params=clean,
        prompt=user_prompt(spec, condition, level),
        answer={"kind": "integer", "min": lo, "max": hi},
        truth=truth,
        meta=meta,
        tools=tools,
        tool_results=tool_results,
    )


def design_cells(
    games: Sequence[str] = tuple(FAMILIES),
    conditions: Sequence[str] = CONDITIONS,
    lambdas: Sequence[float] = LAMBDAS,
    depths: Sequence[int] = tuple(range(1, WINDOW + 1)),
) -> list[tuple[str, str, float | None, int]]:
    """The design's cells ``(game, condition, lambda, target_depth)``: game × (recursive, or
    inductive × λ) × depth — 4 × (1 + 3) × 10 = 160 in the paper's design."""
    cells: list[tuple[str, str, float | None, int]] = []
    for game in games:
        for condition in conditions:
            lams: Sequence[float | None] = [None] if condition == "recursive" else list(lambdas)
            for lam in lams:
                for k in depths:
                    cells.append((game, condition, lam, k))
    return cells


def generate_items(
    seed: int,
    n: int,
    *,
    games: Sequence[str] = tuple(FAMILIES),
    conditions: Sequence[str] = CONDITIONS,
    lambdas: Sequence[float] = LAMBDAS,
    depths: Sequence[int] = tuple(range(1, WINDOW + 1)),
    variants: bool = False,
) -> list[Item]:
    """``n`` trial items (family ``"games"``), deterministic by ``seed``.

    The items cover :func:`design_cells` in a seeded order, cycling when ``n`` exceeds the
    number of cells. With ``variants=True`` every item plays its own fresh distinguishable
    variant of its game family, drawn from the item's seed.
    """
    if n < 0:
        raise InputError("n must be non-negative", where="n")
    for g in games:
        if g not in FAMILIES:
            raise InputError(f"unknown game {g!r}; known: {', '.join(FAMILIES)}", where="games")
    for c in conditions:
        if c not in CONDITIONS:
            raise InputError(f"unknown condition {c!r}; known: {CONDITIONS}",
                             where="conditions")
    cells = design_cells(games, conditions, lambdas, depths)
    if not cells:
        raise InputError("the design is empty (no games, conditions, lambdas or depths)")
    order = np.random.default_rng(np.random.SeedSequence([seed, 0x6A4E])).permutation(len(cells))
    items: list[Item] = []
    for i in range(n):
        game, condition, lam, k = cells[int(order[i % len(cells)])]
        params: dict[str, Any] = {"game": game, "condition": condition, "target_depth": k,
                                  "variant": variants}
        if lam is not None:
            params["lambda"] = lam
        items.append(make_trial(_seed_for(seed, i), params))
    return items
