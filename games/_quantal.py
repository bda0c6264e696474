"""The quantal level-k opponent histories of the inductive condition.

For an opponent at level ``k >= 1`` each record is drawn independently with

    P(h = s | k) ∝ exp(λ · ũ(s, a(k−1))),   ũ(s, a) = (u(s, a) − u_min(a)) / (u_max(a) − u_min(a)),

the payoffs rescaled over S at the fixed belief ``a = a(k−1)``; ``a(k)`` is then the modal
draw at every λ. A level-0 opponent has no belief to respond to, so its history is uniform
over S whatever λ is.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from games._idr import idr_sequence
from games._spec import Action, GameSpec

__all__ = ["HISTORY_LENGTH", "LAMBDAS", "opponent_history", "quantal_probabilities"]

LAMBDAS: tuple[int, ...] = (1, 3, 10)
"""The paper's precisions λ."""

HISTORY_LENGTH = 30
"""Records returned by ``query_opponent_history``."""


def quantal_probabilities(spec: GameSpec, level: int, lam: float) -> npt.NDArray[np.float64]:
    """Eq. (7): the probability of each action in ``spec.actions`` for a level-``level``
    opponent at precision ``lam``; uniform for level 0."""
    n = len(spec.actions)
    if level < 0:
        raise ValueError("level must be non-negative")
    if level == 0:
        return np.full(n, 1.0 / n)
    belief = idr_sequence(spec, level - 1)[level - 1]
    u = spec.matrix[:, spec.index[belief]]
    lo, hi = float(u.min()), float(u.max())
    if hi == lo:
        return np.full(n, 1.0 / n)
    z = lam * (u - lo) / (hi - lo)
    w = np.exp(z - z.max())
    return np.asarray(w / w.sum(), dtype=np.float64)


def opponent_history(
    spec: GameSpec,
    level: int,
    lam: float,
    rng: np.random.Generator,
    n: int = HISTORY_LENGTH,
) -> tuple[Action, ...]:
    """``n`` independent draws from :func:`quantal_probabilities` (uniform for level 0)."""
    p = quantal_probabilities(spec, level, lam)
    idx = rng.choice(len(spec.actions), size=n, p=p)
    return tuple(spec.actions[int(i)] for i in idx)
