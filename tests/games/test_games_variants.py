"""Fresh variants: verified distinguishable to depth 10 by an independent computation,
deterministic by seed, never the paper's own parameters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import CANONICAL_PARAMS, VARIANT_FAMILIES, build_game, generate_variant


def _plain_idr(spec_actions: tuple[int, ...], payoff: tuple[tuple[float, ...], ...],
               anchor: int, depth: int) -> tuple[list[int], bool]:
    """Best responses by plain loops; returns a(0..depth) and whether every step was unique."""
    seq, unique = [anchor], True
    for _ in range(depth):
        j = spec_actions.index(seq[-1])
        column = [row[j] for row in payoff]
        best = max(column)
        winners = [spec_actions[i] for i, v in enumerate(column) if v == best]
        unique &= len(winners) == 1
        seq.append(min(winners))
    return seq, unique


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(VARIANT_FAMILIES), st.integers(0, 2**32 - 1))
def test_variants_are_distinguishable_to_depth_ten(family: str, seed: int) -> None:
    spec, verdict = generate_variant(family, seed)
    assert spec.family == family
    assert dict(spec.params) != dict(CANONICAL_PARAMS[family])
    seq, unique = _plain_idr(spec.actions, spec.payoff, spec.anchor, 10)
    assert len(set(seq)) == 11, seq
    assert unique
    assert verdict.idr == seq and verdict.kmax >= 10 and verdict.strict
    # the anchor is the top of S for every family but the all-pay auction (a bid of 0)
    assert spec.anchor == (spec.actions[0] if family == "all-pay" else spec.actions[-1])
    # rebuilding from the parameters gives the same game, and its rules mention them
    again = build_game(family, spec.params)
    assert again.payoff == spec.payoff and again.rules == spec.rules
    for key in ("lo", "hi", "prize", "top", "bonus"):
        if key in spec.params:
            assert str(spec.params[key]) in spec.rules


@pytest.mark.parametrize("family", VARIANT_FAMILIES)
def test_variants_are_deterministic_and_fresh(family: str) -> None:
    a, _ = generate_variant(family, 7)
    b, _ = generate_variant(family, np.random.default_rng(7))
    assert a == b
    names = {generate_variant(family, s)[0].name for s in range(20)}
    assert len(names) > 10  # fresh games, not a handful of repeats


def test_ring_variants_change_ring_size_and_step_rule() -> None:
    params = [generate_variant("ring-11-20", s)[0].params for s in range(40)]
    assert len({p["players"] for p in params}) > 2
    assert len({(p["gap"], p["small_gap"]) for p in params}) > 2
    # a ring whose cycle has more than ten values reaches depth 10 without returning
    for p in params:
        assert p["gap"] + p["small_gap"] >= 11
