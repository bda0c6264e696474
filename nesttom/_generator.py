"""The NestToM-P generator: random stories, adversarially selected chains.

One story per item cell ``(depth, belief type, mechanism, length, agents)``:

1. A story of exactly ``length`` events is drawn for the mechanism: agents leave and enter,
   the target object is moved, distractor objects are moved, and, by mechanism, absent agents
   secretly watch moves (``secret-observation``), private messages carry lies (``lie``), arrive
   garbled (``garble``), or are later corrected by a second message to the same recipient
   (``stale-then-corrected``). An ``absence`` story has no secret watchers and no messages.
   Where the target goes, and what a lie or a garbled message says, is a container it has never
   been in nor been said to be in while there is one, else one of the two used longest ago where
   nobody believes it is now: so beliefs frozen at different points of the story name different
   containers. Stories asked at depth 2 and beyond (both belief types alike, so that the story's
   shape does not give the belief type away) are "staircases": leaves are likelier, wait for
   the target to move since the last one, and people seldom come back — nested absences, which
   is what keeps deep prefixes apart.
2. The belief of every chain is tabulated in one pass (a chain's belief depends only on its first
   agent and the set of the others), and a chain of the requested depth is drawn uniformly among
   those that qualify:

   - **false belief**: the answer differs from reality and from the answer of every shallower
     prefix chain (the adversarial filter); for R2-self also from "your" own belief;
   - **true belief** (control): the answer equals reality.

   Among qualifying chains, and over further stories (``PREFER_DRAWS``), the generator prefers,
   in this order: (a) **identifiable lures** — the wrong answers the error coder
   (:mod:`nesttom._scoring`) names differ: reality (``reality_leak``), the projection (the
   outermost agent's own belief, the length-1 prefix: ``projection``) and the truncations (the
   prefixes of length 2 … n−1: ``truncation:k``) are pairwise distinct, and (false belief) none
   is the answer; truncations of different depths may coincide (the type is still known). For a
   true-belief control, whose answer *is* reality, a wrong truncation answer must not also be
   the projection's. ``lures="require"`` (what the baseline blocks use) takes no chain without
   them; ``"prefer"`` (the default) falls back when ``PREFER_DRAWS`` more stories find none;
   (b) a **decisive** mechanism (false belief, where :func:`decisive_feasible`): neutralising it
   changes the answer (secret watchers not watching, or watching openly; messages truthful;
   delivery ungarbled; no corrections); (c) for R2-self, "your" own belief apart from reality
   and the projection, so that an own-belief leak is not also a reality leak or a projection.
   ``truth["decisive"]`` records (b); ``meta["causes"]`` lists every mechanism whose
   neutralisation changes the answer (``absence`` included: absent agents seeing every move).

   R0 asks for reality: its "false" cell is a story in which some agent's own belief differs
   from reality, its "true" cell one in which every agent's own belief is right.
   If no chain qualifies, a new story is drawn (from the same seeded stream).
3. The ground truth of the chosen question is recomputed by the reference semantics
   (:func:`nesttom._semantics.chain_answers`) from the finished :class:`~nesttom._model.Story`.

What stays ambiguous, and is listed in ``meta["ambiguous"]``
(:func:`nesttom._scoring.ambiguities`): truncation to depth 0 *is* reality and to depth 1 *is*
the projection, so a reasoner capped at depth 0 or 1 is coded ``reality_leak`` or
``projection`` by definition; on a yes/no judgment a lure matches whichever answer judging by it
gives, so a "yes" judgment answered "no" matches every lure at once (two answers for three
lures); under ``"prefer"``, items where no identifiable chain was found; on R2-self items, your
own belief when it is reality or the projection (rare under ``"require"``) or, on true-belief
controls, the answer itself; companion questions inherit their main question's lures, so an R0
or R1 companion of an R2-self story may list ``reality_leak=own_belief``. When lures must be
identifiable, a message seldom decides an R3-loop answer or a corrected R2-self one (a message
sets ``[a]``, ``[a, b]`` and ``[a, b, a]`` alike, and three later staircase steps must pull them
apart), so in those cells ``truth["decisive"]`` is often False.

R3-loop chains ``[a, b, a]`` differ from their prefix ``[a, b]`` only through a move that ``a``
watched in secret while ``b`` was present (the two chains see the same messages and otherwise the
same moves), so R3-loop stories always allow secret watchers, and the R3-loop × absence cell is
infeasible (it would be the secret-observation cell). ``meta["features"]`` lists every mechanism
present in a story.

Item metadata: ``block`` (the suite block, or None), ``role`` (``main``, ``prefix:k``,
``behaviour``, ``judgment``), ``depth``, ``depth_n``, ``reality_check`` (R0), ``r2_self``,
``belief``, ``mechanism`` (the cell's), ``features``, ``causes``, ``length`` (events),
``agents``, ``form`` (surface form), ``question``, ``selection`` (``adversarial``, ``control``,
``companion``), ``story_id``, ``own_belief`` (R2-self: your own belief, the own-belief-leak
answer; else None), ``ambiguous``, and for companions ``companion_of`` (the main item's id).

Randomness: one ``numpy.random.Generator`` per item, seeded with
``(seed, stream, index, cell)``; the surface form is not in the seed, so the same index in another
form tells the same story. Same seed and parameters, byte-identical items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import product
from typing import Any

import numpy as np

from mindledger.canonical import canonical_json, content_hash
from mindledger.items import Item
from nesttom._model import MOVE, TELL, Enter, Event, Leave, Move, Story, Tell
from nesttom._render import (
    FORMS,
    YOU,
    behaviour_question,
    belief_question,
    judgment_question,
    render_prompt,
)
from nesttom._scoring import ambiguities
from nesttom._semantics import chain_answers

__all__ = [
    "APPLIED_DEPTHS",
    "BELIEF_TYPES",
    "DEPTHS",
    "DEPTH_N",
    "FORMS",
    "GENERATOR",
    "LURES",
    "MECHANISMS",
    "VERSION",
    "decisive_feasible",
    "depth_label",
    "feasible",
    "generate_items",
    "generate_story",
    "regenerate",
]

GENERATOR = "nesttom"
VERSION = "1.1.0"

DEPTHS = ("R0", "R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5")
DEPTH_N = {"R0": 0, "R1": 1, "R2": 2, "R2-self": 2, "R3": 3, "R3-loop": 3, "R4": 4, "R5": 5}
BELIEF_TYPES = ("false", "true")
MECHANISMS = ("absence", "secret-observation", "lie", "garble", "stale-then-corrected")
APPLIED_DEPTHS = ("R1", "R2", "R3")
MIN_AGENTS, MAX_AGENTS = 3, 6
MIN_LENGTH, MAX_LENGTH = 4, 1000

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
MAX_ATTEMPTS = 20000  # stories drawn per item before giving up (a bug: every cell is feasible)
# stories drawn, once one qualifies, looking for one that meets every preference (by lures mode)
PREFER_DRAWS = {"prefer": 4, "require": 160}
LURES = ("prefer", "require")
REQUIRE_MIN_LENGTH = 6  # events a story needs for identifiable lures at depth 2 and beyond

_MOVE, _TELL = MOVE, TELL  # compiled record kinds, shared with nesttom._semantics


def feasible(depth: str, mechanism: str) -> bool:
    """Whether the cell ``(depth, mechanism)`` can have false-belief items (see module doc)."""
    return not (depth == "R3-loop" and mechanism == "absence")


def decisive_feasible(depth: str, mechanism: str) -> bool:
    """Whether a false belief at ``depth`` can hinge on ``mechanism``. A message is perceived
    only by chains made of its sender and recipient, so lies, garbles and corrections can decide
    R1, R2, R2-self and R3-loop answers but never R3 (three distinct agents), R4 or R5 ones
    (a longer chain of two agents has the same answer as its prefix). Absence is never
    "neutralised" (None), and R0 is reality."""
    if mechanism == "absence" or depth == "R0":
        return False
    return mechanism == "secret-observation" or depth in ("R1", "R2", "R2-self", "R3-loop")


def depth_label(chain: Sequence[str]) -> str:
    """The depth label of a chain: R0…R5, with R2-self (``[x, "you"]``) and R3-loop
    (``[a, b, a]``) told apart."""
    n = len(chain)
    if n == 2 and chain[1] == YOU:
        return "R2-self"
    if n == 3 and chain[0] == chain[2]:
        return "R3-loop"
    return f"R{n}"


def _bits_of(mask: int) -> tuple[int, ...]:
    return tuple(i for i in range(mask.bit_length()) if mask >> i & 1)


def _submasks_of(mask: int) -> tuple[int, ...]:
    out = []
    m = mask
    while True:
        out.append(m)
        if m == 0:
            break
        m = (m - 1) & mask
    return tuple(out)


# agent sets are bit masks; their members and subsets, precomputed for every mask
_BITS = tuple(_bits_of(m) for m in range(1 << MAX_AGENTS))
_SUBMASKS = tuple(_submasks_of(m) for m in range(1 << MAX_AGENTS))


def _table(n_agents: int, initial: Any, records: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """``table[a1][tail]``: the belief of every chain, by first agent and tail mask (one pass).
    The same rules as :func:`nesttom._semantics.belief_of_key`, for all chains at once."""
    size = 1 << n_agents
    full = size - 1
    table = [[initial] * size for _ in range(n_agents)]
    for rec in records:
        if rec[0] == _MOVE:
            dest = rec[1]
            if rec[3] == full:  # seen by everyone: every chain of these first agents
                for a1 in _BITS[rec[2]]:
                    table[a1] = [dest] * size
                continue
            subs = _SUBMASKS[rec[3]]
            for a1 in _BITS[rec[2]]:
                row = table[a1]
                for m in subs:
                    row[m] = dest
        else:
            _, s, r, claimed, received = rec
            subs = _SUBMASKS[(1 << s) | (1 << r)]
            row = table[s]
            for m in subs:
                if m:  # the chain [sender] keeps its own belief
                    row[m] = claimed
            row = table[r]
            for m in subs:
                row[m] = received
    return table


# (tail masks of the shallower prefixes, those of the truncations (all but the projection's,
# 0), the chains)
Subgroup = tuple[tuple[int, ...], tuple[int, ...], tuple[tuple[int, ...], ...]]
# (first agent, tail mask of the chain, the subgroups with these)
Group = tuple[int, int, tuple[Subgroup, ...]]


@cache
def _chain_groups(n_agents: int, depth: str, you: int, false_belief: bool) -> tuple[Group, ...]:
    """Every chain of a depth class, grouped so that one table lookup per group decides them
    all. ``you`` is the index of "you" (or -1).

    Chains are grouped by first agent and the chain's own tail mask (its answer), then by the
    *set* of shallower tail masks (the adversarial filter and the lures depend on nothing
    else). For false belief, chains whose tail equals a shallower one are dropped: their answer
    always equals that prefix's."""
    n = DEPTH_N[depth]
    agents = [i for i in range(n_agents) if i != you]
    chains: list[tuple[int, ...]]
    if depth == "R2-self":
        chains = [(a, you) for a in agents]
    elif depth == "R3":
        chains = [c for c in product(agents, repeat=3) if len(set(c)) == 3]
    elif depth == "R3-loop":
        chains = [(a, b, a) for a in agents for b in agents if a != b]
    else:
        chains = [
            c for c in product(agents, repeat=n) if all(c[i] != c[i + 1] for i in range(n - 1))
        ]
    groups: dict[tuple[int, int], dict[tuple[int, ...], list[tuple[int, ...]]]] = {}
    for c in chains:
        masks = [0]
        for a in c[1:]:
            masks.append(masks[-1] | (1 << a))
        final = masks[-1]
        if false_belief and final in masks[:-1]:
            continue
        shallower = tuple(sorted(set(masks[:-1])))
        groups.setdefault((c[0], final), {}).setdefault(shallower, []).append(c)
    return tuple(
        (
            a1,
            final,
            tuple((sh, tuple(m for m in sh if m), tuple(cs)) for sh, cs in subgroups.items()),
        )
        for (a1, final), subgroups in groups.items()
    )


