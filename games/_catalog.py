"""The four game families of the paper, their rules texts and the
registry of built-in games.

Each family is built from its parameters: the payoff matrix is enumerated from the payoff
formula, the level-0 anchor is derived the way the paper derives it (strip the bonus terms of
their dependence on the opponent, i.e. treat each bonus as granted, and maximise what is left
over S, smallest maximiser), and the rules text is written from the same parameters. With the
paper's parameters the rules text is the paper's verbatim.

Families and parameters (the paper's values in brackets):

- ``11-20``: integers ``lo…hi`` [50, 70]; ``u = s + bonus·[s = a − gap] +
  small_bonus·[s = a − small_gap]`` [24, 2, 8, 1].
- ``all-pay``: bids ``0, step, …, top`` [10, 1]; ``u = prize·[s > a] + tie·[s = a] − s``
  [12, 6].
- ``nash-demand``: demands ``1…prize`` [20]; ``u = s`` if ``s + a <= prize``,
  ``rate% · s`` if ``s + a > prize`` and ``s < a``, else 0 [80].
- ``ring-11-20``: ``players`` in a ring [5], integers ``lo…hi`` [1, 20]; ``u = s +
  bonus·[s = left − gap] + small_bonus·[s = right + small_gap]`` [10, 3, 3, 7]; a level-k
  player believes both neighbours play ``a(k−1)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from games._spec import GameSpec
from mindledger.errors import InputError

__all__ = [
    "CANONICAL_PARAMS",
    "FAMILIES",
    "GAMES",
    "build_game",
    "game_names",
    "get_game",
]

_APOS = "\u2019"  # the paper's typographic apostrophe, kept verbatim

# -- opponent descriptions (Tables 5 and 6, verbatim) ---------------------------------------

_DESC_1120 = (
    "Your opponent plays naively. They have no strategic awareness and simply try to maximize "
    "their own base payoff without considering how your choice might interact with theirs.",
    "Your opponent is a basic strategic thinker. They assume you will naively maximize your own "
    "base payoff, and they choose the action that best responds to a base-payoff maximizer.",
    "Your opponent is a moderately sophisticated thinker. They assume you are a basic "
    "strategist who best-responds to naive base-payoff maximizers, and they choose the action "
    "that best responds to that level of reasoning.",
    "Your opponent is a deeply strategic thinker. They assume you are moderately sophisticated "
    "--- someone who best-responds to basic strategists --- and they choose the action that "
    "best responds to that deeper level of reasoning.",
)
_DESC_ALLPAY = (
    "Your opponent plays naively. They are very cautious and would rather not bid at all than "
    "risk paying a bid and losing. They do not think strategically about what you might bid or "
    "how to compete for the prize.",
    "Your opponent is a basic strategic thinker. They assume you are very cautious and will not "
    "bid at all to avoid any risk of losing money, and they choose the bid that best responds "
    "to a non-bidder.",
    "Your opponent is a moderately sophisticated thinker. They assume you are a basic "
    "strategist who places the minimum bid needed to beat a cautious non-bidder, and they "
    "choose the bid that best responds to that level of reasoning.",
    "Your opponent is a deeply strategic thinker. They assume you are moderately sophisticated "
    "--- someone who just barely outbids basic strategists --- and they choose the bid that "
    "best responds to that deeper level of reasoning.",
)
_DESC_NASH = (
    "Your opponent plays naively. They are greedy and try to claim as much of the prize as "
    "possible for themselves, without considering how your demand might interact with theirs.",
    "Your opponent is a basic strategic thinker. They assume you are greedy and will demand as "
    "much as possible, and they choose the demand that best responds to a greedy maximizer.",
    "Your opponent is a moderately sophisticated thinker. They assume you are a basic "
    "strategist who slightly undercuts a greedy maximizer, and they choose the demand that best "
    "responds to that level of reasoning.",
    "Your opponent is a deeply strategic thinker. They assume you are moderately sophisticated "
    "--- someone who undercuts basic strategists --- and they choose the demand that best "
    "responds to that deeper level of reasoning.",
)
_DESC_RING = (
    "Your opponents play naively. They have no strategic awareness and simply try to maximize "
    "their own base payoff without considering how other players" + _APOS + " choices might "
    "interact with theirs.",
    "Your opponents are basic strategic thinkers. They assume other players naively maximize "
    "their own base payoff, and they choose the action that best responds to base-payoff "
    "maximizers.",
    "Your opponents are moderately sophisticated thinkers. They assume other players are basic "
    "strategists who best-respond to naive base-payoff maximizers, and they choose the action "
    "that best responds to that level of reasoning.",
    "Your opponents are deeply strategic thinkers. They assume other players are moderately "
    "sophisticated --- those who best-respond to basic strategists --- and they choose the "
    "action that best responds to that deeper level of reasoning.",
)

# -- rules texts (written from the parameters) -----------------------------------------------


def _rules_1120(p: Mapping[str, Any]) -> str:
    return (
        "I am playing a two-player game. My opponent and I each simultaneously choose an "
        f"integer from {p['lo']} to {p['hi']}. My payoff equals my chosen number, plus a bonus "
        f"of {p['bonus']} if my number is exactly {p['gap']} less than my opponent{_APOS}s, or a "
        f"bonus of {p['small_bonus']} if my number is exactly {p['small_gap']} less than my "
        f"opponent{_APOS}s. I want to maximize my payoff. What integer should I choose?"
    )


def _rules_allpay(p: Mapping[str, Any]) -> str:
    step = p["step"]
    space = (
        f"from 0 to {p['top']} (integers only)"
        if step == 1
        else f"from 0 to {p['top']} (multiples of {step} only)"
    )
    return (
        "I am playing a two-player all-pay auction. My opponent and I each simultaneously "
        f"choose a bid {space}. Both of us pay our bid regardless of the outcome. If my bid is "
        f"strictly higher, I win a prize of {p['prize']}. If we tie, I receive {p['tie']}. If "
        "my bid is lower, I receive nothing. My payoff is: prize (if any) minus my bid. I want "
        "to maximize my payoff. What integer should I bid?"
    )


def _rules_nash(p: Mapping[str, Any]) -> str:
    q = p["prize"]
    return (
        f"I am playing a two-player Nash demand game. A prize of {q} is at stake. My opponent "
        f"and I each simultaneously demand an integer from 1 to {q}. If our demands sum to {q} "
        f"or less, I receive my demand. If our demands exceed {q} but my demand is strictly "
        f"less than my opponent{_APOS}s, I receive {p['rate']}% of my demand. Otherwise I "
        "receive nothing. I want to maximize my payoff. What integer should I demand?"
    )


def _rules_ring(p: Mapping[str, Any]) -> str:
    n = p["players"]
    return (
        f"I am one of {n} players arranged in a ring (so player 1 neighbors players 2 and {n}, "
        f"etc.). Each of us simultaneously chooses an integer from {p['lo']} to {p['hi']}. My "
        f"payoff equals my chosen number, plus a bonus of {p['bonus']} if my number is exactly "
        f"{p['gap']} less than my left neighbor{_APOS}s number, plus a bonus of "
        f"{p['small_bonus']} if my number is exactly {p['small_gap']} more than my right "
        f"neighbor{_APOS}s number. I want to maximize my payoff. What integer should I choose?"
    )


# -- payoff matrices (rows = own action s, columns = opponent action a) --------------------

Matrix = npt.NDArray[np.float64]


def _grid(actions: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    return actions[:, None], actions[None, :]


def _payoff_1120(p: Mapping[str, Any]) -> tuple[list[int], Matrix, Matrix]:
    acts = np.arange(p["lo"], p["hi"] + 1, dtype=np.int64)
    s, a = _grid(acts)
    m = s + p["bonus"] * (s == a - p["gap"]) + p["small_bonus"] * (s == a - p["small_gap"])
    base = acts + p["bonus"] + p["small_bonus"]  # bonuses granted
    return acts.tolist(), m.astype(np.float64), base.astype(np.float64)


def _payoff_allpay(p: Mapping[str, Any]) -> tuple[list[int], Matrix, Matrix]:
    acts = np.arange(0, p["top"] + 1, p["step"], dtype=np.int64)
    s, a = _grid(acts)
    m = p["prize"] * (s > a) + p["tie"] * (s == a) - s
    base = p["prize"] + p["tie"] - acts  # prize and tie share granted: "18 - s"
    return acts.tolist(), m.astype(np.float64), base.astype(np.float64)


def _payoff_nash(p: Mapping[str, Any]) -> tuple[list[int], Matrix, Matrix]:
    q, rate = p["prize"], p["rate"]
    acts = np.arange(1, q + 1, dtype=np.int64)
    s, a = _grid(acts)
    # rate% of s, computed as one correctly rounded division of exact integers
    reduced = (s * rate) / 100.0
    m = np.where(s + a <= q, s.astype(np.float64), np.where(s < a, reduced, 0.0))
    base = acts + (acts * rate) / 100.0  # both terms granted: 1.8 s in the paper
    return acts.tolist(), np.asarray(m, dtype=np.float64), np.asarray(base, dtype=np.float64)


def _payoff_ring(p: Mapping[str, Any]) -> tuple[list[int], Matrix, Matrix]:
    acts = np.arange(p["lo"], p["hi"] + 1, dtype=np.int64)
    s, a = _grid(acts)
    m = s + p["bonus"] * (s == a - p["gap"]) + p["small_bonus"] * (s == a + p["small_gap"])
    base = acts + p["bonus"] + p["small_bonus"]
    return acts.tolist(), m.astype(np.float64), base.astype(np.float64)


class _Family:
    def __init__(
        self,
        name: str,
        title: str,
        payoff: Callable[[Mapping[str, Any]], tuple[list[int], Matrix, Matrix]],
        rules: Callable[[Mapping[str, Any]], str],
        descriptions: tuple[str, ...],
        keys: tuple[str, ...],
        plural: bool = False,
    ) -> None:
        self.name = name
        self.title = title
        self.payoff = payoff
        self.rules = rules
        self.descriptions = descriptions
        self.keys = keys
        self.plural = plural


FAMILIES: Mapping[str, _Family] = MappingProxyType(
    {
        "11-20": _Family(
            "11-20", "11–20 (modified)", _payoff_1120, _rules_1120, _DESC_1120,
            ("lo", "hi", "bonus", "gap", "small_bonus", "small_gap"),
        ),
        "all-pay": _Family(
            "all-pay", "All-Pay Auction", _payoff_allpay, _rules_allpay, _DESC_ALLPAY,
            ("top", "step", "prize", "tie"),
        ),
        "nash-demand": _Family(
            "nash-demand", "Nash Demand", _payoff_nash, _rules_nash, _DESC_NASH,
            ("prize", "rate"),
        ),
        "ring-11-20": _Family(
            "ring-11-20", "Ring 11–20", _payoff_ring, _rules_ring, _DESC_RING,
            ("players", "lo", "hi", "bonus", "gap", "small_bonus", "small_gap"),
            plural=True,
        ),
    }
)
"""The game families, by name."""

CANONICAL_PARAMS: Mapping[str, Mapping[str, int]] = MappingProxyType(
    {
        "11-20": MappingProxyType(
            {"lo": 50, "hi": 70, "bonus": 24, "gap": 2, "small_bonus": 8, "small_gap": 1}
        ),
        "all-pay": MappingProxyType({"top": 10, "step": 1, "prize": 12, "tie": 6}),
        "nash-demand": MappingProxyType({"prize": 20, "rate": 80}),
        "ring-11-20": MappingProxyType(
            {"players": 5, "lo": 1, "hi": 20, "bonus": 10, "gap": 3, "small_bonus": 3,
             "small_gap": 7}
        ),
    }
)
"""The paper's parameters (Table 1)."""


