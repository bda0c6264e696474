"""Exact symmetric Nash equilibria of small symmetric two-player games.

Used for the B answers of 11–20-style games, which have no pure equilibrium. Candidate
supports are the contiguous runs of actions (the 11–20 family's equilibria have interval
supports); each is screened with a floating-point solve of the indifference system and, when it
passes, solved and verified again in exact rational arithmetic, so every equilibrium returned
is exact. An equilibrium whose support is not an interval is not found.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

__all__ = ["symmetric_equilibria"]


def _solve_exact(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction] | None:
    """Gauss–Jordan elimination over the rationals; None for a singular system."""
    n = len(a)
    m = [[*row[:], b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if m[r][col] != 0), None)
        if pivot is None:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        inv = 1 / m[col][col]
        m[col] = [v * inv for v in m[col]]
        for r in range(n):
            if r != col and m[r][col] != 0:
                f = m[r][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [m[r][n] for r in range(n)]


def _exact_equilibrium(
    u: Sequence[Sequence[int | Fraction]], lo: int, hi: int
) -> tuple[Fraction, ...] | None:
    n = len(u)
    support = list(range(lo, hi + 1))
    k = len(support)
    a = [[Fraction(u[s][t]) for t in support] + [Fraction(-1)] for s in support]
    a.append([Fraction(1)] * k + [Fraction(0)])
    b = [Fraction(0)] * k + [Fraction(1)]
    sol = _solve_exact(a, b)
    if sol is None:
        return None
    x, v = sol[:k], sol[k]
    if any(p < 0 for p in x):
        return None
    full = [Fraction(0)] * n
    for s, p in zip(support, x, strict=True):
        full[s] = p
    for s in range(n):
        value = sum((Fraction(u[s][t]) * full[t] for t in support), Fraction(0))
        if value > v:
            return None
    return tuple(full)


def symmetric_equilibria(payoff: Sequence[Sequence[int | Fraction]]) -> list[tuple[Fraction, ...]]:
    """Every symmetric equilibrium ``x`` (a probability per action, exact) whose support is an
    interval of actions: ``(U x)_s = v`` on the support and ``<= v`` off it.

    ``payoff[s][t]`` is the row player's payoff for own action ``s`` against ``t``.
    """
    u = np.asarray([[float(v) for v in row] for row in payoff], dtype=np.float64)
    n = u.shape[0]
    found: list[tuple[Fraction, ...]] = []
    scale = max(1.0, float(np.abs(u).max()))
    for lo in range(n):
        for hi in range(lo, n):
            k = hi - lo + 1
            a = np.zeros((k + 1, k + 1))
            a[:k, :k] = u[lo : hi + 1, lo : hi + 1]
            a[:k, k] = -1.0
            a[k, :k] = 1.0
            b = np.zeros(k + 1)
            b[k] = 1.0
            try:
                sol = np.linalg.solve(a, b)
            except np.linalg.LinAlgError:
                continue
            x, v = sol[:k], sol[k]
            if (x < -1e-9).any():
                continue
            full = np.zeros(n)
            full[lo : hi + 1] = x
            if (u @ full > v + 1e-7 * scale).any():
                continue
            exact = _exact_equilibrium(payoff, lo, hi)
            if exact is not None and exact not in found:
                found.append(exact)
    return found