@dataclass(frozen=True)
class _Draft:
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
        inside = len(_BITS[present])
        c_move = _W_MOVE if inside else 0.0
        c_leave = c_move + (w_leave if inside >= 2 else 0.0)
        c_enter = c_leave + (w_enter if inside < n_agents else 0.0)
        c_distract = c_enter + (_W_DISTRACT if inside else 0.0)
        out.append((c_move, c_leave, c_enter, c_distract, c_distract + w_tell))
    return tuple(out)


def _draw_story(
    rng: np.random.Generator,
    n_agents: int,
    length: int,
    mechanism: str,
    hidden_ok: bool,
    self_story: bool,
    stairs: bool = False,
) -> _Draft | None:
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
    tells = mechanism in ("lie", "garble", "stale-then-corrected")
    secret = mechanism == "secret-observation"
    w_tell = (
        (
            _W_TELL
            * (2.0 if you >= 0 else 1.0)
            * (2.0 if mechanism == "stale-then-corrected" else 1.0)
        )
        if tells
        else 0.0
    )
    # in a self story, "you" mostly send garbled messages (what the other heard differs from
    # what you know) and mostly receive corrections
    p_you_sends = {"garble": 0.7, "stale-then-corrected": 0.3}.get(mechanism, 0.5)
    has_hidden = has_lie = has_garble = has_correction = has_absence = False
    if stairs:
        open_ = _thresholds(n_agents, w_tell, _W_LEAVE_STAIRS, _W_ENTER_STAIRS)
        shut = _thresholds(n_agents, w_tell, 0.0, _W_ENTER_STAIRS)
    else:
        open_ = shut = _thresholds(n_agents, w_tell)
    thresholds = open_
    bits = _BITS
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
            if hidden_ok and present != full and xs[i] < 0.55:
                absent = bits[full & ~present]
                hidden = 1 << absent[int(xs[i + 1] * len(absent))]
                if len(absent) >= 2 and xs[i + 2] < 0.2:
                    hidden |= 1 << absent[int(xs[i + 3] * len(absent))]
                has_hidden = True
            i += 4
            obs = present | hidden
            if obs != full:
                has_absence = True
            rec = (_MOVE, dest, obs, present)
            add_record(rec)
            if secret:
                add_neutral((_MOVE, dest, present, present))
                openly.append((_MOVE, dest, obs, obs))
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
            stale = None
            if mechanism == "stale-then-corrected" and told:
                # r was told something now stale, and s knows where it really is
                stale = [
                    (s, r)
                    for r in told
                    if told[r] != where[0]
                    for s in range(n_agents)
                    if s != r and belief[s] == where[0]
                ]
                if stale and you >= 0:
                    stale = [p for p in stale if p[1] == you] or stale
            if stale and xs[i] < 0.95:  # a correction: someone who knows better writes again
                s, r = stale[int(xs[i + 1] * len(stale))]
            elif you >= 0 and xs[i] < 0.88:  # "you" take part in most messages of a self story
                other = int(xs[i + 1] * (n_agents - 1))
                if other >= you:
                    other += 1
                s, r = (you, other) if xs[i + 2] < p_you_sends else (other, you)
            else:
                s = int(xs[i + 1] * n_agents)
                r = int(xs[i + 2] * (n_agents - 1))
                if r >= s:
                    r += 1
            i += 3
            own = belief[s]
            claimed = received = own
            neutral_rec: tuple[Any, ...] | None = (_TELL, s, r, own, own)
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
            records.append((_TELL, s, r, claimed, received))
            if neutral_rec is not None:
                neutral.append(neutral_rec)
            belief[r] = received
            told[r] = received
            events.append(("tell", s, r, 0, claimed, received))

    needed = {
        "absence": True,
        "secret-observation": has_hidden,
        "lie": has_lie,
        "garble": has_garble,
        "stale-then-corrected": has_correction,
    }[mechanism]
    if not needed or (hidden_ok and not has_hidden):
        return None
    flags = (has_absence, has_hidden, has_lie, has_garble, has_correction)
    return _Draft(
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


# a chain's preference rank: (identifiable lures, decisive mechanism wanted and found, your own
# belief distinct from the lures); tuples of bools compare as wanted (True beats False)
Rank = tuple[bool, bool, bool]


def _choose(
    x: float,
    draft: _Draft,
    n_agents: int,
    depth: str,
    belief: str,
    mechanism: str,
    require: bool,
) -> tuple[tuple[int, ...], Rank] | None:
    """Pick (with the uniform float ``x``) a qualifying chain as agent indices, and its rank;
    None when no chain of this story qualifies. Only chains of the best rank among them are
    drawn from. ``require``: a chain whose lures are not identifiable does not qualify."""
    reality = draft.reality
    if depth == "R0":
        wrong = any(b != reality for b in draft.own)
        return ((), (True, True, True)) if wrong == (belief == "false") else None
    table = _table(n_agents, draft.initial[0], draft.records)
    want_false = belief == "false"
    own = table[draft.you][0] if depth == "R2-self" else -1
    # (first agent, tail mask, chains, identifiable lures, your own belief apart from them)
    found: list[tuple[int, int, tuple[tuple[int, ...], ...], bool, bool]] = []
    for a1, mask, subgroups in _chain_groups(n_agents, depth, draft.you, want_false):
        row = table[a1]
        answer = row[mask]
        projection = row[0]
        if want_false:
            if answer in (reality, own):
                continue
            own_ok = own < 0 or (own != reality and own != projection)
            for shallower, truncations, chains in subgroups:
                for m in shallower:
                    if row[m] == answer:
                        break
                else:
                    # the lures: reality, the projection (row[0]) and the truncations
                    ident = not shallower or projection != reality
                    if ident:
                        for m in truncations:
                            if row[m] == reality or row[m] == projection:
                                ident = False
                                break
                    if ident or not require:
                        found.append((a1, mask, chains, ident, own_ok))
        elif answer == reality:
            for _, truncations, chains in subgroups:
                # a wrong truncation answer must not also be the projection's
                ident = True
                if projection != reality:
                    for m in truncations:
                        if row[m] == projection:
                            ident = False
                            break
                if ident or not require:
                    found.append((a1, mask, chains, ident, True))
    if not found:
        return None
    if want_false and decisive_feasible(depth, mechanism):
        if any(f[3] for f in found):  # identifiable lures come first: only those can win
            found = [f for f in found if f[3]]
        initial = draft.initial[0]
        ranks: list[Rank] = [
            (
                ident,
                any(
                    _beliefs_along(recs, initial, a1, (mask,))[0] != table[a1][mask]
                    for recs in draft.neutral
                ),
                own_ok,
            )
            for a1, mask, _, ident, own_ok in found
        ]
    else:
        ranks = [(ident, True, own_ok) for _, _, _, ident, own_ok in found]
    best = max(ranks)
    total = sum(len(f[2]) for f, r in zip(found, ranks, strict=True) if r == best)
    k = int(x * total)
    for (_, _, chains, _, _), rank in zip(found, ranks, strict=True):
        if rank != best:
            continue
        if k < len(chains):
            return chains[k], best
        k -= len(chains)
    raise AssertionError("unreachable")


def _beliefs_along(
    records: Sequence[tuple[Any, ...]], initial: Any, a1: int, masks: Sequence[int]
) -> list[Any]:
    """The beliefs of the chains with first agent ``a1`` and the tail ``masks`` (mask 0: the
    chain ``[a1]``), in one pass over ``records`` — the rules of :func:`_table`."""
    out = [initial] * len(masks)
    first = 1 << a1
    for rec in records:
        if rec[0] == _MOVE:
            if rec[2] & first:
                vis = rec[3]
                for j, m in enumerate(masks):
                    if not m & ~vis:
                        out[j] = rec[1]
        else:
            _, sender, recipient, claimed, received = rec
            pair = (1 << sender) | (1 << recipient)
            if first & pair:
                for j, m in enumerate(masks):
                    if not m & ~pair:
                        if a1 == recipient:
                            out[j] = received
                        elif m:
                            out[j] = claimed
    return out


def _causes(
    draft: _Draft, n_agents: int, mechanism: str, chain: Sequence[int]
) -> tuple[tuple[str, ...], ...]:
    """For each prefix of ``chain`` (element k: its first k agents; element 0, reality: none),
    the mechanisms of the story whose neutralisation changes that prefix's answer: absence
    (everyone absent sees every move, secret watchers stay secret), secret watching (the watchers
    do not watch, or watch openly), and the story's own message mechanism (truthful messages,
    ungarbled delivery, no corrections)."""
    if not chain:
        return ((),)
    a1 = chain[0]
    masks = [0]
    for a in chain[1:]:
        masks.append(masks[-1] | (1 << a))
    full = (1 << n_agents) - 1
    records = draft.records
    actual = _beliefs_along(records, draft.initial[0], a1, masks)
    if draft.features == ("absence",):  # no messages, no secret watchers: seeing every move,
        # every chain would believe reality, so absence is the cause of every wrong belief
        return ((), *(("absence",) if b != draft.reality else () for b in actual))

    def moves_seen(seen: Callable[[int, int], tuple[int, int]]) -> list[tuple[Any, ...]]:
        # the records with each move's (observers, visible) replaced
        return [(r[0], r[1], *seen(r[2], r[3])) if r[0] == _MOVE else r for r in records]

    variants: list[tuple[str, list[Sequence[tuple[Any, ...]]]]] = []
    if "absence" in draft.features:  # the absent see every move; secret watchers stay secret
        variants.append(("absence", [moves_seen(lambda obs, vis: (full, full & ~(obs & ~vis)))]))
    if "secret-observation" in draft.features:  # the watchers do not watch, or watch openly
        variants.append(
            (
                "secret-observation",
                [
                    moves_seen(lambda obs, vis: (vis, vis)),
                    moves_seen(lambda obs, vis: (obs, obs)),
                ],
            )
        )
    if mechanism in ("lie", "garble", "stale-then-corrected") and mechanism in draft.features:
        variants.append((mechanism, [draft.neutral[0]]))
    found: list[list[str]] = [[] for _ in masks]
    for name, alternatives in variants:
        changed = [False] * len(masks)
        for recs in alternatives:
            alt = _beliefs_along(recs, draft.initial[0], a1, masks)
            for j in range(len(masks)):
                changed[j] = changed[j] or alt[j] != actual[j]
        for j in range(len(masks)):
            if changed[j]:
                found[j].append(name)
    return ((), *(tuple(f) for f in found))


def _sample(xs: Sequence[float], pool: Sequence[str], k: int) -> list[str]:
    left = list(pool)
    return [left.pop(int(x * len(left))) for x in xs[:k]]


def _to_story(draft: _Draft, rng: np.random.Generator, n_agents: int) -> Story:
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


@dataclass(frozen=True)
class Drawn:
    """A generated story with its chosen question (before rendering).

    Fields: the story, the chain and target object, the cell, the mechanism's decisiveness for
    the chain (None for absence and R0), the features present, ``alt``: a uniform float used
    to pick the container looked in by a "no" judgment question of a true-belief story, and
    ``causes``: for each prefix of the chain (element k: its first k agents), the mechanisms
    whose neutralisation changes that prefix's answer (see :func:`generate_story`).
    """

    story: Story
    chain: tuple[str, ...]
    object: str
    depth: str
    belief: str
    mechanism: str
    decisive: bool | None
    features: tuple[str, ...]
    alt: float
    causes: tuple[tuple[str, ...], ...] = ()


def generate_story(
    rng: np.random.Generator,
    *,
    depth: str,
    belief: str,
    mechanism: str,
    length: int = 12,
    agents: int = 4,
    lures: str = "prefer",
) -> Drawn:
    """Draw one story of ``length`` events with ``agents`` agents and a chain of ``depth``
    whose belief is ``belief`` ("false": adversarially filtered; "true": equals reality).

    ``lures`` says what to do about chains whose wrong answers the error coder could not tell
    apart (see the module docstring): ``"prefer"`` avoids them when it can, ``"require"``
    never takes one (and at depth 2 and beyond needs ``REQUIRE_MIN_LENGTH`` events or more: a
    ValueError otherwise). Once a story qualifies, up to ``PREFER_DRAWS[lures]`` more are drawn
    looking for one that meets every preference (identifiable lures, a decisive mechanism, and
    under ``"require"`` your own belief apart from the lures), and the best found is kept.

    ``Drawn.causes`` lists, for each prefix of the chosen chain, the mechanisms whose
    neutralisation changes its answer: ``absence`` (absent agents see every move; secret
    watchers stay secret), ``secret-observation`` (the watchers do not watch, or watch openly)
    and the story's message mechanism (truthful, ungarbled, uncorrected messages).
    """
    _check_cell(depth, belief, mechanism, length, agents)
    if lures not in LURES:
        raise ValueError(f"unknown lures {lures!r}; expected one of {', '.join(LURES)}")
    if lures == "require" and DEPTH_N[depth] >= 2 and length < REQUIRE_MIN_LENGTH:
        raise ValueError(
            f"identifiable lures at {depth} need stories of at least {REQUIRE_MIN_LENGTH} "
            f"events (three places and the moves between the departures), got {length}"
        )
    hidden_ok = mechanism == "secret-observation" or depth == "R3-loop"
    stairs = DEPTH_N[depth] >= 2
    require = lures == "require"
    budget = PREFER_DRAWS[lures]
    best: tuple[_Draft, tuple[int, ...]] | None = None
    best_rank: Rank | None = None
    extra = 0
    for _ in range(MAX_ATTEMPTS):
        draft = _draw_story(rng, agents, length, mechanism, hidden_ok, depth == "R2-self", stairs)
        if best is not None:
            extra += 1
        if draft is not None:
            chosen = _choose(float(rng.random()), draft, agents, depth, belief, mechanism, require)
            if chosen is not None:
                idx, rank = chosen
                if best_rank is None or rank > best_rank:
                    best, best_rank = (draft, idx), rank
                    if all(rank) or (rank[0] and rank[1] and not require):
                        break  # (drawing on for your own belief only when lures are required)
        if best is not None and extra >= budget:
            break
    if best is None:
        raise RuntimeError(
            f"no {belief}-belief {depth} story found for {mechanism}, {length} events, "
            f"{agents} agents"
        )
    draft, idx = best
    causes = _causes(draft, agents, mechanism, idx)
    decisive = None if mechanism == "absence" or not idx else mechanism in causes[len(idx)]
    story = _to_story(draft, rng, agents)
    return Drawn(
        story=story,
        chain=tuple(story.agents[i] for i in idx),
        object=story.objects[0][0],
        depth=depth,
        belief=belief,
        mechanism=mechanism,
        decisive=decisive,
        features=draft.features,
        alt=float(rng.random()),
        causes=causes,
    )


def _check_cell(depth: str, belief: str, mechanism: str, length: int, agents: int) -> None:
    if depth not in DEPTH_N:
        raise ValueError(f"unknown depth {depth!r}; expected one of {', '.join(DEPTHS)}")
    if belief not in BELIEF_TYPES:
        raise ValueError(f"unknown belief type {belief!r}; expected false or true")
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"unknown mechanism {mechanism!r}; expected one of {', '.join(MECHANISMS)}"
        )
    if not feasible(depth, mechanism):
        raise ValueError(
            f"{depth} × {mechanism} is infeasible: an R3-loop false belief needs a secret watcher"
        )
    if not MIN_LENGTH <= length <= MAX_LENGTH:
        raise ValueError(f"length must be {MIN_LENGTH}..{MAX_LENGTH} events, got {length}")
    if not MIN_AGENTS <= agents <= MAX_AGENTS:
        raise ValueError(f"agents must be {MIN_AGENTS}..{MAX_AGENTS}, got {agents}")


