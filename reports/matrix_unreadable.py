"""What a matrix cell could not read: its target's unreadable answers and its predictor's
unreadable predictions, and when they are too many for the cell to measure anything (issue 24
item 4). Pure: :mod:`reports.matrix_summary` counts every cell with :class:`Unreadable`.

A target reply with no readable answer is recorded as the answer :data:`NO_ANSWER`: it *is*
what the target did, and it counts in the target's samples. But no predictor can name it (a
prediction is a distribution over the item's choices), so on an item where it is the target's
modal answer every prediction matches nothing, and the target's test-retest ceiling measures
how consistently it fails to answer. A predictor's reply with no readable distribution is
scored with the ledger's worst-case penalty, which measures the parser, not a model of the
target. So a cell is **not estimable** when more than :data:`MAX_UNREADABLE_SHARE` (half) of
its target's answers, or of its predictor's predictions, are unreadable: past half, the
unreadable answer is the target's most common one and the penalty the predictor's most common
score. Every cell carries both counts either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from matrix import NO_ANSWER

__all__ = ["MAX_UNREADABLE_SHARE", "NO_ANSWER", "Unreadable"]

MAX_UNREADABLE_SHARE = 0.5
"""A cell with a larger share of its target's answers, or of its predictor's predictions,
unreadable is not estimable."""


@dataclass(frozen=True)
class Unreadable:
    """The unreadable answers and predictions of one (predictor, target) cell."""

    target_answers: int
    """The target's samples, on the cell's items, recorded as :data:`NO_ANSWER`."""
    target_samples: int
    """All the target's samples on the cell's items."""
    predictions: int
    """The predictor's replies about the target with no readable distribution (unparsed)."""
    predictions_asked: int
    """The predictor's replies about the target (API errors, which leave no reply, apart)."""

    @staticmethod
    def _too_many(part: int, whole: int) -> bool:
        return whole > 0 and part > MAX_UNREADABLE_SHARE * whole

    def reason(self, predictor: str, target: str) -> str | None:
        """Why the cell is not estimable (``"40 of 40 answers of T unreadable"``), or None
        when enough of it was readable."""
        parts = []
        if self._too_many(self.target_answers, self.target_samples):
            parts.append(
                f"{self.target_answers} of {self.target_samples} answers of {target} unreadable"
            )
        if self._too_many(self.predictions, self.predictions_asked):
            parts.append(
                f"{self.predictions} of {self.predictions_asked} predictions of "
                f"{predictor} unreadable"
            )
        return "; ".join(parts) or None

    def text(self) -> str:
        """``unreadable: 3 of 40 answers, 0 of 10 predictions``."""
        return (
            f"unreadable: {self.target_answers} of {self.target_samples} answers, "
            f"{self.predictions} of {self.predictions_asked} predictions"
        )

    def to_dict(self) -> dict[str, int]:
        return {
            "target_answers": self.target_answers,
            "target_samples": self.target_samples,
            "predictions": self.predictions,
            "predictions_asked": self.predictions_asked,
        }
