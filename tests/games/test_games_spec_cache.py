"""spec_from_truth builds a game once per distinct content and shares it: the shared spec must
be immutable, and content that differs only in its numbers' types must not share a spec."""

from __future__ import annotations

import numpy as np
import pytest

from games._scoring import _cached_spec, score, spec_from_truth
from games._spec import GameSpec
from games._trials import make_trial

TRUTH = {"actions": [1, 2, 3], "payoff": [[1, 0, 0], [2, 1, 0], [0, 2, 3]], "anchor": 3}


def test_same_content_is_built_once_and_shared() -> None:
    copy = {k: (list(map(list, v)) if k == "payoff" else v) for k, v in TRUTH.items()}
    assert spec_from_truth(TRUTH, "g") is spec_from_truth(copy, "g")
    assert spec_from_truth(TRUTH, "g") is not spec_from_truth(TRUTH, "h")  # names differ


def test_the_shared_spec_is_read_only() -> None:
    spec = spec_from_truth(TRUTH, "g")
    with pytest.raises(ValueError):
        spec.matrix[0, 0] = 99.0
    with pytest.raises(TypeError):
        spec.index[1] = 2  # type: ignore[index]


def test_numbers_of_another_type_get_their_own_spec() -> None:
    floats = {"actions": [1.0, 2.0, 3.0], "payoff": TRUTH["payoff"], "anchor": 3.0}
    spec = spec_from_truth(floats, "g")
    assert spec is not spec_from_truth(TRUTH, "g")
    assert [type(a) for a in spec.actions] == [float, float, float]
    assert type(spec.anchor) is float


def test_from_matrix_does_not_freeze_the_callers_array() -> None:
    m = np.array(TRUTH["payoff"], dtype=np.float64)
    spec = spec_from_truth({**TRUTH, "payoff": m}, "array")
    assert m.flags.writeable and not spec.matrix.flags.writeable
    assert spec.best_responses(3) == (3,)


def test_scores_do_not_depend_on_the_cache() -> None:
    item = make_trial(3, {"game": "11-20", "condition": "recursive", "target_depth": 2})
    truth = item.truth
    assert spec_from_truth(truth, "g") == GameSpec.from_matrix(
        "g", truth["actions"], truth["payoff"], truth["anchor"]
    )
    answers = (None, 11, 18, 20, "x", {"action": 19, "final_belief_point": 20})
    warm = [score(item, a) for a in answers]
    _cached_spec.cache_clear()
    assert [score(item, a) for a in answers] == warm


def test_the_cache_of_many_games_stays_small() -> None:
    """A new game variant a night (the daemon's nightly runs) must not fill memory: 400
    distinct 30 x 30 games keep under 16 MiB (1,024 keys kept 27 MiB of them, 128 kept 8.7 MiB)."""
    import tracemalloc

    rng = np.random.default_rng(7)
    actions = list(range(30))
    _cached_spec.cache_clear()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(400):
            payoff = rng.integers(0, 100, size=(30, 30)).astype(float).tolist()
            spec_from_truth({"actions": actions, "payoff": payoff, "anchor": 0}, f"g~v:{n}")
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        _cached_spec.cache_clear()
    assert kept < 16 * 2**20, f"{kept / 2**20:.1f} MiB kept by the spec cache"
