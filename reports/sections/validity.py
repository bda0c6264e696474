"""The anti-inflation rule (seed 002 §18.2 rule 6, §3): an agent's false-belief figures count
only when it passed the true-belief controls and the R0 reality check."""

from __future__ import annotations

from reports._estimates import Proportion
from reports.model import Validity

__all__ = ["TRUE_BELIEF_THRESHOLD", "validity", "validity_block"]

TRUE_BELIEF_THRESHOLD = 0.90
"""§18.2 rule 6: true-belief controls must be passed (>= 90%) for false-belief scores to count;
the same threshold applies to the R0 reality check (§3: "must be passed")."""


def validity(
    name: str, fb: Proportion, tb: Proportion, reality: Proportion, answered_fb: bool
) -> tuple[bool | None, str | None]:
    """Whether ``name``'s false-belief figures count (None: unchecked), and the notice that
    says why not. ``answered_fb``: the agent answered a false-belief question."""
    failed = []
    if tb.n and (tb.value or 0.0) < TRUE_BELIEF_THRESHOLD:
        failed.append(f"true-belief control accuracy is {tb.value:.1%} (n={tb.n})")
    if reality.n and (reality.value or 0.0) < TRUE_BELIEF_THRESHOLD:
        failed.append(f"R0 reality-check accuracy is {reality.value:.1%} (n={reality.n})")
    if failed:
        return False, (
            f"INVALID: {name}'s " + " and ".join(failed) + ", below the required 90%, so "
            "its false-belief scores (accuracy, D50, leakage resistance) are invalid: a "
            "reasoner that fails the controls may score on false-belief items by a "
            "shortcut (such as always answering against reality) or by chance."
        )
    if tb.n == 0:
        return None, (
            f"UNCHECKED: {name} answered no true-belief control items, so the "
            "anti-inflation rule (true-belief accuracy >= 90%) cannot be checked; read its "
            "false-belief scores with that in mind."
        ) if fb.n or answered_fb else None
    return True, None


def validity_block(
    valid: bool | None, message: str | None, tb: Proportion, reality: Proportion
) -> Validity:
    return Validity.of(
        {
            "valid": valid,
            "rule": "true-belief control accuracy >= 90% (seed 002 §18.2 rule 6) and R0 "
            "reality-check accuracy >= 90% (seed 002 §3)",
            "threshold": TRUE_BELIEF_THRESHOLD,
            "true_belief_accuracy": tb.value,
            "n": tb.n,
            "reality_check_accuracy": reality.value,
            "reality_check_n": reality.n,
            "message": message,
            "applies_to": "false-belief scores: accuracy_by_depth.false, d50, "
            "leakage_resistance, degradation_slope",
        }
    )
