"""Item.from_json: an item read back from its stored JSON, its id checked by hashing the stored
bytes when they are canonical, and by re-encoding the content when they are not."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mindledger.items as items_module
from mindledger.canonical import canonical_json
from mindledger.items import Item

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def sample(**changes: Any) -> Item:
    fields: dict[str, Any] = {
        "family": "nesttom",
        "generator": "g",
        "version": "1",
        "seed": 7,
        "params": {"n": 3},
        "prompt": 'Where is the "key"? \\ é ✓ \u2028',
        "answer": {"kind": "choice", "choices": ["drawer", "safe"]},
        "truth": {"answer": "safe", "p": [0.1, 1e-300, -0.0, 2.5e16], "id": "not the item's"},
        "meta": {"depth": "R2"},
        "tools": ({"type": "function", "function": {"name": "look"}},),
        "tool_results": {"look": "a drawer"},
    }
    return Item(**(fields | changes))


def stored(item: Item) -> str:
    return canonical_json(item.to_dict()).decode("utf-8")


def test_stored_json_reads_back_as_the_same_item() -> None:
    item = sample()
    assert Item.from_json(stored(item)) == item
    assert Item.from_json(stored(item).encode("utf-8")) == item
    assert Item.from_json(stored(item)).tools == item.tools  # a tuple, as built


@settings(max_examples=150, deadline=None)
@given(
    truth=st.dictionaries(st.text(max_size=8), VALUES, max_size=5),
    meta=st.dictionaries(st.text(max_size=8), VALUES, max_size=3),
    prompt=st.text(max_size=30),
)
def test_any_item_reads_back_from_its_canonical_json(
    truth: dict[str, Any], meta: dict[str, Any], prompt: str
) -> None:
    item = sample(truth=truth, meta=meta, prompt=prompt)
    again = Item.from_json(stored(item))
    assert again == item and again.verify() == []


def test_canonical_json_is_checked_without_re_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    item = sample()
    text = stored(item)

    def refuse(value: Any) -> str:
        raise AssertionError("re-encoded an item whose stored bytes hash to its id")

    monkeypatch.setattr(items_module, "content_hash", refuse)
    assert Item.from_json(text) == item


def test_a_tampered_truth_is_refused() -> None:
    item = sample()
    text = stored(item)
    assert '"answer":"safe"' in text
    with pytest.raises(ValueError, match="does not match its content"):
        Item.from_json(text.replace('"answer":"safe"', '"answer":"drawer"'))


def test_a_tampered_id_is_refused() -> None:
    item, other = sample(), sample(seed=8)
    with pytest.raises(ValueError, match="does not match its content"):
        Item.from_json(stored(item).replace(item.id, other.id))


def test_json_that_is_not_canonical_is_checked_by_its_content() -> None:
    item = sample()
    loose = json.dumps(item.to_dict(), indent=2, ensure_ascii=True)  # same content, other bytes
    assert Item.from_json(loose) == item
    with pytest.raises(ValueError, match="does not match its content"):
        Item.from_json(loose.replace('"safe"', '"drawer"', 1))


def test_an_inner_id_member_is_not_taken_for_the_item_id() -> None:
    other = sample(seed=9)
    item = sample(answer={"kind": "choice", "choices": ["a"], "id": other.id})  # sorts first
    text = stored(item)
    assert text.index(f',"id":"{other.id}"') < text.index(f',"id":"{item.id}"')
    assert Item.from_json(text) == item


def test_json_that_is_not_an_item_is_refused() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        Item.from_json("[1, 2]")
    with pytest.raises(ValueError):
        Item.from_json("{not json")


def test_an_item_read_back_is_built_as_the_constructor_builds_it() -> None:
    item = sample()
    again = Item.from_json(stored(item))
    assert type(again) is Item
    assert list(vars(again).items()) == list(vars(item).items())  # the same fields, in order
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.prompt = "changed"  # type: ignore[misc]
    assert dataclasses.replace(again, seed=8, id="") == sample(seed=8)


def test_a_body_without_every_field_takes_the_defaults_of_the_missing() -> None:
    item = sample(meta={})
    body = {k: v for k, v in item.to_dict().items() if k not in ("id", "meta")}
    raw = canonical_json(body)
    digest = hashlib.sha256(raw).hexdigest()
    at = raw.index(b',"params":')  # the id's place among the sorted keys, had meta been there
    text = raw[:at] + f',"id":"sha256:{digest}"'.encode() + raw[at:]
    again = Item.from_json(text)
    assert again.meta == {} and again.id == f"sha256:{digest}"
    assert dataclasses.replace(again, id="") == item  # the content is the item's


def test_a_given_parser_reads_the_hashed_bytes() -> None:
    item = sample()
    seen: list[bytes] = []

    def loads(body: bytes) -> Any:
        seen.append(body)
        return json.loads(body)

    assert Item.from_json(stored(item), loads=loads) == item
    assert seen == [canonical_json({k: v for k, v in item.to_dict().items() if k != "id"})]
