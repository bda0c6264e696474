"""Surface forms: one story, three renderings — narrative prose, a chat transcript (FANToM-like)
and a structured log — built from the same events, one line per event, so that a difference in
accuracy between forms is a difference of surface and not of content.

An agent named ``"you"`` is the evaluated agent itself (R2-self items) and is rendered in the
second person. Every prompt states the rules of the world, tells the story, and ends with the
question and an instruction to answer with a container name (or yes/no).
"""

from __future__ import annotations

from collections.abc import Sequence

from nesttom._model import Enter, Event, Leave, Move, Story

__all__ = [
    "FORMS",
    "YOU",
    "behaviour_question",
    "belief_question",
    "event_lines",
    "judgment_question",
    "render_prompt",
    "render_story",
]

FORMS = ("narrative", "chat", "log")
YOU = "you"

_RULES = {
    "narrative": (
        "How this world works: everyone in the room sees every move made there. Containers are "
        "closed, so nobody learns where things are just by entering the room. Someone outside "
        "the room sees nothing, unless they are secretly watching; then nobody else knows they "
        "saw it. A private message is known only to its sender and its recipient; the recipient "
        "believes it, and the sender does not know if it arrived garbled. Everyone knows where "
        "each object was at the start."
    ),
    "chat": (
        "How this chat works: people post in the group chat whenever they move something, and "
        "everyone in the chat at that moment reads it. Someone who has left the chat reads "
        "nothing posted while away (there is no history), unless they are secretly reading "
        "along; then nobody else knows they read it. A direct message is known only to its "
        "sender and its recipient; the recipient believes it, and the sender does not know if "
        "it was delivered garbled. The pinned note was known to everyone from the start."
    ),
    "log": (
        "Log semantics: a move is seen by every agent present and by its secret_watchers (no "
        "one else knows a secret watcher saw it); an absent agent sees nothing; containers are "
        "opaque, so entering reveals nothing. A message is known only to its sender and its "
        "recipient; the recipient believes what was delivered, and the sender does not know if "
        "delivery was garbled. The init line is common knowledge."
    ),
}

