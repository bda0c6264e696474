"""Builders for the baseline tests that use NestToM: B1, B2 and B4 (where the baseline table
comes from: docs/architecture.md, "Where the specifications come from").

- **B1** — NestToM-P R0–R5, false and true belief, 12-event stories, 4 agents: ``per_cell``
  false-belief and ``per_cell`` true-belief items in each of the 8 depth cells.
- **B2** — the length sweep at R2: ``per_cell`` false-belief and ``per_cell`` true-belief R2
  items at each of 6, 12 and 20 events (the baseline table's "3 × 60" read the way
  the issue reads B1's "60 per depth": 60 false + 60 true).
- **B4** — applied ToM on B1's own stories at R1–R3: for the first ``per_cell`` stories of each
  of R1, R2 and R3 in B1 (false and true belief alternating), a behaviour question and a
  judgment question (yes and no alternating in pairs), so the explicit–applied gap compares belief and
  behaviour accuracy on the same stories (``meta["story_id"]``). Default 25 → 150 items.

Every item's ``meta["block"]`` names its block (``"B1"``, ``"B2"``, ``"B4"``, or what the
caller passes, e.g. ``"quick"``). The blocks **require** identifiable lures
(``lures="require"``, see :func:`nesttom._generator.generate_story`): on every belief and
behaviour question a wrong answer that is reality, the projection or a truncation is exactly one
of them, so the error coder can say which. What stays ambiguous by construction is listed in
``meta["ambiguous"]`` (:func:`nesttom._scoring.ambiguities`): yes/no judgments (two answers for
three lures), your own belief on R2-self items when it is reality or the projection, and on
companion questions nothing more than their main question's lures allow.

B1 ``companions`` adds, on each story of the given belief types, the belief questions of every
shallower prefix of its chain (R0 included) for Hi-ToM-style joint accuracy: same
``meta["story_id"]``, ``meta["selection"] == "companion"``, ``meta["role"] == "prefix:k"`` and
``meta["companion_of"]`` the main item's id.

B10 (confidence on every item of B1–B9) has no items of its own: it is the confidence asked on
these items. Seeds separate the suites: B1 and B4 share ``stream`` 0 (B4 re-tells B1's
stories), B2 uses stream 2, so one seed gives independent B1 and B2 stories.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from mindledger.items import Item
from nesttom._design import APPLIED_DEPTHS, BELIEF_TYPES, DEPTHS, Design
from nesttom._generator import _check_seed, _story_items, generate_items

__all__ = ["B1_STREAM", "B2_STREAM", "b1_items", "b2_items", "b4_items", "baseline_items"]

B1_STREAM = 0
B2_STREAM = 2
B2_LENGTHS = (6, 12, 20)
LURES = "require"


def b1_items(
    seed: int,
    per_cell: int = 60,
    length: int = 12,
    agents: int = 4,
    *,
    companions: bool | Collection[str] = False,
    block: str = "B1",
) -> list[Item]:
    """B1: for each of the 8 depths, ``per_cell`` false-belief and ``per_cell`` true-belief
    items (16 × ``per_cell`` items), factors crossed as :func:`~nesttom._design.cell_of`
    says. ``companions`` (True, or the belief types whose stories get them) adds, on each story,
    the items of every shallower prefix chain for joint accuracy."""
    return generate_items(
        seed,
        len(DEPTHS) * len(BELIEF_TYPES) * per_cell,
        Design(lengths=(length,), agents=(agents,)),
        stream=B1_STREAM,
        companions=companions,
        lures=LURES,
        block=block,
    )


def b2_items(
    seed: int,
    per_cell: int = 60,
    agents: int = 4,
    *,
    belief_types: Sequence[str] = BELIEF_TYPES,
    block: str = "B2",
) -> list[Item]:
    """B2: R2 items at 6, 12 and 20 events, ``per_cell`` of each of ``belief_types`` each."""
    out: list[Item] = []
    for length in B2_LENGTHS:
        out.extend(
            generate_items(
                seed,
                len(belief_types) * per_cell,
                Design(
                    depths=("R2",),
                    belief_types=tuple(belief_types),
                    lengths=(length,),
                    agents=(agents,),
                ),
                stream=B2_STREAM,
                lures=LURES,
                block=block,
            )
        )
    return out


def b4_items(
    seed: int, per_cell: int = 25, length: int = 12, agents: int = 4, *, block: str = "B4"
) -> list[Item]:
    """B4: a behaviour and a judgment item for each of the first ``per_cell`` B1 stories of
    R1, R2 and R3 (same seed, same stories as :func:`b1_items`): 6 × ``per_cell`` items.

    Judgments are "yes" on two stories, then "no" on two, counting B4's stories across depths:
    belief type (which alternates) and polarity are crossed within each depth, and even one
    story per depth (the quick suite) has both polarities."""
    _check_seed(seed)
    out: list[Item] = []
    design = Design(lengths=(length,), agents=(agents,))  # B1's
    story = 0  # B4's own count of stories, across depths
    for depth in APPLIED_DEPTHS:
        index = DEPTHS.index(depth)
        for _ in range(per_cell):
            cell, form, _ = design.cell(index)
            items = _story_items(
                seed,
                B1_STREAM,
                index,
                cell,
                form,
                (story // 2) % 2 == 0,
                applied=True,
                companions=False,
                block=block,
                lures=LURES,
            )
            out.extend(i for i in items if i.meta["question"] != "belief")
            index += len(DEPTHS)  # the next story of the same depth (belief type alternates)
            story += 1
    return out


def baseline_items(seed: int) -> dict[str, list[Item]]:
    """The NestToM items of the baseline suite at its default sizes: B1 (with companion
    questions on its false-belief stories), B2 and B4."""
    return {
        "B1": b1_items(seed, companions=("false",)),
        "B2": b2_items(seed),
        "B4": b4_items(seed),
    }
