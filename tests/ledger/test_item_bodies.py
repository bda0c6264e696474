"""Items read back from storage: their JSON is fetched as the very bytes their ids hash (so the
id is checked without re-encoding the item), on SQLite and PostgreSQL, and parsed by a faster
parser that returns exactly what json.loads returns, falling back to json.loads where it
refuses a document."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import games
import ledger._item_bodies as item_bodies
import mindledger.items as items_module
import nesttom
from ledger._item_bodies import SharedMatrices, read_json
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.canonical import canonical_json
from mindledger.errors import StorageError
from mindledger.items import Item

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(min_value=-1e6, max_value=1e6).map(lambda x: round(x, 3))
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)


def exact(value: Any) -> Any:
    """``value`` with every scalar's type made part of it, and floats by their bits, so that
    ``1 == 1.0 == True`` and ``0.0 == -0.0`` no longer compare equal."""
    if isinstance(value, dict):
        return ("dict", [(k, exact(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [exact(v) for v in value])
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_it_reads_any_json_exactly_as_json_loads(value: Any) -> None:
    for text in (canonical_json(value), json.dumps(value).encode("utf-8")):
        assert exact(read_json(text)) == exact(json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        b'["\\ud800"]',  # a lone surrogate: json.loads reads it, pydantic-core refuses it
        b'\xef\xbb\xbf{"a": 1}',  # a byte-order mark
        b"[" * 300 + b"]" * 300,  # deeper than pydantic-core's limit
        b'{"a": NaN, "b": -Infinity}',
        b'{"a": 1, "a": 2}',
    ],
)
def test_what_json_loads_reads_it_reads_the_same(text: bytes) -> None:
    assert exact(read_json(text)) == exact(json.loads(text))


@pytest.mark.parametrize("text", [b"{truncated", b"", b"[1] x", b'["\xff"]'])
def test_what_json_loads_refuses_it_refuses(text: bytes) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        read_json(text)


def test_items_are_fetched_as_their_canonical_bytes_and_checked_by_hashing_them(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [
        *games.generate_items(4, 3, conditions=("recursive",)),
        *nesttom.generate_items(4, 3),
    ]  # non-ASCII text among them
    store = Store(open_engine(db_url))
    store.create_run(
        "r",
        suite="t",
        seed=1,
        held_out=False,
        params={},
        agents=[RunAgent("a", "agent", {})],
        items=items,
    )
    bodies = store.item_bodies([it.id for it in items])
    assert bodies == {it.id: canonical_json(it.to_dict()) for it in items}
    assert any(not body.isascii() for body in bodies.values())

    def refuse(value: Any) -> str:
        raise AssertionError("re-encoded an item whose stored bytes hash to its id")

    monkeypatch.setattr(items_module, "content_hash", refuse)
    assert list(store.run_items("r")) == items
    assert store.items_by_id([items[4].id, items[0].id]) == [items[4], items[0]]


def _six_items(url: str) -> tuple[Store, list[Item]]:
    items = games.generate_items(5, 6, conditions=("recursive",))
    store = Store(open_engine(url))
    store.create_run(
        "r",
        suite="t",
        seed=1,
        held_out=False,
        params={},
        agents=[RunAgent("a", "agent", {})],
        items=items,
    )
    return store, items


def test_a_page_rebuilds_each_item_once_and_a_run_of_them_when_one_is_asked_for(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, items = _six_items(sqlite_url)
    built: list[str] = []
    build = item_bodies.stored_item

    def counting(item_id: str, body: bytes, **kwargs: Any) -> Item:
        built.append(item_id)
        return build(item_id, body, **kwargs)

    monkeypatch.setattr(item_bodies, "stored_item", counting)
    monkeypatch.setattr(item_bodies.ItemPage, "BUILD_AHEAD", 2)
    stored = store.run_items("r")  # one page of six
    assert stored[2] == items[2] and built == [items[2].id, items[3].id]  # a run, not the page
    assert stored[3] == items[3] and stored[2] == items[2] and len(built) == 2  # kept
    assert list(stored) == items
    assert sorted(built) == sorted(it.id for it in items)  # each once


def test_a_corrupt_item_fails_when_it_is_asked_for_not_when_one_before_it_is(
    sqlite_url: str,
) -> None:
    """Items are rebuilt a run at a time: a corrupt item in the run of an earlier one must not
    fail the earlier one's trial, and must fail its own."""
    store, items = _six_items(sqlite_url)
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE items SET body_json = replace(body_json, '\"anchor\"', '\"anchr\"') "
            "WHERE id = ?",
            (items[3].id,),
        )
    stored = store.run_items("r")
    assert stored[2] == items[2]  # its run holds item 3, which is rebuilt ahead and fails
    with pytest.raises(StorageError, match=f"stored item {items[3].id}"):
        stored[3]
    assert stored[4] == items[4]