def build_game(family: str, params: Mapping[str, Any], *, name: str | None = None) -> GameSpec:
    """Build the game of ``family`` with ``params``: payoffs enumerated from the formula,
    the anchor derived from the base payoff, the rules text written from the parameters."""
    fam = FAMILIES.get(family)
    if fam is None:
        raise InputError(f"unknown game family {family!r}; known: {sorted(FAMILIES)}",
                         where="family")
    missing = [k for k in fam.keys if k not in params]
    if missing:
        raise InputError(f"parameters missing for {family}: {missing}", where="params")
    clean = {k: int(params[k]) for k in fam.keys}
    actions, matrix, base = fam.payoff(clean)
    anchor = actions[int(np.argmax(base))]  # smallest maximiser of the base payoff
    return GameSpec.from_matrix(
        name or family,
        actions,
        matrix,
        anchor,
        family=family,
        params=clean,
        players=clean.get("players", 2),
        rules=fam.rules(clean),
        descriptions=fam.descriptions,
    )


def _canonical() -> dict[str, GameSpec]:
    return {name: build_game(name, CANONICAL_PARAMS[name]) for name in FAMILIES}


GAMES: Mapping[str, GameSpec] = MappingProxyType(_canonical())
"""The paper's four games, by name: ``11-20``, ``all-pay``, ``nash-demand``, ``ring-11-20``."""


def game_names() -> list[str]:
    """Names of the built-in games, in the paper's order."""
    return list(GAMES)


def get_game(name: str) -> GameSpec:
    """The built-in game ``name``; raises :class:`InputError` for an unknown name."""
    try:
        return GAMES[name]
    except KeyError:
        raise InputError(
            f"unknown game {name!r}; the built-in games are {', '.join(GAMES)}", where="game"
        ) from None
