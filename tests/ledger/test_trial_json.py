"""The trial writer's JSON (``_trial_json``) is the canonical JSON's text, byte for byte, and
refuses what canonical_json refuses with the same error."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.store import _json, _trial_json

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


@given(VALUES)
def test_the_same_text_as_canonical_json(value: Any) -> None:
    assert _trial_json(value) == _json(value)


def cyclic() -> list[Any]:
    a: list[Any] = []
    a.append(a)
    return a


@pytest.mark.parametrize(
    "value",
    [[math.nan], {"x": -math.inf}, {"a": object()}, "\ud800", {"k\udfff": 1}, {1: 2, "b": 3}],
)
def test_the_same_refusals(value: Any) -> None:
    with pytest.raises(Exception) as expected:
        _json(value)
    with pytest.raises(type(expected.value)) as got:
        _trial_json(value)
    assert str(got.value) == str(expected.value)


def test_a_cycle_is_refused_as_before() -> None:
    with pytest.raises(ValueError, match="Circular reference"):
        _trial_json(cyclic())
