"""Import the public Hi-ToM data (Wu et al. 2023) as items of the NestToM form, for test B3.

Each record becomes an item of family ``"hitom"`` carrying **Hi-ToM's own label** as its answer
(``truth["answer"]``), the same answer spec shape as NestToM items (the record's choices,
sorted), and ``meta["depth"]`` from its ``question_order``.

Stories without communication (no "told" and no "claimed" lines) are also parsed into the NestToM
event model and answered with NestToM semantics, and the report counts the labels that disagree.
Neither side is changed. Known reasons for disagreement (see ``shared/data/hi-tom/NOTES.md``):

- the released labels predate Hi-ToM's "fix permutation bug" commit (a mover's own move is
  sometimes ignored);
- Hi-ToM lets an agent who enters a room see where the objects in it are (and everyone present
  sees that); NestToM's containers are opaque. The report says how many disagreements vanish
  when that rule is emulated (a restated or revisited object's location is shown to everyone
  present).

Mapping: "X, Y and Z entered the R" enters the agents not present (entering the waiting room
makes anyone still in the room leave it); "X exited the R" leaves; "X moved the O to the C" is
a move; the first "The O is in the C" gives O's initial container; likes, dislikes, sightings,
lost items and "made no movements" are not events.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from os import PathLike
from typing import Any

from mindledger.canonical import content_hash
from mindledger.errors import InputError
from mindledger.items import Item
from nesttom._model import Enter, Event, Leave, Move, Story, Tell
from nesttom._scoring import normalize_answer
from nesttom._semantics import chain_answers

__all__ = [
    "HITOM_GENERATOR",
    "HITOM_VERSION",
    "import_hitom",
    "parse_hitom_question",
    "parse_hitom_story",
]

HITOM_GENERATOR = "hitom-import"
HITOM_VERSION = "1"

_HEADER = "Read the following story"
_NUMBER = re.compile(r"^\d+\s+")
_ENTER = re.compile(r"^(.+) entered the (\S+)\.$")
_EXIT = re.compile(r"^(\w+) exited the (\S+)\.$")
_IS_IN = re.compile(r"^The (\S+) is in the (\S+)\.$")
_MOVED = re.compile(r"^(\w+) moved the (\S+) to the (\S+)\.$")
_TOLD = re.compile(r"^(\w+) privately told (\w+) that the (\S+) is in the (\S+)\.$")
_CLAIMED = re.compile(r"^(\w+) publicly claimed that (?:the )?(\S+) is in the (\S+)\.$")
_NOISE = re.compile(
    r"^(\w+) (made no movements and stayed in the \S+ for 1 minute"
    r"|likes the \S+|dislikes the \S+|saw an? \w+|lost his \w+|lost her \w+)\.$"
)
_REALLY = re.compile(r"^Where is the (\S+) really\?$")
_NESTED = re.compile(r"^Where does (\w+) (?:really )?think ((?:\w+ thinks )*)the (\S+) is\?$")
_CHOICE = re.compile(r"(?:^|,\s*)[A-Z]+\.\s*([^,]+)")
WAITING_ROOM = "waiting_room"


def _split_names(text: str) -> list[str]:
    parts = re.split(r",\s*|\s+and\s+", text)
    return [p.strip() for p in parts if p.strip()]


def story_lines(text: str) -> list[str]:
    """The story's sentences, without the instruction header and the line numbers."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(_HEADER) or not re.search(r"\w", line):
            continue  # blank, the instruction, or a separator such as "***"
        out.append(_NUMBER.sub("", line))
    return out


def parse_hitom_question(question: str) -> tuple[list[str], str]:
    """``"Where does A think B thinks the O is?"`` → ``(["A", "B"], "O")``."""
    q = question.strip()
    m = _REALLY.match(q)
    if m:
        return [], m.group(1)
    m = _NESTED.match(q)
    if not m:
        raise InputError(f"unrecognised Hi-ToM question {question!r}", where="question")
    chain = [m.group(1), *re.findall(r"(\w+) thinks ", m.group(2))]
    return chain, m.group(3)


