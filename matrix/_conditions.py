"""The conditions a prediction is made under (seed 002 §15.2 protocol steps 3–4), and who
predicts whom in the second order (step 5): pure rules shared by the run and its summary."""

from __future__ import annotations

from collections.abc import Sequence

from mindledger.errors import UserError

__all__ = [
    "OBSERVE",
    "SIMULATE",
    "ZERO_SHOT",
    "check_conditions",
    "observed_count",
    "second_order_triples",
]

ZERO_SHOT = "zero-shot"
"""The condition with no help: the predictor sees the question and the target's name."""
SIMULATE = "simulate"
"""The condition with an explicit instruction to simulate the target."""
OBSERVE = "observe:"
"""``observe:m``: the predictor also sees m of the target's past answers on other items."""


def observed_count(condition: str) -> int | None:
    """m of an ``observe:m`` condition (0 for zero-shot, on the learning curve); None for a
    condition that is not on the curve."""
    if condition == ZERO_SHOT:
        return 0
    if condition.startswith(OBSERVE) and condition[len(OBSERVE) :].isdigit():
        return int(condition[len(OBSERVE) :])
    return None


def check_conditions(conditions: Sequence[str]) -> list[str]:
    """The conditions in order, without repeats; a UserError for one that is not
    ``zero-shot``, ``simulate`` or ``observe:m`` with m ≥ 1."""
    out = list(dict.fromkeys(str(c).strip() for c in conditions))
    if not out:
        raise UserError("the matrix needs at least one condition")
    for c in out:
        m = observed_count(c)
        if c != SIMULATE and (m is None or (m == 0 and c != ZERO_SHOT)):
            raise UserError(
                f"unknown matrix condition {c!r} (expected zero-shot, simulate or observe:m "
                "with m ≥ 1, e.g. observe:3)"
            )
    return out


def second_order_triples(names: Sequence[str]) -> list[tuple[str, str, str]]:
    """Every (P, Q, T) of a second-order matrix: P ≠ Q, T any agent (Q == T and P == T
    included), so n agents give n²(n − 1) second-order predictions per item."""
    return [(p, q, t) for p in names for q in names if q != p for t in names]
