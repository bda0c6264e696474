"""LLM-population A/B/C items (issue 15 item 4): K play items and one C-llm item per scenario,
regenerated from (generator, version, seed, params) like every item, scored as pending."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import games
from games.family import GAMES
from mindledger.errors import InputError
from mindledger.items import Item


def test_a_scenario_is_k_plays_and_one_prediction() -> None:
    items = games.generate_population_items(11, 4)
    assert len(items) == 4 * (games.POPULATION_SAMPLES + 1)
    kinds = [i.meta["kind"] for i in items if i.meta["question"] == "C-llm"]
    assert kinds == ["beauty", "11-20", "beauty", "11-20"]
    first = items[: games.POPULATION_SAMPLES + 1]
    assert [i.meta["question"] for i in first] == ["play"] * 5 + ["C-llm"]
    assert [i.params.get("sample") for i in first] == [0, 1, 2, 3, 4, None]
    assert len({i.meta["scenario"] for i in first}) == 1
    # the prompts differ by play (the response cache keys on the whole request) and say so
    assert len({i.prompt for i in first}) == 6
    assert "This is play 3 of 5." in first[2].prompt
    # the population is described as what it is; no scripted bots, no realised choices
    for it in first:
        assert "agents evaluated in this run" in it.prompt and "bot" not in it.prompt
        assert it.meta["population"] == "llm" and it.truth["population"] == "llm"
        assert "realised" not in it.truth and "target_action" not in it.truth
    c = first[-1]
    assert c.answer == {"kind": "distribution", "choices": c.truth["labels"]}
    assert "your own plays are not counted" in c.prompt
    assert first[0].answer["kind"] == "integer"


def test_items_regenerate_from_their_params() -> None:
    items = games.generate_population_items(3, 2, samples=3)
    assert len(items) == 8
    for it in items:
        assert it.verify() == []
        again = GAMES.regenerate(Item.from_dict(it.to_dict()))
        assert again is not None and again.id == it.id and again == it
        assert games.make_abc_item(it.seed, it.params).id == it.id
    assert [i.id for i in games.generate_population_items(3, 2, samples=3)] == [
        i.id for i in items]
    # another seed, another draw; the scripted scenarios' stream is apart
    assert {i.id for i in games.generate_population_items(4, 2, samples=3)}.isdisjoint(
        i.id for i in items)
    scripted = games.generate_abc_items(3, 2, kinds=("beauty", "11-20"))
    assert {i.meta["scenario"] for i in scripted}.isdisjoint(i.meta["scenario"] for i in items)


def test_the_game_is_the_scripted_scenario_of_the_same_seed() -> None:
    play = games.make_population_item(99, {"kind": "11-20", "question": "play", "sample": 0})
    a = games.make_abc_item(99, {"kind": "11-20", "question": "A"})
    assert play.meta["game_params"] == a.meta["game_params"]
    assert play.truth["own_level_actions"] == a.truth["own_level_actions"]
    assert a.prompt.split("\n\n")[0] == play.prompt.split("\n\n")[0]  # the same rules


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"kind": "guessing", "question": "play", "sample": 0}, "kind"),
        ({"kind": "beauty", "question": "play", "sample": 5}, "sample"),
        ({"kind": "beauty", "question": "play"}, "sample"),
        ({"kind": "beauty", "question": "play", "sample": True}, "sample"),
        ({"kind": "beauty", "question": "C-llm", "samples": 0}, "samples"),
    ],
)
def test_bad_params_name_the_field(params: dict[str, object], where: str) -> None:
    with pytest.raises(InputError) as e:
        games.make_abc_item(1, params)
    assert e.value.where == where


def test_pending_scores() -> None:
    items = games.generate_population_items(8, 1)
    play, c = items[0], items[-1]
    lo, hi = play.answer["min"], play.answer["max"]
    s = games.score(play, lo)
    assert s.correct is None and s.error_codes == ()
    assert s.details["status"] == "population_play" and s.details["label"] == play.truth[
        "labels"][0]
    for bad, code in ((None, "no_action"), ("x", "invalid_action"), (hi + 1, "out_of_range")):
        s = games.score(play, bad)
        assert s.correct is None and s.primary_error == code and s.details["label"] is None
    labels = c.answer["choices"]
    s = games.score(c, {lab: (2.0 if i == 1 else 0.0) for i, lab in enumerate(labels)})
    assert s.correct is None and s.details["status"] == "pending_population"
    assert s.details["prediction"][1] == 1.0 and s.details["predicted_mode"] == labels[1]
    assert games.score(c, "nonsense").primary_error == "invalid_action"
    # the per-trial A/B/C summary leaves them out
    assert games.summarize_abc([(play, games.score(play, lo))])["scenarios"] == 0


def test_reference_players_play_their_level() -> None:
    items = games.generate_population_items(21, 2)
    for it in items:
        rng = np.random.default_rng(0)
        levels = it.truth["own_level_actions"]
        if it.meta["question"] == "play":
            for k in (1, 2, 3):
                assert games.reference_answer(it, f"level:{k}", rng) == levels[k - 1]
            lo, hi = it.answer["min"], it.answer["max"]
            assert lo <= games.reference_answer(it, "level:0", rng) <= hi
            assert lo <= games.reference_answer(it, "oracle", rng) <= hi
            assert lo <= games.reference_answer(it, "believer:2", rng) <= hi
        else:
            labels = it.answer["choices"]
            point = games.reference_answer(it, "level:3", rng)
            assert sum(point.values()) == 1.0 and point[
                next(lab for lab, (a, b) in zip(labels, it.truth["label_ranges"], strict=True)
                     if a <= levels[1] <= b)] == 1.0  # a level-2 play, believed of the others
            uniform = games.reference_answer(it, "oracle", rng)
            assert set(uniform.values()) == {1 / len(labels)}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(games.POPULATION_KINDS),
       samples=st.integers(1, 7))
def test_every_scenario_is_well_formed(seed: int, kind: str, samples: int) -> None:
    items = games.make_population_scenario(seed, kind, samples)
    assert len(items) == samples + 1
    c = items[-1]
    labels, ranges = c.truth["labels"], c.truth["label_ranges"]
    lo, hi = items[0].answer["min"], items[0].answer["max"]
    # the labels cover the play range exactly, in order, without overlap
    assert ranges[0][0] == lo and ranges[-1][1] == hi
    assert all(b + 1 == a2 for (_, b), (a2, _) in pairwise(ranges))
    assert len(labels) == len(ranges) == len(c.answer["choices"])
    for v in {lo, hi, *c.truth["own_level_actions"]}:
        assert games.score(items[0], v).details["label"] in labels