# ---------------------------------------------------------------------------------------------
# items


def _item(
    drawn: Drawn,
    *,
    seed: int,
    params: dict[str, Any],
    form: str,
    chain: tuple[str, ...],
    question: str,
    selection: str,
    story_dict: dict[str, Any],
    story_id: str,
    looked: str | None = None,
    main_id: str | None = None,
) -> Item:
    story = drawn.story
    answers = chain_answers(story, chain, drawn.object)
    n = len(chain)
    belief_answer = answers[n]
    reality = answers[0]
    depth = depth_label(chain)
    choices = story.containers()
    truth: dict[str, Any] = {
        "answer": belief_answer,
        "reality": reality,
        "chain": list(chain),
        "object": drawn.object,
        "prefix_answers": answers[1:n],
        "projection": answers[1] if n else None,
        "initial": story.initial[drawn.object],
        "decisive": drawn.decisive if chain == drawn.chain else None,
        "story": story_dict,
    }
    if YOU in story.agents:
        truth["self_belief"] = chain_answers(story, (YOU,), drawn.object)[1]
    if question == "belief":
        text = belief_question(chain, drawn.object)
        answer_spec: dict[str, Any] = {"kind": "choice", "choices": choices}
        prompt_choices: list[str] | None = choices
    elif question == "behaviour":
        text = behaviour_question(chain, drawn.object)
        answer_spec = {"kind": "choice", "choices": choices}
        prompt_choices = choices
    else:
        assert looked is not None
        text = judgment_question(chain, drawn.object, looked)
        truth["belief"] = belief_answer
        truth["looked"] = looked
        truth["answer"] = "yes" if looked == belief_answer else "no"
        answer_spec = {"kind": "yesno"}
        prompt_choices = None
    false_belief = belief_answer != reality
    causes = list(drawn.causes[n]) if false_belief and n < len(drawn.causes) else []
    if depth == "R0" and chain == drawn.chain:
        false_belief = drawn.belief == "false"
    meta: dict[str, Any] = {
        "block": params.get("block"),
        "role": params.get("role", "main"),
        "depth": depth,
        "depth_n": n,
        "reality_check": n == 0,
        "r2_self": depth == "R2-self",
        "belief": "false" if false_belief else "true",
        "mechanism": drawn.mechanism,
        "features": list(drawn.features),
        "causes": causes,
        "length": len(story.events),
        "agents": len(story.agents),
        "form": form,
        "question": question,
        "selection": selection,
        "story_id": story_id,
        "own_belief": truth["self_belief"] if depth == "R2-self" else None,
        "ambiguous": ambiguities(truth, answer_spec),
    }
    if main_id is not None:
        meta["companion_of"] = main_id
    return Item(
        family="nesttom",
        generator=GENERATOR,
        version=VERSION,
        seed=seed,
        params=params,
        prompt=render_prompt(story, form, text, prompt_choices),
        answer=answer_spec,
        truth=truth,
        meta=meta,
    )