_SELF_NOTE = 'You are one of the people in this story: "you" in the story means you.'


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names(names: Sequence[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " and " + names[-1]


def _is_you(name: str) -> bool:
    return name == YOU


def _s(name: str, verb_third: str, verb_plain: str) -> str:
    return f"{name} {verb_plain if _is_you(name) else verb_third}"


def _narrative_event(ev: Event) -> str:
    if isinstance(ev, Move):
        line = _cap(_s(ev.agent, "moves", "move")) + f" the {ev.object} to the {ev.to}"
        if ev.hidden:
            h = list(ev.hidden)
            if len(h) == 1:
                who = h[0]
                line += (
                    f", while {_s(who, 'secretly watches', 'secretly watch')} from outside; "
                    f"nobody else knows {who} saw it"
                )
            else:
                line += (
                    f", while {_names(h)} each secretly watch from outside, unseen by anyone; "
                    f"nobody else knows they saw it"
                )
        return line + "."
    if isinstance(ev, Leave):
        return _cap(_s(ev.agent, "leaves", "leave")) + " the room."
    if isinstance(ev, Enter):
        return _cap(_s(ev.agent, "enters", "enter")) + " the room."
    line = (
        _cap(_s(ev.sender, "sends", "send"))
        + f' {ev.recipient} a private message: "The {ev.object} is in the {ev.claimed}."'
    )
    if ev.received != ev.claimed:
        line += (
            f" It arrives garbled, and {_s(ev.recipient, 'reads', 'read')}: "
            f'"The {ev.object} is in the {ev.received}."'
        )
    return line


def _chat_event(ev: Event) -> str:
    if isinstance(ev, Move):
        who = "You" if _is_you(ev.agent) else ev.agent
        line = f"{who}: I just moved the {ev.object} to the {ev.to}."
        if ev.hidden:
            h = list(ev.hidden)
            verb = "are" if len(h) == 1 and _is_you(h[0]) else ("is" if len(h) == 1 else "are each")
            line += (
                f"  [{_cap(_names(h))} {verb} secretly reading along from outside; nobody knows.]"
            )
        return line
    if isinstance(ev, Leave):
        return f"*** {_cap(_s(ev.agent, 'has', 'have'))} left the chat ***"
    if isinstance(ev, Enter):
        return f"*** {_cap(_s(ev.agent, 'has', 'have'))} joined the chat ***"
    line = f"[Direct message] {_cap(ev.sender)} -> {ev.recipient}: The {ev.object} is in the {ev.claimed}."
    if ev.received != ev.claimed:
        line += (
            f"  [Delivered garbled: {_s(ev.recipient, 'sees', 'see')} "
            f'"The {ev.object} is in the {ev.received}."]'
        )
    return line


def _log_event(ev: Event) -> str:
    if isinstance(ev, Move):
        line = f"move agent={ev.agent} object={ev.object} to={ev.to}"
        if ev.hidden:
            line += " secret_watchers=" + ",".join(ev.hidden)
        return line
    if isinstance(ev, Leave):
        return f"leave agent={ev.agent}"
    if isinstance(ev, Enter):
        return f"enter agent={ev.agent}"
    line = f"message from={ev.sender} to={ev.recipient} object={ev.object} says={ev.claimed}"
    if ev.received != ev.claimed:
        line += f" delivered={ev.received}"
    return line


_EVENT = {"narrative": _narrative_event, "chat": _chat_event, "log": _log_event}


def event_lines(story: Story, form: str) -> list[str]:
    """One rendered line per event of ``story``, in ``form``."""
    render = _EVENT[form]
    return [render(ev) for ev in story.events]


def _opening(story: Story, form: str) -> list[str]:
    present = list(story.present)
    absent = [a for a in story.agents if a not in story.present]
    if form == "log":
        objs = "; ".join(f"{o}={c}" for o, c in story.objects)
        return [f"init present={','.join(present)} absent={','.join(absent) or '-'}; {objs}"]
    things = [f"the {o} is in the {c}" for o, c in story.objects]
    if form == "chat":
        head = f"[Group chat. In the chat: {_names(present) if present else 'nobody'}"
        head += f"; not in the chat: {_names(absent)}]" if absent else "]"
        return [head, f"[Pinned note: {'; '.join(things)}.]"]
    if present:
        verb = "are" if len(present) > 1 or _is_you(present[0]) else "is"
        line = f"{_cap(_names(present))} {verb} in the room"
        if absent:
            line += f"; {_names(absent)} {'are' if len(absent) > 1 or _is_you(absent[0]) else 'is'} outside"
        line += "."
    else:
        line = f"{_cap(_names(absent))} are outside the room."
    return [line, _cap("; ".join(things)) + "."]


def render_story(story: Story, form: str) -> str:
    """The rules, the opening and the events of ``story`` in ``form`` (no question)."""
    if form not in _EVENT:
        raise ValueError(f"unknown form {form!r}; expected one of {FORMS}")
    parts = [_RULES[form]]
    if YOU in story.agents:
        parts.append(_SELF_NOTE)
    opening = _opening(story, form)
    lines = event_lines(story, form)
    if form == "narrative":
        parts.append(" ".join(opening + lines))
    elif form == "log":
        parts.append("\n".join(opening + [f"{i} {line}" for i, line in enumerate(lines, 1)]))
    else:
        parts.append("\n".join(opening + lines))
    return "\n\n".join(parts)


def _thinks(chain: Sequence[str]) -> str:
    """``"does Ann think Ben thinks"`` for a chain (first agent as the question's subject)."""
    first = chain[0]
    out = "do you think" if _is_you(first) else f"does {first} think"
    for a in chain[1:]:
        out += " you think" if _is_you(a) else f" {a} thinks"
    return out


def belief_question(chain: Sequence[str], obj: str) -> str:
    """``Where does Ann think Ben thinks the key is?`` (empty chain: where it really is)."""
    if not chain:
        return f"Where is the {obj} really?"
    return f"Where {_thinks(chain)} the {obj} is?"


def behaviour_question(chain: Sequence[str], obj: str) -> str:
    """``Where will Ben look for the key first?`` asked through ``chain[:-1]``."""
    last = chain[-1]
    if len(chain) == 1:
        return f"Where will {last} look for the {obj} first?"
    return f"Where {_thinks(chain[:-1])} {last} will look for the {obj} first?"


def judgment_question(chain: Sequence[str], obj: str, looked: str) -> str:
    """``Ben looks for the key in the box first. Does Ann think that is reasonable, …?``"""
    last = chain[-1]
    act = f"{_cap(_s(last, 'looks', 'look'))} for the {obj} in the {looked} first."
    seen = f"{_s(last, 'has', 'have')} seen and been told"
    if len(chain) == 1:
        return f"{act} Is that reasonable, given what {seen}?"
    statement = " ".join(_s(a, "thinks", "think") for a in chain[:-1])
    return f"{act} {_cap(_thinks(chain[:-1]))} that is reasonable, given what {statement} {seen}?"


def render_prompt(story: Story, form: str, question: str, choices: Sequence[str] | None) -> str:
    """A full prompt: the story in ``form``, then the question, then how to answer
    (``choices`` None: yes or no)."""
    if choices is None:
        how = "Answer yes or no."
    else:
        how = f"Answer with the name of one container: {', '.join(choices)}."
    return f"{render_story(story, form)}\n\nQuestion: {question}\n{how}"
