"""The NestToM-P generator (seed 002 §14.1): random stories, adversarially selected chains.

One story per item cell ``(depth, belief type, mechanism, length, agents)``:

1. A story of exactly ``length`` events is drawn for the mechanism: agents leave and enter,
   the target object is moved, distractor objects are moved, and, by mechanism, absent agents
   secretly watch moves (``secret-observation``), private messages carry lies (``lie``), arrive
   garbled (``garble``), or are later corrected by a second message to the same recipient
   (``stale-then-corrected``). An ``absence`` story has no secret watchers and no messages.
2. The belief of every chain is tabulated in one pass (a chain's belief depends only on its first
   agent and the set of the others), and a chain of the requested depth is drawn uniformly among
   those that qualify:

   - **false belief**: the answer differs from reality and from the answer of every shallower
     prefix chain (the adversarial filter); for R2-self also from "your" own belief. Among those,
     chains for which the story's mechanism is *decisive* (neutralising it changes the answer:
     secret watchers not watching, or watching openly; messages truthful; delivery ungarbled;
     no corrections) are preferred when there are any, and a false-belief item is drawn again
     (up to ``DECISIVE_TRIES`` qualifying stories) until one is found where that is feasible
     (:func:`decisive_feasible`); ``truth["decisive"]`` records the outcome;
   - **true belief** (control): the answer equals reality.

   R0 asks for reality: its "false" cell is a story in which some agent's own belief differs
   from reality, its "true" cell one in which every agent's own belief is right.
   If no chain qualifies, a new story is drawn (from the same seeded stream).
3. The ground truth of the chosen question is recomputed by the reference semantics
   (:func:`nesttom.semantics.chain_answers`) from the finished :class:`~nesttom.model.Story`.

R3-loop chains ``[a, b, a]`` differ from their prefix ``[a, b]`` only through a move that ``a``
watched in secret while ``b`` was present (the two chains see the same messages and otherwise the
same moves), so R3-loop stories always allow secret watchers, and the R3-loop × absence cell is
infeasible (it would be the secret-observation cell). ``meta["features"]`` lists every mechanism
present in a story.

Randomness: one ``numpy.random.Generator`` per item, seeded with
``(seed, stream, index, cell)``; the surface form is not in the seed, so the same index in another
form tells the same story. Same seed and parameters, byte-identical items.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import product
from typing import Any

import numpy as np

from mindledger.canonical import canonical_json, content_hash
from mindledger.items import Item
from nesttom.model import Enter, Event, Leave, Move, Story, Tell
from nesttom.render import (
    FORMS,
    YOU,
    behaviour_question,
    belief_question,
    judgment_question,
    render_prompt,
)
from nesttom.semantics import MOVE, TELL, chain_answers

__all__ = [
    "APPLIED_DEPTHS",
    "BELIEF_TYPES",
    "DEPTHS",
    "DEPTH_N",
    "FORMS",
    "GENERATOR",
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
VERSION = "1.0.0"

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
DECISIVE_TRIES = 100  # qualifying stories tried for one where the mechanism is decisive

_MOVE, _TELL = MOVE, TELL  # compiled record kinds, shared with nesttom.semantics


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
    The same rules as :func:`nesttom.semantics.belief_of_key`, for all chains at once."""
    size = 1 << n_agents
    table = [[initial] * size for _ in range(n_agents)]
    for rec in records:
        if rec[0] == _MOVE:
            dest = rec[1]
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


# (first agent, tail masks of the shallower prefixes, tail mask of the chain, the chains)
Group = tuple[int, tuple[int, ...], int, tuple[tuple[int, ...], ...]]


@cache
def _chain_groups(n_agents: int, depth: str, you: int, false_belief: bool) -> tuple[Group, ...]:
    """Every chain of a depth class, grouped so that one table lookup per group decides them
    all. ``you`` is the index of "you" (or -1).

    For false belief, chains are grouped by first agent, the *set* of shallower tail masks and
    the chain's own tail mask (the adversarial filter depends on nothing else), and chains whose
    tail equals a shallower one are dropped: their answer always equals that prefix's. For true
    belief only the first agent and the chain's tail mask matter."""
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
    groups: dict[tuple[int, tuple[int, ...], int], list[tuple[int, ...]]] = {}
    for c in chains:
        masks = [0]
        for a in c[1:]:
            masks.append(masks[-1] | (1 << a))
        final = masks[-1]
        if false_belief:
            if final in masks[:-1]:
                continue
            key = (c[0], tuple(sorted(set(masks[:-1]))), final)
        else:
            key = (c[0], (), final)
        groups.setdefault(key, []).append(c)
    return tuple((a1, shallower, final, tuple(cs)) for (a1, shallower, final), cs in groups.items())


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


_W_MOVE, _W_LEAVE, _W_ENTER, _W_DISTRACT, _W_TELL = 3.0, 2.0, 1.3, 0.8, 1.6
_NC = N_CONTAINERS