def parse_hitom_story(text: str, *, entry_rule: bool = False) -> tuple[Story, bool, list[str]]:
    """Parse a Hi-ToM story into the NestToM event model.

    Returns the story, whether it has communication (private tells or public claims), and the
    lines that are neither events nor known noise. Private tells become :class:`Tell` events
    (public claims have no NestToM counterpart and are skipped). With ``entry_rule``, Hi-ToM's
    rule is emulated: whenever a statement "The O is in the C" is made about an object already
    known, or agents enter a room holding known objects, everyone present sees where they are
    (a move of each such object to its own container, made by someone present).
    """
    agents: list[str] = []
    initial: dict[str, str] = {}
    where: dict[str, str] = {}
    room_of: dict[str, str] = {}
    present: set[str] = set()
    events: list[Event] = []
    unknown: list[str] = []
    communication = False
    room = ""

    def agent(name: str) -> str:
        if name not in agents:
            agents.append(name)
        return name

    def look(obj: str) -> None:
        if present:
            events.append(Move(sorted(present)[0], obj, where[obj]))

    for line in story_lines(text):
        if m := _ENTER.match(line):
            names = [agent(n) for n in _split_names(m.group(1))]
            target = m.group(2)
            if target == WAITING_ROOM:
                for n in names:
                    if n in present:
                        present.discard(n)
                        events.append(Leave(n))
                continue
            room = target
            for n in names:
                if n not in present:
                    present.add(n)
                    events.append(Enter(n))
            if entry_rule:
                for obj, r in room_of.items():
                    if r == room:
                        look(obj)
        elif m := _EXIT.match(line):
            n = agent(m.group(1))
            if n in present:
                present.discard(n)
                events.append(Leave(n))
        elif m := _IS_IN.match(line):
            obj, container = m.group(1), m.group(2)
            if obj not in initial:
                initial[obj] = container
                where[obj] = container
                room_of[obj] = room
            elif entry_rule:
                where[obj] = container
                look(obj)
        elif m := _MOVED.match(line):
            n, obj, container = agent(m.group(1)), m.group(2), m.group(3)
            if obj not in initial:
                initial[obj] = where[obj] = container  # moved before being placed: no prior
            if n not in present:
                unknown.append(line)
                continue
            events.append(Move(n, obj, container))
            where[obj] = container
            room_of[obj] = room
        elif m := _TOLD.match(line):
            communication = True
            s, r, obj, container = agent(m.group(1)), agent(m.group(2)), m.group(3), m.group(4)
            if obj not in initial:
                initial[obj] = where[obj] = container
            events.append(Tell(s, r, obj, container, container))
        elif _CLAIMED.match(line):
            communication = True
        elif m := _NOISE.match(line):
            agent(m.group(1))
        else:
            unknown.append(line)
    story = Story(
        agents=tuple(agents),
        objects=tuple(initial.items()),
        present=(),
        events=tuple(events),
    )
    return story, communication, unknown


def _choices(text: str) -> list[str]:
    return sorted({c.strip() for c in _CHOICE.findall(text)})


def _load(path_or_data: Any) -> list[Mapping[str, Any]]:
    data = path_or_data
    if isinstance(data, str | PathLike):
        # the one file read in nesttom: a convenience for the documented interface; the CLI
        # reads the file itself and passes the data
        with open(data, encoding="utf-8") as fh:
            data = json.load(fh)
    if isinstance(data, Mapping):
        data = data.get("data")
    if not isinstance(data, list):
        raise InputError("expected the Hi-ToM JSON: an object with a 'data' list of records")
    return data


