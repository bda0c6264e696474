"""The exact semantics of nested beliefs: the ground truth of every NestToM item.

A chain ``[a1, …, an]`` (no agent twice in a row) asks what a1 believes a2 believes … an
believes about an object.

- The chain **perceives a move** iff a1 observed it (present, or a hidden watcher) and each
  a(i+1) observed it and was not a hidden watcher — so a(i) knows a(i+1) saw it.
- The chain **perceives a tell** iff every agent of the chain is its sender or its recipient.
- The chain's belief is the object's initial container, updated by replaying, in order, only the
  events the chain perceives. A perceived move sets it to the destination. A perceived tell sets
  it to ``claimed`` when a1 is the sender and to ``received`` when a1 is the recipient — except
  that a tell never changes its sender's own belief (the chain exactly ``[sender]``).
- The empty chain is reality: the container after all moves.

Perception of a move depends only on a1 and on the *set* of agents a2…an, and perception of a
tell only on the set of all agents of the chain; so a chain is evaluated as ``(a1, tail mask)``
with agents as bits, in one pass over the events that concern its object (linear in events).
:func:`compile_story` precomputes, once per story, the observer and visible masks of every move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mindledger.errors import InputError
from nesttom._model import MOVE, TELL, Compiled, Story, compile_story, validate_story

__all__ = [
    "Compiled",
    "answer_chain",
    "belief_of_chain",
    "chain_answers",
    "compile_story",
    "reality",
    "sender_beliefs",
]


def belief_of_key(
    records: Sequence[tuple[Any, ...]], initial: str, a1: int, tail: int, single: bool
) -> str:
    """The belief of the chain whose first agent is bit ``a1`` and whose other agents form the
    mask ``tail`` (``single``: the chain is just ``[a1]``), over compiled ``records``."""
    belief = initial
    first = 1 << a1
    for rec in records:
        if rec[0] == MOVE:
            if rec[2] & first and not tail & ~rec[3]:
                belief = rec[1]
        else:
            _, sender, recipient, claimed, received = rec
            pair = (1 << sender) | (1 << recipient)
            if first & pair and not tail & ~pair:
                if a1 == recipient:
                    belief = received
                elif not single:
                    belief = claimed
    return belief


def _story(story: Story | Mapping[str, Any]) -> Story:
    return story if isinstance(story, Story) else validate_story(story)


def _check(story: Story, chain: Sequence[str], obj: str) -> tuple[int, ...]:
    comp = story.compiled
    if obj not in comp.initial:
        raise InputError(f"unknown object {obj!r}", where="object")
    idx = []
    for i, a in enumerate(chain):
        if a not in comp.index:
            raise InputError(f"unknown agent {a!r}", where=f"chain[{i}]")
        if i and chain[i - 1] == a:
            raise InputError(f"the chain names {a!r} twice in a row", where=f"chain[{i}]")
        idx.append(comp.index[a])
    return tuple(idx)


def reality(story: Story | Mapping[str, Any], obj: str) -> str:
    """Where ``obj`` really is at the end of the story (depth 0)."""
    s = _story(story)
    _check(s, (), obj)
    return s.compiled.reality[obj]


def answer_chain(story: Story | Mapping[str, Any], chain: Sequence[str], obj: str) -> str:
    """What ``chain[0]`` believes ``chain[1]`` believes … about where ``obj`` is.

    The empty chain gives reality. Raises :class:`~mindledger.errors.InputError` for an unknown
    agent or object or a chain naming the same agent twice in a row. Linear in the story's events.
    """
    s = _story(story)
    idx = _check(s, chain, obj)
    comp = s.compiled
    if not idx:
        return comp.reality[obj]
    tail = 0
    for i in idx[1:]:
        tail |= 1 << i
    return belief_of_key(comp.records[obj], comp.initial[obj], idx[0], tail, len(idx) == 1)


belief_of_chain = answer_chain


def chain_answers(story: Story | Mapping[str, Any], chain: Sequence[str], obj: str) -> list[str]:
    """The answers of every prefix of ``chain``: element k is the answer of ``chain[:k]``
    (element 0 is reality, the last is the answer of the whole chain), in one pass."""
    s = _story(story)
    idx = _check(s, chain, obj)
    comp = s.compiled
    n = len(idx)
    out = [comp.reality[obj]] + [comp.initial[obj]] * n
    if not n:
        return out
    a1 = idx[0]
    first = 1 << a1
    tails = [0] * (n + 1)  # tails[k]: mask of chain[1:k]
    for k in range(2, n + 1):
        tails[k] = tails[k - 1] | (1 << idx[k - 1])
    for rec in comp.records[obj]:
        if rec[0] == MOVE:
            if rec[2] & first:
                vis = rec[3]
                for k in range(1, n + 1):  # tails grow with k: stop at the first one not seen
                    if tails[k] & ~vis:
                        break
                    out[k] = rec[1]
        else:
            _, sender, recipient, claimed, received = rec
            pair = (1 << sender) | (1 << recipient)
            if not first & pair:
                continue
            for k in range(1, n + 1):
                if tails[k] & ~pair:
                    break
                if a1 == recipient:
                    out[k] = received
                elif k > 1:
                    out[k] = claimed
    return out


def sender_beliefs(story: Story | Mapping[str, Any]) -> list[str | None]:
    """For each event, the sender's own belief about the object at the moment of a tell (None
    for other events): a tell is a **lie** when ``claimed`` differs from it."""
    s = _story(story)
    comp = s.compiled
    out: list[str | None] = [None] * len(s.events)
    for obj, recs in comp.records.items():
        for j, pos in enumerate(comp.positions[obj]):
            rec = recs[j]
            if rec[0] == TELL:
                out[pos] = belief_of_key(recs[:j], comp.initial[obj], rec[1], 0, True)
    return out
