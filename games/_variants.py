"""Fresh distinguishable variants of the four game families.

Canonical games can be recalled rather than reasoned, so scheduled runs play variants drawn
from a seed: shifted and rescaled strategy spaces, other bonus sizes and offsets, other ring
sizes and step rules. Each draw is built with :func:`games._catalog.build_game` (payoffs
enumerated, anchor derived, rules text written from the variant's own parameters) and kept only
when :func:`games._idr.check_distinguishability` finds it *strictly* distinguishable to the
requested depth: ``a(0) … a(depth)`` pairwise distinct and ``BR(a(k))`` a singleton at every
step, so that no level's action leans on the tie-break. The paper's own parameters are never
returned.

The parameter ranges are chosen so that most draws pass, but nothing relies on that: the
checker is the gate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from games._catalog import CANONICAL_PARAMS, FAMILIES, build_game
from games._idr import Distinguishability, check_distinguishability
from games._spec import GameSpec
from mindledger.canonical import content_hash
from mindledger.errors import MindledgerError

__all__ = ["VARIANT_FAMILIES", "VariantError", "generate_variant", "variant_params"]

Params = dict[str, int]


class VariantError(MindledgerError, RuntimeError):
    """No distinguishable variant was found within the attempt budget (a bug in the ranges).

    Not a user error (exit status 1); still a :class:`RuntimeError`, as it always was."""


def _int(rng: np.random.Generator, lo: int, hi: int) -> int:
    """Uniform integer in the closed range ``[lo, hi]``."""
    return int(rng.integers(lo, hi + 1))


def _pick(rng: np.random.Generator, options: list[int]) -> int:
    """A uniform choice from ``options`` (cheaper than ``Generator.choice`` for short lists)."""
    return options[int(rng.integers(len(options)))]


def _draw_1120(rng: np.random.Generator, depth: int) -> Params:
    gap = _int(rng, 1, 4)
    small_gap = _pick(rng, [g for g in range(1, gap + 2) if g != gap])
    width = gap * depth + _int(rng, 0, gap + 2)
    lo = _int(rng, 5, 120)
    bonus = width + _int(rng, 1, 12)
    small_bonus = _int(rng, 1, max(1, min(bonus - 1, bonus - gap + small_gap - 1)))
    return {"lo": lo, "hi": lo + width, "bonus": bonus, "gap": gap,
            "small_bonus": small_bonus, "small_gap": small_gap}


def _draw_allpay(rng: np.random.Generator, depth: int) -> Params:
    step = _pick(rng, [1, 1, 2, 5, 10])
    top = step * _int(rng, depth, depth + 6)
    prize = top + step * _int(rng, 1, 6)
    tie = _int(rng, 1, max(1, prize - step - 1))
    return {"top": top, "step": step, "prize": prize, "tie": tie}


def _draw_nash(rng: np.random.Generator, depth: int) -> Params:
    return {"prize": _int(rng, 2 * depth - 2, 6 * depth), "rate": 5 * _int(rng, 10, 19)}


def _draw_ring(rng: np.random.Generator, depth: int) -> Params:
    gap = _int(rng, 2, 5)
    cycles = [w for w in range(depth + 1, depth + 7) if math.gcd(gap, w) == 1 and w > gap + 1]
    width = _pick(rng, cycles)
    bonus = width + _int(rng, 0, 5)
    small_bonus = max(gap, bonus - width + 1) + _int(rng, 0, 4)
    hi = width + gap + _int(rng, 1, 30)
    lo = _int(rng, 1, max(1, hi - width - 2 * gap))
    return {"players": _int(rng, 3, 9), "lo": lo, "hi": hi, "bonus": bonus, "gap": gap,
            "small_bonus": small_bonus, "small_gap": width - gap}


_DRAWS: dict[str, Callable[[np.random.Generator, int], Params]] = {
    "11-20": _draw_1120,
    "all-pay": _draw_allpay,
    "nash-demand": _draw_nash,
    "ring-11-20": _draw_ring,
}

VARIANT_FAMILIES: tuple[str, ...] = tuple(_DRAWS)
"""Families that have a variant generator (all four)."""


def variant_params(family: str, rng: np.random.Generator, depth: int = 10) -> Params:
    """One unverified parameter draw for ``family`` (see :func:`generate_variant`)."""
    if family not in _DRAWS:
        raise ValueError(f"no variant generator for {family!r}; known: {VARIANT_FAMILIES}")
    return _DRAWS[family](rng, depth)


def _variant_name(family: str, params: Params) -> str:
    return f"{family}~v:{content_hash(params)[7:19]}"


def generate_variant(
    family: str,
    rng: np.random.Generator | int,
    *,
    depth: int = 10,
    attempts: int = 200,
) -> tuple[GameSpec, Distinguishability]:
    """A fresh variant of ``family`` that is strictly distinguishable to ``depth``.

    ``rng`` is a ``numpy.random.Generator`` or a seed. Returns the game and the checker's
    verdict on it. Draws that fail the checker, or that reproduce the paper's parameters,
    are discarded; :class:`VariantError` after ``attempts`` failures.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}")
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    canonical = dict(CANONICAL_PARAMS[family])
    for _ in range(attempts):
        params = variant_params(family, gen, depth)
        if params == canonical:
            continue
        spec = build_game(family, params, name=_variant_name(family, params))
        verdict = check_distinguishability(spec, depth)
        if verdict.strict:
            return spec, verdict
    raise VariantError(f"no strictly distinguishable {family} variant in {attempts} draws")


def describe_variant(spec: GameSpec) -> dict[str, Any]:
    """The variant's family and parameters, for item metadata."""
    return {"family": spec.family, "params": dict(spec.params), "name": spec.name}
