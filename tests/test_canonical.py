"""The canonical JSON contract: its test vectors must never change."""

import pytest

from mindledger import Item, canonical_json, content_hash


def test_vectors() -> None:
    assert canonical_json({"b": 1, "a": [1.5, "é", None, True]}) == (
        b'{"a":[1.5,"\xc3\xa9",null,true],"b":1}'
    )
    assert canonical_json({"z": {"y": 2, "x": [1, 2]}, "a": 'q"uote'}) == (
        b'{"a":"q\\"uote","z":{"x":[1,2],"y":2}}'
    )
    assert content_hash({"a": 1}) == (
        "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    )
    assert canonical_json(0.1) == b"0.1"
    assert canonical_json((1, 2)) == b"[1,2]"


def test_rejects_nan() -> None:
    with pytest.raises(ValueError):
        canonical_json(float("nan"))


def test_item_round_trip_and_identity() -> None:
    item = Item(
        family="t",
        generator="g",
        version="1",
        seed=3,
        params={"n": 1},
        prompt="p?",
        answer={"kind": "yesno"},
        truth={"answer": "yes"},
        meta={"depth": "R1"},
    )
    assert item.id.startswith("sha256:")
    again = Item.from_dict(item.to_dict())
    assert again == item and again.verify() == []
    changed = item.to_dict() | {"prompt": "other"}
    with pytest.raises(ValueError, match="does not match"):
        Item.from_dict(changed)
