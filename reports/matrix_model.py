"""The cross-model prediction matrix as one typed record, :class:`MatrixSummary`: every
condition's cells and self-advantages, the sections beside them and, for a stored run, the
run's facts; ``to_dict`` is its JSON (:func:`reports.matrix_summary.stored_summary`'s). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mindledger.disclosure import disclosed_matrix
from reports.matrix_cells import CellRow, SelfAdvantageFigure
from reports.matrix_sections import (
    ConditionRow,
    ItemAnswers,
    PastSeatSection,
    SecondOrderSection,
)

__all__ = [
    "PILOT_KEYS",
    "ConditionSummary",
    "DepthCells",
    "MatrixSummary",
    "PilotSummary",
    "StoredRun",
]


@dataclass(frozen=True)
class DepthCells:
    """The cells of one belief depth (:func:`depth_section`)."""

    depth: str
    n_items: int
    cells: Sequence[CellRow]
    """The cells on the depth's items."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "n_items": self.n_items,
            "cells": [c.to_dict() for c in self.cells],
        }


SELF_ADVANTAGE_NOTES = (
    "self_advantage = metric(T predicting T) - mean metric(others predicting T); for "
    "brier lower is better, so a negative brier self-advantage favours self-prediction"
)


@dataclass(frozen=True)
class ConditionSummary:
    """The matrix of one condition (or one belief depth): every cell and every target's
    self-advantage."""

    agents: Sequence[str]
    n_items: int
    samples: int
    cells: Sequence[CellRow]
    self_advantage: Mapping[str, Mapping[str, SelfAdvantageFigure]]
    target_errors: Mapping[str, int]
    items: Sequence[ItemAnswers]

    def to_dict(self) -> dict[str, Any]:
        return {
            "agents": list(self.agents),
            "n_items": self.n_items,
            "samples": self.samples,
            "cells": [c.to_dict() for c in self.cells],
            "self_advantage": {
                t: {m: f.to_dict() for m, f in entry.items()}
                for t, entry in self.self_advantage.items()
            },
            "target_errors": dict(self.target_errors),
            "items": [it.to_dict() for it in self.items],
            "notes": SELF_ADVANTAGE_NOTES,
        }


@dataclass(frozen=True)
class StoredRun:
    """What a stored matrix run adds to its matrix."""

    run: str
    seed: int | None
    """None for a held-out run unless an operator asked (:func:`mindledger.disclosure.shown_seed`)."""
    held_out: bool
    status: str
    accompanies: str | None
    """The suite run the matrix run was scheduled beside, if any."""
    exposure: int
    """Exposure items (shown to ``observe:m`` predictors, not predicted)."""
    withholds: bool = False
    """The run's items are withheld from the reader: the JSON shows each item's label, how
    many answers each target gave and how many distinct modal answers they had
    (:func:`mindledger.disclosure.disclosed_matrix`); the typed items are whole."""


PILOT_KEYS = (
    "verdict",
    "divergent",
    "method",
    "filter",
    "targets",
    "samples",
    "n_candidates",
    "n_kept",
    "dropped",
    "by_kind",
    "errors",
)
"""What a summary shows of a pilot's record, in its order."""


@dataclass(frozen=True)
class PilotSummary:
    """What a summary shows of a pilot's record (stored whole in the run's params): its
    verdict, method, thresholds, K, counts kept and dropped, per kind (the record's JSON
    values, None where it has none)."""

    verdict: Any
    divergent: Any
    method: Any
    filter: Any
    targets: Any
    samples: Any
    n_candidates: Any
    n_kept: Any
    dropped: Any
    by_kind: Any
    errors: Any

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> PilotSummary:
        return cls(*(record.get(k) for k in PILOT_KEYS))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in PILOT_KEYS}


