"""Agents as opponents (seed 003's LLM-vs-LLM setting): the seats an opponent that is an
agent of the run sits in (:data:`AGENT_OPPONENTS`), the game seen from each seat
(:class:`SeatEpisode`), and reading a seat back from an item."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from games.repeated._common import FAMILY, MAX_ROUNDS
from games.repeated._game import RepeatedGame, _rounds_text
from mindledger.errors import InputError
from mindledger.items import Item

AGENT_OPPONENTS: Mapping[str, str] = {"agent:control": "control", "agent:self": "self"}
"""Opponents that are agents of the run, by their ``opponent`` param, and the seat each names:
``control`` — the agent's bare-model control (the run's control of the agent's base agent);
``self`` — a second, independent instance of the agent itself (each seat its own chats and its
own history). The harness resolves the seat to an agent (:mod:`harness.run.episodes`)."""
SEATS: tuple[str, ...] = ("control", "self")
SEAT_BENCHMARK = ("the best fixed action in hindsight against the opponent's actual moves "
                  "(the moves taken as given: how the opponent would have reacted is unknown)")
"""What ``benchmark`` means in an agent-seat episode (there is no script to best-respond to)."""
NO_SWITCH = ("not estimable: the opponent is an agent with no scripted switch, so there is no "
             "switch round to adapt from")


@dataclass(frozen=True)
class SeatEpisode:
    """A repeated game between two agents of the run (opponent ``agent:control`` or
    ``agent:self``): the same stage game and rules for both seats, no script and no draws.

    Each seat sees the game from its own side (its own move first, its own points first,
    :meth:`round_prompt`); the game is symmetric, so both read the same rules."""

    game: RepeatedGame
    seat: str
    rounds: int

    def __post_init__(self) -> None:
        if not 1 <= self.rounds <= MAX_ROUNDS:
            raise InputError(f"rounds must be from 1 to {MAX_ROUNDS}", where="rounds")
        if self.seat not in SEATS:
            raise InputError(f"unknown seat {self.seat!r}; known: {', '.join(SEATS)}",
                             where="opponent.seat")

    @property
    def opponent_name(self) -> str:
        return f"agent:{self.seat}"

    @property
    def labels(self) -> tuple[str, ...]:
        return self.game.labels

    @property
    def answer_spec(self) -> dict[str, Any]:
        return {"kind": "choice", "choices": list(self.game.labels)}

    def intro(self) -> str:
        return self.game.rules_text(self.rounds)

    def _role(self, move: Any) -> int | None:
        """The role of ``move``; None when it is not an action of the game (invalid)."""
        labels = self.game.labels
        return labels.index(move) if isinstance(move, str) and move in labels else None

    def round_prompt(self, mine: Sequence[Any], theirs: Sequence[Any]) -> str:
        """What the seat whose moves are ``mine`` reads before the next round (moves that are
        not actions of the game are shown as invalid)."""
        if len(mine) != len(theirs):
            raise InputError("both seats must have played the same rounds", where="history")
        return _rounds_text(self.game, self.rounds,
                            [(self._role(a), self._role(b)) for a, b in zip(mine, theirs,
                                                                             strict=True)])


def agent_seat(item: Item) -> str | None:
    """The seat an episode item's opponent sits in (``control`` | ``self``), None for a scripted
    opponent."""
    if item.family != FAMILY:
        return None
    spec = item.truth.get("opponent") if isinstance(item.truth, Mapping) else None
    if isinstance(spec, Mapping) and spec.get("kind") == "agent":
        seat = spec.get("seat")
        return str(seat) if seat in SEATS else None
    return None


def seat_episode_from_item(item: Item) -> SeatEpisode:
    """Rebuild an agent-seat item's episode from its truth alone."""
    seat = agent_seat(item)
    if seat is None:
        raise InputError("not an agent-seat episode (its opponent is scripted)", where="item")
    t = item.truth
    try:
        game = RepeatedGame(str(t["game"]), str(t["counterfactual"]),
                            tuple(str(x) for x in t["labels"]),
                            tuple(tuple(int(v) for v in row) for row in t["payoff"]))
        return SeatEpisode(game, seat, int(t["rounds"]))
    except KeyError as exc:
        raise InputError(f"item truth lacks {exc.args[0]!r}", where="truth") from None
