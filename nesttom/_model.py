"""The story model: agents, objects, events and questions, and the validator of the story JSON.

A story has agents, objects with initial containers (common knowledge), the agents present at
the start (default: everyone) and an ordered list of events:

- :class:`Move` — an agent moves an object to a container. Seen by everyone present, plus the
  ``hidden`` watchers: absent agents secretly watching, whom nobody else knows to have seen it.
- :class:`Leave`, :class:`Enter` — change who is present.
- :class:`Tell` — a private message from one agent to another about an object's container:
  ``claimed`` is what the sender said, ``received`` what the recipient heard (equal unless the
  message was garbled).

The JSON form (read by ``mindledger nesttom answer``)::

    {"agents": ["Ann", "Ben"], "objects": {"key": "drawer"}, "present": ["Ann", "Ben"],
     "events": [{"type": "leave", "agent": "Ben"},
                {"type": "move", "agent": "Ann", "object": "key", "to": "safe", "hidden": []},
                {"type": "enter", "agent": "Ben"},
                {"type": "tell", "from": "Ann", "to": "Ben", "object": "key",
                 "claimed": "box", "received": "box"}],
     "questions": [{"chain": ["Ann", "Ben"], "object": "key"}]}

``present`` defaults to all agents, ``received`` to ``claimed``, ``hidden`` to none, and
``questions`` to none. :func:`validate_story` turns that form into a :class:`Story` or raises
:class:`~mindledger.errors.InputError` naming the event index or question and the problem.

:func:`compile_story` precomputes a story's observer sets for :mod:`nesttom._semantics`; it lives
here, beside the story it compiles, so that :attr:`Story.compiled` needs nothing above it.
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mindledger.errors import InputError
from mindledger.words import counted

__all__ = [
    "MOVE",
    "TELL",
    "Compiled",
    "Enter",
    "Event",
    "Leave",
    "Move",
    "Question",
    "Story",
    "Tell",
    "compile_story",
    "event_to_dict",
    "validate_story",
]


@dataclass(frozen=True, slots=True)
class Move:
    """``agent`` moves ``object`` to ``to``; ``hidden`` absent agents watch in secret."""

    agent: str
    object: str
    to: str
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Leave:
    """``agent`` leaves (stops seeing moves)."""

    agent: str


@dataclass(frozen=True, slots=True)
class Enter:
    """``agent`` comes back (sees moves again; containers are opaque, so sees nothing else)."""

    agent: str


@dataclass(frozen=True, slots=True)
class Tell:
    """A private message from ``sender`` to ``recipient`` saying where ``object`` is."""

    sender: str
    recipient: str
    object: str
    claimed: str
    received: str


Event = Move | Leave | Enter | Tell


@dataclass(frozen=True, slots=True)
class Question:
    """What ``chain[0]`` believes ``chain[1]`` believes … about ``object`` (empty: reality)."""

    chain: tuple[str, ...]
    object: str


@dataclass(frozen=True)
class Story:
    """A validated story. ``objects`` maps each object to its initial container, in order."""

    agents: tuple[str, ...]
    objects: tuple[tuple[str, str], ...]
    present: tuple[str, ...]
    events: tuple[Event, ...]
    questions: tuple[Question, ...] = field(default=())

    @property
    def initial(self) -> dict[str, str]:
        """Each object's initial container."""
        return dict(self.objects)

    @cached_property
    def compiled(self) -> Compiled:
        """The story with per-event observer sets precomputed (built once, on first use)."""
        return compile_story(self)

    def containers(self) -> list[str]:
        """Every container the story mentions, sorted."""
        found = {c for _, c in self.objects}
        for ev in self.events:
            if isinstance(ev, Move):
                found.add(ev.to)
            elif isinstance(ev, Tell):
                found.add(ev.claimed)
                found.add(ev.received)
        return sorted(found)

    def to_dict(self, *, questions: bool = True) -> dict[str, Any]:
        """The JSON form (the inverse of :func:`validate_story`)."""
        out: dict[str, Any] = {
            "agents": list(self.agents),
            "objects": dict(self.objects),
            "present": list(self.present),
            "events": [event_to_dict(ev) for ev in self.events],
        }
        if questions:
            out["questions"] = [
                {"chain": list(q.chain), "object": q.object} for q in self.questions
            ]
        return out


# compiled event records, per object:
#   (MOVE, destination, observer mask, visible mask)   visible = present (observers minus hidden)
#   (TELL, sender index, recipient index, claimed, received)
MOVE = 0
TELL = 1


@dataclass(frozen=True)
class Compiled:
    """A story prepared for fast answers.

    Fields:
        index: agent name -> bit position.
        initial: object -> initial container.
        reality: object -> container after all moves.
        records: object -> the compiled moves and tells about that object, in story order.
        positions: object -> the story event index of each record.
    """

    index: Mapping[str, int]
    initial: Mapping[str, str]
    reality: Mapping[str, str]
    records: Mapping[str, tuple[tuple[Any, ...], ...]]
    positions: Mapping[str, tuple[int, ...]]