@dataclass(frozen=True)
class MatrixSummary:
    """The matrix: the primary condition's cells and self-advantages (``condition``:
    zero-shot when the run has it, else its first), the other conditions' (``others``), the
    learning curves and the simulate contrast across conditions, each belief depth's cells,
    second-order and past-seat sections when the run has them, and a stored run's facts, its
    pilot and, when the pilot found the items not divergent, its verdict."""

    primary: ConditionSummary
    condition: str
    conditions: Sequence[str]
    others: Mapping[str, ConditionSummary]
    """The conditions but the primary."""
    second_order: SecondOrderSection | None = None
    past_seat: PastSeatSection | None = None
    by_depth: Sequence[DepthCells] = ()
    learning_curve: Sequence[ConditionRow] = ()
    simulate_contrast: Sequence[ConditionRow] = ()
    stored: StoredRun | None = None
    pilot: PilotSummary | None = None
    not_divergent: str | None = None
    """The pilot's verdict when it found the items not divergent: no cell reports S."""

    @property
    def agents(self) -> Sequence[str]:
        return self.primary.agents

    @property
    def cells(self) -> Sequence[CellRow]:
        """The primary condition's cells."""
        return self.primary.cells

    def condition_summary(self, condition: str) -> ConditionSummary | None:
        """The cells and self-advantages of one condition (None: not run)."""
        return self.primary if condition == self.condition else self.others.get(condition)

    def with_not_divergent(self, verdict: str) -> MatrixSummary:
        """The matrix reporting ``verdict`` instead of skill: every cell's S of the primary
        condition (and the past seats', which are those cells') is not estimable with it as
        the reason."""
        primary = replace(
            self.primary,
            cells=[replace(c, skill=c.skill.not_divergent(verdict)) for c in self.primary.cells],
        )
        past_seat = self.past_seat
        if past_seat is not None:
            past_seat = replace(past_seat, rows=[
                replace(r, skill_past_seat=r.skill_past_seat.not_divergent(verdict),
                        skill_fresh_copy=r.skill_fresh_copy.not_divergent(verdict))
                for r in past_seat.rows
            ])  # fmt: skip
        return replace(self, primary=primary, past_seat=past_seat, not_divergent=verdict)

    def withheld(self) -> MatrixSummary:
        """The matrix as a reader of a withheld (held-out) run may hold it: each item without
        its id, prompt and answers' texts, keeping how many answers each target gave and how
        many distinct modal answers they had (what its JSON shows)."""

        def blank(c: ConditionSummary) -> ConditionSummary:
            items = [
                ItemAnswers(
                    id="",
                    prompt="",
                    answers={t: ("",) * len(a) for t, a in it.answers.items()},
                    distinct_modes=it.distinct_modes,
                )
                for it in c.items
            ]
            return replace(c, items=items)

        others = {k: blank(v) for k, v in self.others.items()}
        return replace(self, primary=blank(self.primary), others=others)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        st = self.stored
        if st is not None:
            out.update(run=st.run, seed=st.seed, held_out=st.held_out, status=st.status,
                       accompanies=st.accompanies, exposure=st.exposure)  # fmt: skip
        out.update(self.primary.to_dict())
        out["condition"] = self.condition
        out["conditions"] = list(self.conditions)
        if self.second_order is not None:
            out["second_order"] = self.second_order.to_dict()
        if self.past_seat is not None:
            out["past_seat"] = self.past_seat.to_dict()
        if self.by_depth:
            out["by_depth"] = [d.to_dict() for d in self.by_depth]
        if len(self.conditions) > 1:
            out["by_condition"] = {
                c: {"cells": summary["cells"], "self_advantage": summary["self_advantage"]}
                for c in self.conditions
                if (summary := out if c == self.condition else self.others[c].to_dict())
            }
        if self.learning_curve:
            out["learning_curve"] = [row.to_dict() for row in self.learning_curve]
        if self.simulate_contrast:
            out["simulate_contrast"] = [row.to_dict() for row in self.simulate_contrast]
        if self.pilot is not None:
            out["pilot"] = self.pilot.to_dict()
        if self.not_divergent is not None:
            out["not_divergent"] = self.not_divergent
        if st is None:
            return out
        return disclosed_matrix(out, held_out=st.held_out, reveal_held_out=not st.withholds)
