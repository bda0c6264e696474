"""Drawing a story's structure (a :class:`Draft`: agents, objects and containers as indices) for
a mechanism, and naming the one that is kept (:func:`name_draft`). How stories are drawn, and
why, is in :mod:`nesttom._generator`'s docstring (step 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from nesttom._design import MECHANISMS
from nesttom._model import MOVE, TELL, Enter, Event, Leave, Move, Story, Tell
from nesttom._render import YOU
from nesttom._tables import BITS

__all__ = ["CONTAINERS", "NAMES", "N_CONTAINERS", "OBJECTS", "Draft", "draw_draft", "name_draft"]

NAMES = (
    "Ann", "Ben", "Cal", "Dora", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jill", "Kofi", "Lena",
    "Milo", "Nia", "Omar", "Pia", "Raj", "Sara", "Tom", "Uma", "Vic", "Wes", "Yara", "Zoe",
)  # fmt: skip
CONTAINERS = (
    "drawer", "box", "basket", "cupboard", "suitcase", "safe", "crate", "bucket",
    "envelope", "bag", "jar", "chest", "tin", "backpack", "wardrobe", "locker",
)  # fmt: skip
OBJECTS = ("key", "coin", "ring", "letter", "marble", "ticket", "watch", "scarf", "apple", "pen")
N_CONTAINERS = 5  # containers a story uses


@dataclass(frozen=True)
class Draft:
    """A drawn story's structure: agents, objects and containers are indices (names are given
    only to the story that is kept). Object 0 is the target."""

    n_objects: int
    initial: tuple[int, ...]
    present: int
    events: tuple[tuple[Any, ...], ...]
    records: tuple[tuple[Any, ...], ...]  # compiled moves/tells of the target
    # the same records with the mechanism neutralised (one way, or two for secret watching)
    neutral: tuple[tuple[tuple[Any, ...], ...], ...]
    reality: int
    you: int
    features: tuple[str, ...]
    own: tuple[int, ...]  # each agent's own belief about the target at the end


def _pick(
    fresh: list[int], recent: list[int], x: float, never: int, now: Sequence[int], real: int
) -> int:
    """A container for the target (a destination, a lie, a garbled reading), drawn with the
    uniform ``x``: one it has never been in nor been said to be in (``fresh``), if there is one;
    else one of the two used longest ago (``recent``: the containers used so far, oldest first)
    where nobody believes it is now (``now``: each agent's own belief) and it is not (``real``),
    or failing that, any of the two but ``never``. ``fresh`` and ``recent`` are updated. So
    beliefs frozen at different points of a story name different containers."""
    if fresh:
        c = fresh.pop(int(x * len(fresh)))
    else:
        pool = [b for b in recent if b != real and b not in now][:2] or [
            b for b in recent if b != never
        ][:2]
        c = pool[int(x * len(pool))]
        recent.remove(c)
    recent.append(c)
    return c


_W_MOVE, _W_LEAVE, _W_ENTER, _W_DISTRACT, _W_TELL = 3.0, 2.0, 1.3, 0.8, 1.6
# "staircase" stories (depth 2 and beyond): leaves are likelier, wait for the target to move
# since the last one, and people seldom come back
_W_LEAVE_STAIRS, _W_ENTER_STAIRS = 4.0, 0.4
_NC = N_CONTAINERS
_OTHERS = tuple(tuple(c for c in range(N_CONTAINERS) if c != d) for d in range(N_CONTAINERS))


@cache
def _thresholds(
    n_agents: int, w_tell: float, w_leave: float = _W_LEAVE, w_enter: float = _W_ENTER
) -> tuple[tuple[float, ...], ...]:
    """Per set of present agents: the cumulative weights of move, leave, enter, distractor move
    and (the rest) message — a move needs someone present, a leave two, an enter someone out."""
    out = []
    for present in range(1 << n_agents):
        inside = len(BITS[present])
        c_move = _W_MOVE if inside else 0.0
        c_leave = c_move + (w_leave if inside >= 2 else 0.0)
        c_enter = c_leave + (w_enter if inside < n_agents else 0.0)
        c_distract = c_enter + (_W_DISTRACT if inside else 0.0)
        out.append((c_move, c_leave, c_enter, c_distract, c_distract + w_tell))
    return tuple(out)


Thresholds = tuple[tuple[float, ...], ...]


def _event_thresholds(
    n_agents: int, mechanism: str, self_story: bool, stairs: bool
) -> tuple[Thresholds, Thresholds]:
    """The event thresholds of a story (:func:`_thresholds`): while the target has moved since
    the last leave, and after a leave (the same unless ``stairs``: then nobody leaves again
    until the target moves). Messages only for the message mechanisms, twice as often in a self
    story and in a corrected one."""
    w_tell = (
        (
            _W_TELL
            * (2.0 if self_story else 1.0)
            * (2.0 if mechanism == "stale-then-corrected" else 1.0)
        )
        if mechanism in ("lie", "garble", "stale-then-corrected")
        else 0.0
    )
    if stairs:
        return (
            _thresholds(n_agents, w_tell, _W_LEAVE_STAIRS, _W_ENTER_STAIRS),
            _thresholds(n_agents, w_tell, 0.0, _W_ENTER_STAIRS),
        )
    both = _thresholds(n_agents, w_tell)
    return both, both


def _watchers(xs: Sequence[float], i: int, absent: Sequence[int]) -> int:
    """The absent agents (a mask; 0 for none) who secretly watch a move, drawn with
    ``xs[i : i + 4]``: one in 55% of moves, a second one in 20% of those."""
    if xs[i] >= 0.55:
        return 0
    hidden = 1 << absent[int(xs[i + 1] * len(absent))]
    if len(absent) >= 2 and xs[i + 2] < 0.2:
        hidden |= 1 << absent[int(xs[i + 3] * len(absent))]
    return hidden


# in a self story, "you" mostly send garbled messages (what the other heard differs from what
# you know) and mostly receive corrections
_P_YOU_SEND = {"garble": 0.7, "stale-then-corrected": 0.3}


def _correspondents(
    xs: Sequence[float],
    i: int,
    mechanism: str,
    told: dict[int, int],
    reality: int,
    belief: Sequence[int],
    you: int,
) -> tuple[int, int]:
    """Who writes to whom (sender, recipient), drawn with ``xs[i : i + 3]``. Under
    ``stale-then-corrected``, mostly a correction: someone who knows where the target is
    (``reality``) writes again to someone ``told`` something now stale (to "you" where that is
    one). In a self story ("you" is agent ``you``, else -1) "you" take part in most messages;
    otherwise any two agents."""
    n_agents = len(belief)
    stale = None
    if mechanism == "stale-then-corrected" and told:
        # r was told something now stale, and s knows where it really is
        stale = [
            (s, r)
            for r in told
            if told[r] != reality
            for s in range(n_agents)
            if s != r and belief[s] == reality
        ]
        if stale and you >= 0:
            stale = [p for p in stale if p[1] == you] or stale
    if stale and xs[i] < 0.95:  # a correction: someone who knows better writes again
        return stale[int(xs[i + 1] * len(stale))]
    if you >= 0 and xs[i] < 0.88:  # "you" take part in most messages of a self story
        other = int(xs[i + 1] * (n_agents - 1))
        if other >= you:
            other += 1
        return (you, other) if xs[i + 2] < _P_YOU_SEND.get(mechanism, 0.5) else (other, you)
    s = int(xs[i + 1] * n_agents)
    r = int(xs[i + 2] * (n_agents - 1))
    if r >= s:
        r += 1
    return s, r


def draw_draft(
    rng: np.random.Generator,
    n_agents: int,
    length: int,
    mechanism: str,
    hidden_ok: bool,
    self_story: bool,
    stairs: bool = False,
) -> Draft | None:
    """Draw one story structure; None when it lacks its mechanism (the caller draws again).

    Uniform floats come in one block per story and are consumed in order; ``int(x * n)`` of a
    float ``x`` in [0, 1) (a multiple of 2**-53) is always below ``n``."""
    xs = rng.random(10 * length + 8).tolist()
    full = (1 << n_agents) - 1
    you = int(xs[0] * n_agents) if self_story else -1
    n_objects = 2 if length <= 6 else 3
    initial = [int(xs[1 + o] * _NC) for o in range(n_objects)]
    i = 1 + n_objects
    present = full
    if xs[i] < 0.2:
        present &= ~(1 << int(xs[i + 1] * n_agents))
    i += 2
    present0 = present
    where = list(initial)
    recent = [initial[0]]  # containers the target has been in or said to be in, oldest first
    fresh = list(_OTHERS[initial[0]])  # and the others
    belief = [initial[0]] * n_agents  # each agent's own belief about the target
    told: dict[int, int] = {}
    records: list[tuple[Any, ...]] = []
    neutral: list[tuple[Any, ...]] = []  # no secret watching / truthful / ungarbled / uncorrected
    openly: list[tuple[Any, ...]] = []  # secret watchers watch openly
    events: list[tuple[Any, ...]] = []
    secret = mechanism == "secret-observation"
    has_hidden = has_lie = has_garble = has_correction = has_absence = False
    open_, shut = _event_thresholds(n_agents, mechanism, you >= 0, stairs)
    thresholds = open_
    bits = BITS
    add_event = events.append
    add_record = records.append
    add_neutral = neutral.append
    last_box = _NC - 1
    for _ in range(length):
        members = bits[present]
        c_move, c_leave, c_enter, c_distract, total = thresholds[present]
        x = xs[i] * total
        i += 1
        if x < c_move:
            mover = members[int(xs[i] * len(members))]
            if fresh:
                dest = fresh.pop(int(xs[i + 1] * len(fresh)))
                recent.append(dest)
            else:
                dest = _pick(fresh, recent, xs[i + 1], where[0], belief, where[0])
            i += 2
            hidden = 0
            if hidden_ok and present != full:
                hidden = _watchers(xs, i, bits[full & ~present])
                has_hidden = has_hidden or hidden != 0
            i += 4
            obs = present | hidden
            if obs != full:
                has_absence = True
            rec = (MOVE, dest, obs, present)
            add_record(rec)
            if secret:
                add_neutral((MOVE, dest, present, present))
                openly.append((MOVE, dest, obs, obs))
            else:
                add_neutral(rec)
            for a in bits[obs]:
                belief[a] = dest
            where[0] = dest
            thresholds = open_
            add_event(("move", mover, 0, dest, bits[hidden]))
        elif x < c_leave:
            who = members[int(xs[i] * len(members))]
            i += 1
            present &= ~(1 << who)
            thresholds = shut
            add_event(("leave", who))
        elif x < c_enter:
            absent = bits[full & ~present]
            who = absent[int(xs[i] * len(absent))]
            i += 1
            present |= 1 << who
            add_event(("enter", who))
        elif x < c_distract:
            mover = members[int(xs[i] * len(members))]
            o = 1 + int(xs[i + 1] * (n_objects - 1))
            dest = int(xs[i + 2] * last_box)
            if dest == where[o]:
                dest = last_box
            i += 3
            where[o] = dest
            add_event(("move", mover, o, dest, ()))
        else:
            # a private message about the target
            s, r = _correspondents(xs, i, mechanism, told, where[0], belief, you)
            i += 3
            own = belief[s]
            claimed = received = own
            neutral_rec: tuple[Any, ...] | None = (TELL, s, r, own, own)
            if mechanism == "lie" and xs[i] < 0.45:
                claimed = received = _pick(fresh, recent, xs[i + 1], own, belief, where[0])
                has_lie = True
            elif mechanism == "garble" and xs[i] < 0.45:
                received = _pick(fresh, recent, xs[i + 1], claimed, belief, where[0])
                has_garble = True
            elif mechanism == "stale-then-corrected" and r in told:
                neutral_rec = None  # the neutral story has no corrections
                if told[r] != received:
                    has_correction = True
            i += 2
            records.append((TELL, s, r, claimed, received))
            if neutral_rec is not None:
                neutral.append(neutral_rec)
            belief[r] = received
            told[r] = received
            events.append(("tell", s, r, 0, claimed, received))

    flags = (has_absence, has_hidden, has_lie, has_garble, has_correction)
    present_in_story = mechanism == "absence" or flags[MECHANISMS.index(mechanism)]
    if not present_in_story or (hidden_ok and not has_hidden):
        return None
    return Draft(
        n_objects=n_objects,
        initial=tuple(initial),
        present=present0,
        events=tuple(events),
        records=tuple(records),
        neutral=(tuple(neutral), tuple(openly)) if openly else (tuple(neutral),),
        reality=where[0],
        you=you,
        features=tuple(m for m, f in zip(MECHANISMS, flags, strict=True) if f),
        own=tuple(belief),
    )


def _sample(xs: Sequence[float], pool: Sequence[str], k: int) -> list[str]:
    left = list(pool)
    return [left.pop(int(x * len(left))) for x in xs[:k]]


def name_draft(draft: Draft, rng: np.random.Generator, n_agents: int) -> Story:
    """Name the agents, objects and containers of a kept draft (names drawn from ``rng``)."""
    xs = rng.random(n_agents + draft.n_objects + _NC).tolist()
    names = _sample(xs, NAMES, n_agents)
    if draft.you >= 0:
        names[draft.you] = YOU
    objects = _sample(xs[n_agents:], OBJECTS, draft.n_objects)
    boxes = _sample(xs[n_agents + draft.n_objects :], CONTAINERS, _NC)
    events: list[Event] = []
    for ev in draft.events:
        kind = ev[0]
        if kind == "move":
            hidden = tuple(names[h] for h in ev[4])
            events.append(Move(names[ev[1]], objects[ev[2]], boxes[ev[3]], hidden))
        elif kind == "leave":
            events.append(Leave(names[ev[1]]))
        elif kind == "enter":
            events.append(Enter(names[ev[1]]))
        else:
            events.append(
                Tell(names[ev[1]], names[ev[2]], objects[ev[3]], boxes[ev[4]], boxes[ev[5]])
            )
    return Story(
        agents=tuple(names),
        objects=tuple((objects[o], boxes[c]) for o, c in enumerate(draft.initial)),
        present=tuple(n for i, n in enumerate(names) if draft.present >> i & 1),
        events=tuple(events),
    )