MATRICES = st.lists(
    st.lists(
        st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False),
        min_size=1,
        max_size=30,
    ),
    min_size=1,
    max_size=30,
)
"""Matrices of numbers, many of them long enough to be shared."""


@settings(max_examples=300, deadline=None)
@given(
    value=st.recursive(
        SCALARS | MATRICES,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
        ),
        max_leaves=12,
    ),
    again=MATRICES,
)
def test_shared_matrices_read_any_json_exactly_as_json_loads(value: Any, again: Any) -> None:
    # the same matrices in more than one place and document, inside objects and arrays, and a
    # string that looks like the reader's own placeholder
    documents = [
        value,
        {"a": value, "b": {"m": again, "n": [again, {"m": again}]}, "c": again},
        {"s": "\0shared-matrix:0", "m": again, "t": ["\0shared-matrix:0"]},
    ]
    read = SharedMatrices()
    for document in documents * 2:
        text = canonical_json(document)
        assert exact(read(text)) == exact(json.loads(text))


def test_items_of_one_game_share_one_parsed_payoff_matrix() -> None:
    items = games.generate_items(6, 5, games=("11-20",), conditions=("recursive",))
    bodies = [canonical_json(it.to_dict()) for it in items]
    read = SharedMatrices()
    rebuilt = [Item.from_json(body, loads=read) for body in bodies]
    assert rebuilt == items
    payoffs = {id(it.truth["payoff"]) for it in rebuilt}
    assert len(payoffs) == len({canonical_json(it.truth["payoff"]) for it in items}) == 1


def test_shared_matrices_keep_a_bounded_number_of_matrices() -> None:
    read = SharedMatrices()
    for n in range(3 * SharedMatrices.KEPT):
        text = canonical_json({"m": [[n + k for k in range(200)]], "p": "x" * 600})
        assert read(text)["m"] == [[n + k for k in range(200)]]
    assert len(read._parsed) == SharedMatrices.KEPT
    assert sum(len(known) for known in read._heads.values()) == SharedMatrices.KEPT


def test_a_matrix_met_before_is_told_from_one_that_starts_as_it_does() -> None:
    # the same first bytes (the index of matrices met before), then different rows or lengths,
    # and the same matrix where the last document held it and elsewhere
    first = [[k for k in range(1000, 1200)], [1, 2]]
    longer = [[k for k in range(1000, 1200)], [1, 2], [3]]
    other = [[k for k in range(1000, 1200)], [1, 3]]
    documents = [
        {"m": first, "p": "x" * 600},
        {"m": longer, "p": "x" * 600},
        {"m": other, "p": "x" * 600},
        {"a": {"m": first}, "m": first, "p": "x" * 600},
        {"m": [first], "n": first, "p": "x" * 600},
        {"m": first, "p": "x" * 600},
    ]
    read = SharedMatrices()
    for document in documents:
        text = canonical_json(document)
        assert read(text) == json.loads(text)
    assert len(read._parsed) == 3


def test_a_stored_run_reads_its_games_with_their_payoffs_shared(sqlite_url: str) -> None:
    items = games.generate_items(7, 4, games=("11-20",), conditions=("recursive",))
    store = Store(open_engine(sqlite_url))
    store.create_run(
        "r",
        suite="t",
        seed=1,
        held_out=False,
        params={},
        agents=[RunAgent("a", "agent", {})],
        items=items,
    )
    stored = list(store.run_items("r"))
    assert stored == items
    assert len({id(it.truth["payoff"]) for it in stored}) == 1
