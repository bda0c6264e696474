"""Choosing the question of a drawn story: which chain of the requested depth is asked about
(the adversarial filter and the preferences of :mod:`nesttom._generator`'s docstring, step 2),
and which of the story's mechanisms cause each of its prefixes' beliefs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from nesttom._design import decisive_feasible
from nesttom._drafts import Draft
from nesttom._model import MOVE
from nesttom._tables import belief_table, beliefs_along, chain_groups

__all__ = ["Rank", "causes_of", "choose_chain"]

# a chain's preference rank: (identifiable lures, decisive mechanism wanted and found, your own
# belief distinct from the lures); tuples of bools compare as wanted (True beats False)
Rank = tuple[bool, bool, bool]


def choose_chain(
    x: float,
    draft: Draft,
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
    table = belief_table(n_agents, draft.initial[0], draft.records)
    want_false = belief == "false"
    own = table[draft.you][0] if depth == "R2-self" else -1
    # (first agent, tail mask, chains, identifiable lures, your own belief apart from them)
    found: list[tuple[int, int, tuple[tuple[int, ...], ...], bool, bool]] = []
    for a1, mask, subgroups in chain_groups(n_agents, depth, draft.you, want_false):
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
                    beliefs_along(recs, initial, a1, (mask,))[0] != table[a1][mask]
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


def causes_of(
    draft: Draft, n_agents: int, mechanism: str, chain: Sequence[int]
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
    actual = beliefs_along(records, draft.initial[0], a1, masks)
    if draft.features == ("absence",):  # no messages, no secret watchers: seeing every move,
        # every chain would believe reality, so absence is the cause of every wrong belief
        return ((), *(("absence",) if b != draft.reality else () for b in actual))

    def moves_seen(seen: Callable[[int, int], tuple[int, int]]) -> list[tuple[Any, ...]]:
        # the records with each move's (observers, visible) replaced
        return [(r[0], r[1], *seen(r[2], r[3])) if r[0] == MOVE else r for r in records]

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
            alt = beliefs_along(recs, draft.initial[0], a1, masks)
            for j in range(len(masks)):
                changed[j] = changed[j] or alt[j] != actual[j]
        for j in range(len(masks)):
            if changed[j]:
                found[j].append(name)
    return ((), *(tuple(f) for f in found))
