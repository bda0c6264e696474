"""Beliefs of every chain of a story at once, on agent sets as bit masks: the generator's fast
twin of :mod:`nesttom._semantics` (the same rules; a property test checks that they agree).

Whether a chain ``[a1, …, an]`` perceives an event depends only on ``a1`` and the *set* of the
others, its **tail mask** (see :mod:`nesttom._semantics`). :func:`belief_table` tabulates the
belief of every (first agent, tail mask) in one pass over a story's compiled records;
:func:`beliefs_along` follows a few tails of one first agent (over neutralised records too, for
the causes of a belief); :func:`chain_groups` lists the chains of a depth class grouped so that
one table look-up decides a whole group.

Records are the compiled events about the target (:func:`nesttom._model.compile_story`):
``(MOVE, destination, observers, visible)`` and ``(TELL, sender, recipient, claimed,
received)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from itertools import product
from typing import Any

from nesttom._design import DEPTH_N, MAX_AGENTS
from nesttom._model import MOVE

__all__ = ["BITS", "SUBMASKS", "Group", "Subgroup", "belief_table", "beliefs_along", "chain_groups"]


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
BITS = tuple(_bits_of(m) for m in range(1 << MAX_AGENTS))
SUBMASKS = tuple(_submasks_of(m) for m in range(1 << MAX_AGENTS))


def belief_table(
    n_agents: int, initial: Any, records: Sequence[tuple[Any, ...]]
) -> list[list[Any]]:
    """``table[a1][tail]``: the belief of every chain, by first agent and tail mask (one pass).
    The same rules as :func:`nesttom._semantics.belief_of_key`, for all chains at once."""
    size = 1 << n_agents
    full = size - 1
    table = [[initial] * size for _ in range(n_agents)]
    for rec in records:
        if rec[0] == MOVE:
            dest = rec[1]
            if rec[3] == full:  # seen by everyone: every chain of these first agents
                for a1 in BITS[rec[2]]:
                    table[a1] = [dest] * size
                continue
            subs = SUBMASKS[rec[3]]
            for a1 in BITS[rec[2]]:
                row = table[a1]
                for m in subs:
                    row[m] = dest
        else:
            _, s, r, claimed, received = rec
            subs = SUBMASKS[(1 << s) | (1 << r)]
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
def chain_groups(n_agents: int, depth: str, you: int, false_belief: bool) -> tuple[Group, ...]:
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


def beliefs_along(
    records: Sequence[tuple[Any, ...]], initial: Any, a1: int, masks: Sequence[int]
) -> list[Any]:
    """The beliefs of the chains with first agent ``a1`` and the tail ``masks`` (mask 0: the
    chain ``[a1]``), in one pass over ``records`` — the rules of :func:`belief_table`."""
    out = [initial] * len(masks)
    first = 1 << a1
    for rec in records:
        if rec[0] == MOVE:
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