@cache
def _thresholds(n_agents: int, w_tell: float) -> tuple[tuple[float, ...], ...]:
    """Per set of present agents: the cumulative weights of move, leave, enter, distractor move
    and (the rest) message — a move needs someone present, a leave two, an enter someone out."""
    out = []
    for present in range(1 << n_agents):
        inside = len(_BITS[present])
        c_move = _W_MOVE if inside else 0.0
        c_leave = c_move + (_W_LEAVE if inside >= 2 else 0.0)
        c_enter = c_leave + (_W_ENTER if inside < n_agents else 0.0)
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
    thresholds = _thresholds(n_agents, w_tell)
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
            dest = int(xs[i + 1] * last_box)
            if dest == where[0]:
                dest = last_box
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
            add_event(("move", mover, 0, dest, bits[hidden]))
        elif x < c_leave:
            who = members[int(xs[i] * len(members))]
            i += 1
            present &= ~(1 << who)
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
                claimed = received = int(xs[i + 1] * (_NC - 1))
                if claimed == own:
                    claimed = received = _NC - 1
                has_lie = True
            elif mechanism == "garble" and xs[i] < 0.45:
                received = int(xs[i + 1] * (_NC - 1))
                if received == claimed:
                    received = _NC - 1
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
    )


def _choose(
    x: float, draft: _Draft, n_agents: int, depth: str, belief: str, mechanism: str
) -> tuple[tuple[int, ...], bool | None] | None:
    """Pick (with the uniform float ``x``) a qualifying chain as agent indices, and whether the
    mechanism is decisive for it; None when no chain of this story qualifies."""
    table = _table(n_agents, draft.initial[0], draft.records)
    reality = draft.reality
    if depth == "R0":
        wrong = any(row[0] != reality for row in table)
        return ((), None) if wrong == (belief == "false") else None
    want_false = belief == "false"
    own = table[draft.you][0] if depth == "R2-self" else -1
    found: list[tuple[int, int, tuple[tuple[int, ...], ...]]] = []
    for a1, shallower, mask, chains in _chain_groups(n_agents, depth, draft.you, want_false):
        row = table[a1]
        answer = row[mask]
        if want_false:
            if answer in (reality, own):
                continue
            for m in shallower:
                if row[m] == answer:
                    break
            else:
                found.append((a1, mask, chains))
        elif answer == reality:
            found.append((a1, mask, chains))
    if not found:
        return None
    if mechanism == "absence":
        flags: list[bool | None] = [None] * len(found)
    else:
        neutral = [_table(n_agents, draft.initial[0], recs) for recs in draft.neutral]
        flags = [any(t[a1][mask] != table[a1][mask] for t in neutral) for a1, mask, _ in found]
        if want_false and any(flags):
            found = [f for f, dec in zip(found, flags, strict=True) if dec]
            flags = [True] * len(found)
    total = sum(len(chains) for _, _, chains in found)
    k = int(x * total)
    for (_, _, chains), decisive in zip(found, flags, strict=True):
        if k < len(chains):
            return chains[k], decisive
        k -= len(chains)
    raise AssertionError("unreachable")


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
    the chain (None for absence and R0), the features present, and ``alt``: a uniform float used
    to pick the container looked in by a "no" judgment question of a true-belief story.
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


def generate_story(
    rng: np.random.Generator,
    *,
    depth: str,
    belief: str,
    mechanism: str,
    length: int = 12,
    agents: int = 4,
) -> Drawn:
    """Draw one story of ``length`` events with ``agents`` agents and a chain of ``depth``
    whose belief is ``belief`` ("false": adversarially filtered; "true": equals reality)."""
    _check_cell(depth, belief, mechanism, length, agents)
    hidden_ok = mechanism == "secret-observation" or depth == "R3-loop"
    want_decisive = belief == "false" and decisive_feasible(depth, mechanism)
    fallback: tuple[_Draft, tuple[int, ...], bool | None] | None = None
    qualifying = 0
    for _ in range(MAX_ATTEMPTS):
        draft = _draw_story(rng, agents, length, mechanism, hidden_ok, depth == "R2-self")
        if draft is None:
            continue
        chosen = _choose(float(rng.random()), draft, agents, depth, belief, mechanism)
        if chosen is None:
            continue
        qualifying += 1
        if want_decisive and not chosen[1]:
            if fallback is None:
                fallback = (draft, *chosen)
            if qualifying < DECISIVE_TRIES:
                continue
            draft, idx, decisive = fallback
        else:
            idx, decisive = chosen
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
        )
    raise RuntimeError(
        f"no {belief}-belief {depth} story found for {mechanism}, {length} events, {agents} agents"
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
    meta = {
        "depth": depth,
        "depth_n": n,
        "belief": "true" if belief_answer == reality else "false",
        "mechanism": drawn.mechanism,
        "features": list(drawn.features),
        "length": len(story.events),
        "agents": len(story.agents),
        "form": form,
        "question": question,
        "selection": selection,
        "story_id": story_id,
    }
    if depth == "R0":
        meta["belief"] = drawn.belief if chain == drawn.chain else meta["belief"]
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
    companions: bool = False,
    stream: int = 0,
) -> list[Item]:
    """Generate ``n`` stories' items, deterministically from ``seed``.

    Each story gives one belief item (``meta["question"] == "belief"``) in the cell
    :func:`cell_of` assigns to its index (factors fully crossed over the given levels; infeasible
    depth × mechanism cells are skipped). ``applied`` adds, for R1–R3 stories, a behaviour item
    and a judgment item on the same story and chain (yes and no alternate); ``companions`` adds
    the belief items of every proper prefix of the chain (R0 included) on the same story, for
    joint accuracy. ``stream`` separates independent suites drawn from one seed.
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
        out.extend(
            _story_items(seed, stream, i, cell, form, yes, applied=applied, companions=companions)
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
    )
    for candidate in items:
        if candidate.params == p:
            if candidate.id != item.id:
                raise ValueError(f"{item.id}: regenerates as {candidate.id}")
            return candidate
    raise ValueError(f"{item.id}: no item with role {role!r} in its story")