def compile_story(story: Story) -> Compiled:
    """Precompute every move's observer and visible agent sets as bit masks (one pass)."""
    index = {a: i for i, a in enumerate(story.agents)}
    present = 0
    for a in story.present:
        present |= 1 << index[a]
    initial = dict(story.objects)
    where = dict(initial)
    records: dict[str, list[tuple[Any, ...]]] = {o: [] for o in initial}
    positions: dict[str, list[int]] = {o: [] for o in initial}
    for pos, ev in enumerate(story.events):
        if isinstance(ev, Move):
            hidden = 0
            for h in ev.hidden:
                hidden |= 1 << index[h]
            records[ev.object].append((MOVE, ev.to, present | hidden, present))
            positions[ev.object].append(pos)
            where[ev.object] = ev.to
        elif isinstance(ev, Leave):
            present &= ~(1 << index[ev.agent])
        elif isinstance(ev, Enter):
            present |= 1 << index[ev.agent]
        elif isinstance(ev, Tell):
            records[ev.object].append(
                (TELL, index[ev.sender], index[ev.recipient], ev.claimed, ev.received)
            )
            positions[ev.object].append(pos)
    return Compiled(
        index=index,
        initial=initial,
        reality=where,
        records={o: tuple(r) for o, r in records.items()},
        positions={o: tuple(p) for o, p in positions.items()},
    )


def event_to_dict(ev: Event) -> dict[str, Any]:
    """The JSON form of one event."""
    if isinstance(ev, Move):
        return {
            "type": "move",
            "agent": ev.agent,
            "object": ev.object,
            "to": ev.to,
            "hidden": list(ev.hidden),
        }
    if isinstance(ev, Leave):
        return {"type": "leave", "agent": ev.agent}
    if isinstance(ev, Enter):
        return {"type": "enter", "agent": ev.agent}
    return {
        "type": "tell",
        "from": ev.sender,
        "to": ev.recipient,
        "object": ev.object,
        "claimed": ev.claimed,
        "received": ev.received,
    }


_EVENT_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # type: (required keys, optional keys) besides "type"
    "move": (frozenset({"agent", "object", "to"}), frozenset({"hidden"})),
    "leave": (frozenset({"agent"}), frozenset()),
    "enter": (frozenset({"agent"}), frozenset()),
    "tell": (frozenset({"from", "to", "object", "claimed"}), frozenset({"received"})),
}


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected a non-empty string, got {value!r}", where=where)
    return value


def _known(names: Iterable[str], limit: int = 10) -> str:
    """Up to ``limit`` names for an error message, and how many more there are."""
    listed = list(itertools.islice(names, limit + 1))
    if len(listed) <= limit:
        return ", ".join(listed)
    return ", ".join(listed[:limit]) + ", …"


def _agent(value: Any, where: str, agents: Mapping[str, int]) -> str:
    name = _string(value, where)
    if name not in agents:
        known = f"the story's {counted(len(agents), 'agent')}: {_known(agents)}"
        raise InputError(f"unknown agent {name[:60]!r} ({known})", where=where)
    return name


def _object(value: Any, where: str, objects: Mapping[str, str]) -> str:
    name = _string(value, where)
    if name not in objects:
        known = f"the story's {counted(len(objects), 'object')}: {_known(objects)}"
        raise InputError(f"unknown object {name[:60]!r} ({known})", where=where)
    return name


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {type(value).__name__}", where=where)
    return value


def _chain(value: Any, where: str, agents: Mapping[str, int]) -> tuple[str, ...]:
    items = _list(value, where)
    chain = tuple(_agent(a, f"{where}[{i}]", agents) for i, a in enumerate(items))
    for i in range(1, len(chain)):
        if chain[i] == chain[i - 1]:
            raise InputError(
                f"the chain names {chain[i]!r} twice in a row (positions {i - 1} and {i})",
                where=where,
            )
    return chain


def validate_question(value: Any, where: str, story: Story) -> Question:
    """Check one question (``{"chain": [...], "object": ...}``) against ``story``."""
    if not isinstance(value, Mapping):
        raise InputError(f"expected an object, got {type(value).__name__}", where=where)
    for key in ("chain", "object"):
        if key not in value:
            raise InputError(f"missing field {key!r}", where=where)
    agents = {a: i for i, a in enumerate(story.agents)}
    chain = _chain(value["chain"], f"{where}.chain", agents)
    obj = _object(value["object"], f"{where}.object", story.initial)
    return Question(chain, obj)