def _cell_rng(
    seed: int, stream: int, index: int, cell: tuple[str, str, str, int, int]
) -> np.random.Generator:
    """The generator of one story: seeded with a 64-bit digest of ``(seed, stream, index,
    depth, belief, mechanism, length, agents)`` (one 64-bit integer seeds fastest)."""
    material = canonical_json([seed, stream, index, *cell])
    return np.random.default_rng(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def _story_items(
    seed: int,
    stream: int,
    index: int,
    cell: tuple[str, str, str, int, int],
    form: str,
    judgment_yes: bool,
    *,
    applied: bool,
    companions: bool,
    block: str | None = None,
    lures: str = "prefer",
) -> list[Item]:
    """The items of one story: the main belief item, then (optionally) the prefix companions and
    the applied questions. Every item's params name its role, so each can be regenerated."""
    depth, belief, mechanism, length, agents = cell
    drawn = generate_story(
        _cell_rng(seed, stream, index, cell),
        depth=depth,
        belief=belief,
        mechanism=mechanism,
        length=length,
        agents=agents,
        lures=lures,
    )
    story_dict = drawn.story.to_dict(questions=False)
    story_id = content_hash(story_dict)
    base = {
        "stream": stream,
        "index": index,
        "depth": depth,
        "belief": belief,
        "mechanism": mechanism,
        "length": length,
        "agents": agents,
        "form": form,
        "lures": lures,
        "block": block,
    }
    common: dict[str, Any] = {
        "seed": seed,
        "form": form,
        "story_dict": story_dict,
        "story_id": story_id,
    }
    selection = "adversarial" if belief == "false" else "control"
    out = [
        _item(
            drawn,
            params={**base, "role": "main"},
            chain=drawn.chain,
            question="belief",
            selection=selection,
            **common,
        )
    ]
    if companions:
        for k in range(len(drawn.chain)):
            out.append(
                _item(
                    drawn,
                    params={**base, "role": f"prefix:{k}"},
                    chain=drawn.chain[:k],
                    question="belief",
                    selection="companion",
                    main_id=out[0].id,
                    **common,
                )
            )
    if applied and depth in APPLIED_DEPTHS:
        out.append(
            _item(
                drawn,
                params={**base, "role": "behaviour"},
                chain=drawn.chain,
                question="behaviour",
                selection=selection,
                **common,
            )
        )
        answer = out[0].truth["answer"]
        if judgment_yes:
            looked = answer
        elif belief == "false":
            looked = out[0].truth["reality"]  # the reality-leak lure
        else:
            others = [c for c in drawn.story.containers() if c != answer]
            looked = others[min(int(drawn.alt * len(others)), len(others) - 1)]
        out.append(
            _item(
                drawn,
                params={**base, "role": "judgment", "judgment": "yes" if judgment_yes else "no"},
                chain=drawn.chain,
                question="judgment",
                selection=selection,
                looked=looked,
                **common,
            )
        )
    return out


def _as_tuple(value: int | Sequence[int]) -> tuple[int, ...]:
    return (value,) if isinstance(value, int) else tuple(value)


def cell_of(
    index: int,
    *,
    depths: Sequence[str],
    belief_types: Sequence[str],
    mechanisms: Sequence[str],
    forms: Sequence[str],
    lengths: Sequence[int],
    agents: Sequence[int],
) -> tuple[tuple[str, str, str, int, int], str, bool]:
    """The cell, surface form and judgment polarity of item ``index`` of a crossed design.

    Depth varies fastest, then belief type, so any run of ``len(depths) * len(belief_types)``
    items is balanced. Within a (depth, belief) cell, the k-th item takes the digits of k in the
    mixed radix (mechanisms, forms, lengths, agent counts) and shifts each factor by the digits
    below it: every full cycle still crosses all levels once, and every factor changes from one
    item to the next, so even a short run covers the levels of each factor. Only the feasible
    mechanisms of a depth are used. Judgments alternate yes/no.
    """
    nd, nb = len(depths), len(belief_types)
    depth = depths[index % nd]
    belief = belief_types[(index // nd) % nb]
    k = index // (nd * nb)
    mechs = [m for m in mechanisms if feasible(depth, m)]
    if not mechs:
        raise ValueError(f"no feasible mechanism for {depth} among {list(mechanisms)}")
    digits = []
    rest = k
    for size in (len(mechs), len(forms), len(lengths), len(agents)):
        digits.append(rest % size)
        rest //= size
    mechanism = mechs[digits[0]]
    form = forms[(digits[1] + digits[0]) % len(forms)]
    length = lengths[(digits[2] + digits[1] + digits[0]) % len(lengths)]
    n_agents = agents[(digits[3] + digits[2] + digits[1] + digits[0]) % len(agents)]
    return (depth, belief, mechanism, length, n_agents), form, k % 2 == 0


def generate_items(
    seed: int,
    n: int,
    *,
    depths: Sequence[str] = DEPTHS,
    length: int | Sequence[int] = 12,
    agents: int | Sequence[int] = 4,
    mechanisms: Sequence[str] = MECHANISMS,
    forms: Sequence[str] = FORMS,
    belief_types: Sequence[str] = BELIEF_TYPES,
    applied: bool = False,
    companions: bool | Collection[str] = False,
    stream: int = 0,
    lures: str = "prefer",
    block: str | None = None,
) -> list[Item]:
    """Generate ``n`` stories' items, deterministically from ``seed``.

    Each story gives one belief item (``meta["question"] == "belief"``) in the cell
    :func:`cell_of` assigns to its index (factors fully crossed over the given levels; infeasible
    depth × mechanism cells are skipped). ``applied`` adds, for R1–R3 stories, a behaviour item
    and a judgment item on the same story and chain (yes and no alternate); ``companions`` (True,
    or the belief types whose stories get them) adds the belief items of every proper prefix of
    the chain (R0 included) on the same story, for joint accuracy. ``stream`` separates
    independent suites drawn from one seed. ``lures`` is :func:`generate_story`'s; ``block``
    names the suite block in ``meta["block"]``. Both are kept in ``params``, so that
    :func:`regenerate` gives the same item.
    """
    _check_seed(seed)
    if n < 0:
        raise ValueError("n must be non-negative")
    lengths = _as_tuple(length)
    agent_counts = _as_tuple(agents)
    for name, values, allowed in (
        ("depth", depths, DEPTHS),
        ("mechanism", mechanisms, MECHANISMS),
        ("form", forms, FORMS),
        ("belief type", belief_types, BELIEF_TYPES),
    ):
        if not values:
            raise ValueError(f"no {name} given")
        for v in values:
            if v not in allowed:
                raise ValueError(f"unknown {name} {v!r}; expected one of {', '.join(allowed)}")
    if not lengths or not agent_counts:
        raise ValueError("no length or agent count given")
    if lures not in LURES:
        raise ValueError(f"unknown lures {lures!r}; expected one of {', '.join(LURES)}")
    out: list[Item] = []
    for i in range(n):
        cell, form, yes = cell_of(
            i,
            depths=depths,
            belief_types=belief_types,
            mechanisms=mechanisms,
            forms=forms,
            lengths=lengths,
            agents=agent_counts,
        )
        with_companions = companions is True or (
            not isinstance(companions, bool) and cell[1] in companions
        )
        out.extend(
            _story_items(
                seed,
                stream,
                i,
                cell,
                form,
                yes,
                applied=applied,
                companions=with_companions,
                block=block,
                lures=lures,
            )
        )
    return out


def _check_seed(seed: int) -> None:
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")


def regenerate(item: Item) -> Item:
    """Regenerate ``item`` from its generator, version, seed and params; raises ValueError when
    the item is not a NestToM item of this version or its content differs."""
    if item.family != "nesttom" or item.generator != GENERATOR:
        raise ValueError(f"{item.id}: not a NestToM item")
    if item.version != VERSION:
        raise ValueError(f"{item.id}: generated by version {item.version}, this is {VERSION}")
    p = item.params
    role = p["role"]
    cell = (p["depth"], p["belief"], p["mechanism"], int(p["length"]), int(p["agents"]))
    items = _story_items(
        item.seed,
        int(p["stream"]),
        int(p["index"]),
        cell,
        p["form"],
        p.get("judgment", "yes") == "yes",
        applied=role in ("behaviour", "judgment"),
        companions=str(role).startswith("prefix:"),
        block=p.get("block"),
        lures=p.get("lures", "prefer"),
    )
    for candidate in items:
        if candidate.params == p:
            if candidate.id != item.id:
                raise ValueError(f"{item.id}: regenerates as {candidate.id}")
            return candidate
    raise ValueError(f"{item.id}: no item with role {role!r} in its story")