def import_hitom(path_or_data: Any) -> tuple[list[Item], dict[str, Any]]:
    """Turn the Hi-ToM release (its parsed JSON, or a path to it) into items and a report.

    The report counts records and distinct (story, question) items by order, and, over the
    stories without communication, the Hi-ToM labels that disagree with NestToM semantics
    (``disagreements``, over distinct items; ``disagreement_records`` over records), how many
    of those the entry rule explains, and lines the parser did not recognise.
    """
    records = _load(path_or_data)
    items: list[Item] = []
    by_order: Counter[str] = Counter()
    unknown_lines: Counter[str] = Counter()
    checked: list[dict[str, Any]] = []
    labels: dict[tuple[str, str], set[str]] = {}
    parsed_cache: dict[str, tuple[Story, bool, list[str], Story]] = {}
    for i, rec in enumerate(records):
        where = f"data[{i}]"
        try:
            text = str(rec["story"])
            question = str(rec["question"])
            label = str(rec["answer"])
            order = int(rec["question_order"])
            sample_id = int(rec["sample_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"not a Hi-ToM record ({exc})", where=where) from exc
        body = "\n".join(story_lines(text))
        if body not in parsed_cache:
            story, comm, unknown = parse_hitom_story(text)
            ruled, _, _ = parse_hitom_story(text, entry_rule=True)
            parsed_cache[body] = (story, comm, unknown, ruled)
            for line in unknown:
                unknown_lines[line] += 1
        story, comm, unknown, ruled = parsed_cache[body]
        chain, obj = parse_hitom_question(question)
        choices = _choices(str(rec.get("choices", ""))) or story.containers()
        truth: dict[str, Any] = {
            "answer": label,
            "chain": chain,
            "object": obj,
            "communication": comm,
            "deception": bool(rec.get("deception", False)),
            "reality": None,
            "nesttom_answer": None,
            "entry_rule_answer": None,
            "agrees": None,
        }
        known = obj in story.initial and all(a in story.agents for a in chain)
        if known:
            truth["reality"] = story.compiled.reality[obj]
        if known and not comm and not unknown:
            answers = chain_answers(story, chain, obj)
            nest = answers[-1]
            ruled_answer = chain_answers(ruled, chain, obj)[-1]
            agrees = normalize_answer(nest) == normalize_answer(label)
            truth.update(
                nesttom_answer=nest,
                entry_rule_answer=ruled_answer,
                agrees=agrees,
                story=story.to_dict(questions=False),
            )
            if agrees:  # error coding only where the semantics and the label agree
                truth["prefix_answers"] = answers[1 : len(chain)]
                truth["projection"] = answers[1] if chain else None
            checked.append(
                {
                    "order": order,
                    "type": str(rec.get("prompting_type")),
                    "agrees": agrees,
                    "rule": normalize_answer(ruled_answer) == normalize_answer(label),
                    "sample_id": sample_id,
                }
            )
        labels.setdefault((body, question), set()).add(normalize_answer(label))
        depth = f"R{order}"
        by_order[depth] += 1
        prompt = (
            text.rstrip()
            + f"\n\nQuestion: {question}\nAnswer with the name of one container: "
            + ", ".join(choices)
            + "."
        )
        meta = {
            "depth": depth,
            "depth_n": order,
            "belief": (
                None
                if truth["reality"] is None
                else (
                    "true"
                    if normalize_answer(label) == normalize_answer(truth["reality"])
                    else "false"
                )
            ),
            "question": "belief",
            "form": "hitom",
            "story_id": content_hash(body),
            "prompting_type": rec.get("prompting_type"),
            "story_length": rec.get("story_length"),
            "deception": bool(rec.get("deception", False)),
            "communication": comm,
            "source": "Hi-ToM",
        }
        items.append(
            Item(
                family="hitom",
                generator=HITOM_GENERATOR,
                version=HITOM_VERSION,
                seed=sample_id,
                params={"sample_id": sample_id, "prompting_type": rec.get("prompting_type")},
                prompt=prompt,
                answer={"kind": "choice", "choices": choices},
                truth=truth,
                meta=meta,
            )
        )
    report = _import_report(len(records), len(items), by_order, checked, labels, unknown_lines)
    return items, report


def _import_report(
    n_records: int,
    n_items: int,
    by_order: Counter[str],
    checked: list[dict[str, Any]],
    labels: Mapping[tuple[str, str], set[str]],
    unknown_lines: Counter[str],
) -> dict[str, Any]:
    """The report of :func:`import_hitom`: records and items by order, and over the ``checked``
    stories (those without communication) the labels that disagree with NestToM semantics,
    overall and by prompting type; ``labels`` holds the labels of each (story, question)."""
    disagree = [d for d in checked if not d["agrees"]]
    by_type: dict[str, Any] = {}
    for kind in sorted({d["type"] for d in checked}):
        mine = [d for d in checked if d["type"] == kind]
        orders = sorted({d["order"] for d in mine})
        by_type[kind] = {
            "checked": len(mine),
            "disagreements": sum(1 for d in mine if not d["agrees"]),
            "by_order": {
                f"R{o}": {
                    "checked": sum(1 for d in mine if d["order"] == o),
                    "disagreements": sum(1 for d in mine if d["order"] == o and not d["agrees"]),
                }
                for o in orders
            },
        }
    return {
        "records": n_records,
        "items": n_items,
        "by_order": dict(sorted(by_order.items())),
        "checked_records": len(checked),
        "disagreements": len(disagree),
        "explained_by_entry_rule": sum(1 for d in disagree if d["rule"]),
        "by_prompting_type": by_type,
        "label_conflicts": sum(1 for v in labels.values() if len(v) > 1),
        "disagreeing_sample_ids": sorted(d["sample_id"] for d in disagree),
        "unrecognised_lines": sum(unknown_lines.values()),
        "note": (
            "Hi-ToM labels are kept as the answers. 'disagreements' counts records of stories "
            "without communication whose label differs from NestToM semantics; "
            "'explained_by_entry_rule' counts those whose label matches NestToM semantics plus "
            "Hi-ToM's rule that entering agents see the room; 'label_conflicts' counts "
            "(story, question) pairs whose VP and CoTP copies carry different labels. The "
            "released labels also predate Hi-ToM's permutation-bug fix."
        ),
    }