def validate_story(data: Any) -> Story:
    """Turn the JSON form of a story into a :class:`Story`, or raise
    :class:`~mindledger.errors.InputError` naming the field, event index or question.

    Rejected: a missing field, a value of the wrong type, an unknown agent or object, an unknown
    event type or event field, a mover who is absent, a hidden watcher who is present (or named
    twice), an agent who leaves while absent or enters while present, a message to oneself, and a
    question whose chain names the same agent twice in a row. Unknown keys at the top level and
    in questions are ignored (questions are echoed back by the CLI); so are unknown keys inside
    an event (annotations such as ``"note"``), except near-misses of a real field, because a
    misspelt ``hidden`` or ``received`` would silently change the answer.
    """
    if not isinstance(data, Mapping):
        raise InputError(f"a story must be a JSON object, got {type(data).__name__}")
    for key in ("agents", "objects", "events"):
        if key not in data:
            raise InputError(f"missing field {key!r}", where="story")

    raw_agents = _list(data["agents"], "agents")
    if not raw_agents:
        raise InputError("a story needs at least one agent", where="agents")
    agents: dict[str, int] = {}
    for i, a in enumerate(raw_agents):
        name = _string(a, f"agents[{i}]")
        if name in agents:
            raise InputError(f"agent {name!r} is listed twice", where=f"agents[{i}]")
        agents[name] = i

    raw_objects = data["objects"]
    if not isinstance(raw_objects, Mapping) or not raw_objects:
        raise InputError(
            "expected a non-empty object mapping each object to its container", where="objects"
        )
    objects: dict[str, str] = {}
    for obj, container in raw_objects.items():
        objects[_string(obj, "objects")] = _string(container, f"objects.{obj}")

    if data.get("present") is None:
        present_list = list(agents)
    else:
        present_list = []
        seen: set[str] = set()
        for i, a in enumerate(_list(data["present"], "present")):
            name = _agent(a, f"present[{i}]", agents)
            if name in seen:
                raise InputError(f"agent {name!r} is listed twice", where=f"present[{i}]")
            seen.add(name)
            present_list.append(name)
    present = set(present_list)

    events: list[Event] = []
    for i, ev in enumerate(_list(data["events"], "events")):
        where = f"events[{i}]"
        if not isinstance(ev, Mapping):
            raise InputError(f"expected an object, got {type(ev).__name__}", where=where)
        if "type" not in ev:
            raise InputError("missing field 'type'", where=where)
        kind = ev["type"]
        if not isinstance(kind, str) or kind not in _EVENT_KEYS:
            shown = repr(kind) if isinstance(kind, str) else f"a {type(kind).__name__}"
            raise InputError(
                f"unknown event type {shown[:60]} (expected move, leave, enter or tell)",
                where=f"{where}.type",
            )
        required, optional = _EVENT_KEYS[kind]
        for key in sorted(required):
            if key not in ev:
                raise InputError(f"missing field {key!r} in a {kind} event", where=where)
        known = required | optional | {"type"}
        for key in sorted(set(ev) - known):
            # Annotations (a "note", a "lie": true flag) are ignored, but a near-miss of a field
            # that changes the answer (a misspelt "hidden" or "received") is refused.
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.75)
            if close:
                raise InputError(
                    f"unknown field {key!r} in a {kind} event: did you mean {close[0]!r}?",
                    where=f"{where}.{key}",
                )
        if kind == "move":
            mover = _agent(ev["agent"], f"{where}.agent", agents)
            obj = _object(ev["object"], f"{where}.object", objects)
            to = _string(ev["to"], f"{where}.to")
            if mover not in present:
                raise InputError(
                    f"{mover} moves the {obj} but is not present", where=f"{where}.agent"
                )
            hidden: list[str] = []
            raw_hidden = ev.get("hidden")
            for j, h in enumerate(
                _list(raw_hidden if raw_hidden is not None else [], f"{where}.hidden")
            ):
                name = _agent(h, f"{where}.hidden[{j}]", agents)
                if name in present:
                    raise InputError(
                        f"hidden watcher {name} is present (a hidden watcher must be absent)",
                        where=f"{where}.hidden[{j}]",
                    )
                if name in hidden:
                    raise InputError(
                        f"hidden watcher {name} is listed twice", where=f"{where}.hidden[{j}]"
                    )
                hidden.append(name)
            events.append(Move(mover, obj, to, tuple(hidden)))
        elif kind == "leave":
            who = _agent(ev["agent"], f"{where}.agent", agents)
            if who not in present:
                raise InputError(f"{who} leaves but is not present", where=f"{where}.agent")
            present.discard(who)
            events.append(Leave(who))
        elif kind == "enter":
            who = _agent(ev["agent"], f"{where}.agent", agents)
            if who in present:
                raise InputError(f"{who} enters but is already present", where=f"{where}.agent")
            present.add(who)
            events.append(Enter(who))
        else:
            sender = _agent(ev["from"], f"{where}.from", agents)
            recipient = _agent(ev["to"], f"{where}.to", agents)
            if sender == recipient:
                raise InputError(f"{sender} sends a message to themself", where=f"{where}.to")
            obj = _object(ev["object"], f"{where}.object", objects)
            claimed = _string(ev["claimed"], f"{where}.claimed")
            raw_received = ev.get("received")
            received = (
                claimed if raw_received is None else _string(raw_received, f"{where}.received")
            )
            events.append(Tell(sender, recipient, obj, claimed, received))

    story = Story(
        agents=tuple(agents),
        objects=tuple(objects.items()),
        present=tuple(present_list),
        events=tuple(events),
    )
    raw_questions = data.get("questions")
    if raw_questions is None:
        return story
    questions = tuple(
        validate_question(q, f"questions[{i}]", story)
        for i, q in enumerate(_list(raw_questions, "questions"))
    )
    return Story(story.agents, story.objects, story.present, story.events, questions)
