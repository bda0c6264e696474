"""Trial items: deterministic, regenerable, with the meta, truth, tools the harness needs."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from games import (
    GENERATOR,
    design_cells,
    generate_items,
    get_game,
    idr_sequence,
    make_trial,
    user_prompt,
)
from mindledger.errors import InputError
from mindledger.items import Item


def test_generation_is_deterministic_and_regenerable() -> None:
    a = generate_items(11, 40)
    b = generate_items(11, 40)
    assert [i.id for i in a] == [i.id for i in b]
    assert [i.id for i in generate_items(12, 40)] != [i.id for i in a]
    for item in a:
        assert item.verify() == []
        assert make_trial(item.seed, item.params) == item
        assert Item.from_dict(json.loads(json.dumps(item.to_dict()))) == item


def test_a_full_batch_covers_every_design_cell_once() -> None:
    cells = design_cells()
    assert len(cells) == 4 * (1 + 3) * 10
    items = generate_items(3, len(cells))
    seen = Counter(
        (i.meta["game"], i.meta["condition"], i.meta.get("lambda"), i.meta["target_depth"])
        for i in items
    )
    assert set(seen) == set(cells) and set(seen.values()) == {1}


def test_recursive_item_fields() -> None:
    item = make_trial(1, {"game": "11-20", "condition": "recursive", "target_depth": 6})
    assert item.family == "games" and item.generator == GENERATOR
    assert item.prompt == user_prompt(get_game("11-20"), "recursive", 5)
    assert item.answer == {"kind": "integer", "min": 50, "max": 70}
    assert item.truth["target_action"] == 58
    assert item.truth["idr"] == idr_sequence("11-20")
    assert item.truth["br_sets"][5] == [58]
    meta = item.meta
    assert (meta["game"], meta["condition"], meta["target_depth"], meta["opponent_level"]) == (
        "11-20", "recursive", 6, 5)
    assert meta["variant"] is False and meta["answer_tool"] == "submit_action"
    assert "lambda" not in meta and item.tools == () and item.tool_results == {}


def test_inductive_item_has_the_history_tool() -> None:
    item = make_trial(9, {"game": "nash-demand", "condition": "inductive", "target_depth": 4,
                          "lambda": 10})
    assert item.meta["lambda"] == 10
    assert "query_opponent_history" in item.meta["system_prompt"]
    (tool,) = item.tools
    assert tool["function"]["name"] == "query_opponent_history"
    assert tool["function"]["parameters"]["properties"] == {}
    history = json.loads(item.tool_results["query_opponent_history"])
    assert history == item.truth["history"] and len(history) == 30
    assert all(1 <= h <= 20 for h in history)
    # level 3 at lambda 10 concentrates on a(3) = 17
    assert Counter(history).most_common(1)[0][0] == 17
    assert "Level" not in item.prompt


def test_ring_depth_ten_is_excluded_and_nothing_else() -> None:
    items = generate_items(5, 160)
    excluded = {(i.meta["game"], i.meta["target_depth"]) for i in items if i.meta["excluded"]}
    assert excluded == {("ring-11-20", 10)}
    ring10 = next(i for i in items if i.meta["excluded"])
    assert ring10.truth["excluded"] is True and "ambiguous" in ring10.truth["excluded_reason"]


def test_variant_items_play_their_own_game() -> None:
    items = generate_items(21, 24, variants=True, conditions=("recursive",))
    for item in items:
        assert item.meta["variant"] is True and item.meta["excluded"] is False
        assert item.meta["game_name"].startswith(item.meta["game"] + "~v:")
        spec_text = item.prompt.split("\n\n")[0]
        assert spec_text != get_game(item.meta["game"]).rules
        assert len(set(item.truth["idr"])) == 11
        assert make_trial(item.seed, item.params) == item


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"game": "chess", "condition": "recursive", "target_depth": 1}, "game"),
        ({"game": "11-20", "condition": "deductive", "target_depth": 1}, "condition"),
        ({"game": "11-20", "condition": "recursive", "target_depth": 11}, "target_depth"),
        ({"game": "11-20", "condition": "inductive", "target_depth": 2}, "lambda"),
    ],
)
def test_bad_parameters(params: dict[str, object], where: str) -> None:
    with pytest.raises(InputError) as info:
        make_trial(1, params)
    assert info.value.where == where
