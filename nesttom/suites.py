"""Builders for the baseline tests of seed 002 that use NestToM: B1, B2 and B4.

- **B1** — NestToM-P R0–R5, false and true belief, 12-event stories, 4 agents: ``per_cell``
  false-belief and ``per_cell`` true-belief items in each of the 8 depth cells.
- **B2** — the length sweep at R2: ``per_cell`` false-belief and ``per_cell`` true-belief R2
  items at each of 6, 12 and 20 events (the seed's "3 × 60" read the way the issue reads B1's
  "60 per depth": 60 false + 60 true).
- **B4** — applied ToM on B1's own stories at R1–R3: for the first ``per_cell`` stories of each
  of R1, R2 and R3 in B1 (false and true belief alternating), a behaviour question and a
  judgment question (yes and no alternating), so the explicit–applied gap compares belief and
  behaviour accuracy on the same stories (``meta["story_id"]``). Default 25 → 150 items.

B10 (confidence on every item of B1–B9) has no items of its own: it is the confidence asked on
these items. Seeds separate the suites: B1 and B4 share ``stream`` 0 (B4 re-tells B1's
stories), B2 uses stream 2, so one seed gives independent B1 and B2 stories.
"""

from __future__ import annotations

from mindledger.items import Item
from nesttom.generator import (
    APPLIED_DEPTHS,
    BELIEF_TYPES,
    DEPTHS,
    FORMS,
    MECHANISMS,
    _check_seed,
    _story_items,
    cell_of,
    generate_items,
)

__all__ = ["B1_STREAM", "B2_STREAM", "b1_items", "b2_items", "b4_items", "baseline_items"]

B1_STREAM = 0
B2_STREAM = 2
B2_LENGTHS = (6, 12, 20)


def b1_items(
    seed: int, per_cell: int = 60, length: int = 12, agents: int = 4, *, companions: bool = False
) -> list[Item]:
    """B1: for each of the 8 depths, ``per_cell`` false-belief and ``per_cell`` true-belief
    items (16 × ``per_cell`` items), factors crossed as :func:`~nesttom.generator.cell_of`
    says. ``companions`` adds, on each story, the items of every shallower prefix chain
    (``meta["selection"] == "companion"``) for Hi-ToM-style joint accuracy."""
    return generate_items(
        seed,
        len(DEPTHS) * len(BELIEF_TYPES) * per_cell,
        depths=DEPTHS,
        length=length,
        agents=agents,
        stream=B1_STREAM,
        companions=companions,
    )


def b2_items(seed: int, per_cell: int = 60, agents: int = 4) -> list[Item]:
    """B2: R2 items at 6, 12 and 20 events, ``per_cell`` false + ``per_cell`` true each."""
    out: list[Item] = []
    for length in B2_LENGTHS:
        out.extend(
            generate_items(
                seed,
                len(BELIEF_TYPES) * per_cell,
                depths=("R2",),
                length=length,
                agents=agents,
                stream=B2_STREAM,
            )
        )
    return out


def b4_items(seed: int, per_cell: int = 25, length: int = 12, agents: int = 4) -> list[Item]:
    """B4: a behaviour and a judgment item for each of the first ``per_cell`` B1 stories of
    R1, R2 and R3 (same seed, same stories as :func:`b1_items`): 6 × ``per_cell`` items."""
    _check_seed(seed)
    out: list[Item] = []
    for depth in APPLIED_DEPTHS:
        index = DEPTHS.index(depth)
        for _ in range(per_cell):
            cell, form, yes = cell_of(
                index,
                depths=DEPTHS,
                belief_types=BELIEF_TYPES,
                mechanisms=MECHANISMS,
                forms=FORMS,
                lengths=(length,),
                agents=(agents,),
            )
            items = _story_items(
                seed, B1_STREAM, index, cell, form, yes, applied=True, companions=False
            )
            out.extend(i for i in items if i.meta["question"] != "belief")
            index += len(DEPTHS)  # the next story of the same depth (belief type alternates)
    return out


def baseline_items(seed: int) -> dict[str, list[Item]]:
    """The NestToM items of the baseline suite at its default sizes: B1, B2 and B4."""
    return {"B1": b1_items(seed), "B2": b2_items(seed), "B4": b4_items(seed)}
