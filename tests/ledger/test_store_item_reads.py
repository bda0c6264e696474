"""Items read back from storage (Store.run_items pages, Store.items_by_id) are the items stored,
and a stored item whose content no longer matches its id is refused, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ledger.db import open_engine
from ledger.models import ItemRow
from ledger.store import RunAgent, Store
from mindledger.canonical import canonical_json
from mindledger.errors import StorageError
from mindledger.items import Item

AGENTS = [RunAgent("a", "agent", {"adapter": "reference", "policy": "oracle"})]


def item(i: int) -> Item:
    return Item(family="t", generator="g", version="1", seed=i, params={"i": i},
                prompt=f"q{i} é", answer={"kind": "yesno"},
                truth={"answer": "yes" if i % 2 else "no", "p": [0.5, 1e-9]})


def stored_run(db_url: str, n: int) -> tuple[Store, list[Item]]:
    store = Store(open_engine(db_url))
    items = [item(i) for i in range(n)]
    store.create_run("r", suite="s", seed=1, held_out=False, params={}, agents=AGENTS,
                     items=items)
    return store, items


def set_body(store: Store, item_id: str, body: str) -> None:
    table = ItemRow.__table__  # type: ignore[attr-defined]
    with store.engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.id == item_id).values(body_json=body))


def test_items_read_back_are_the_items_stored(db_url: str) -> None:
    store, items = stored_run(db_url, 300)  # more than one page
    assert list(store.run_items("r")) == items
    assert store.run_items("r")[299] == items[299]
    assert store.items_by_id([items[5].id, items[1].id]) == [items[5], items[1]]


def test_a_tampered_item_is_refused_not_scored(db_url: str) -> None:
    store, items = stored_run(db_url, 3)
    target = items[1]
    body = canonical_json(target.to_dict()).decode("utf-8")
    set_body(store, target.id, body.replace('"answer":"yes"', '"answer":"no"'))
    with pytest.raises(StorageError, match=f"stored item {target.id} is corrupt"):
        store.run_items("r")[1]
    with pytest.raises(StorageError, match=target.id):
        store.items_by_id([target.id])
    assert store.items_by_id([items[0].id, items[2].id]) == [items[0], items[2]]  # the others


def test_an_item_stored_under_another_id_is_refused(db_url: str) -> None:
    store, items = stored_run(db_url, 3)
    # a valid item's JSON, under the id of another: its content matches its own id only
    set_body(store, items[0].id, canonical_json(items[2].to_dict()).decode("utf-8"))
    with pytest.raises(StorageError, match=f"holds another item \\({items[2].id}\\)"):
        store.items_by_id([items[0].id])
    with pytest.raises(StorageError, match=items[0].id):
        list(store.run_items("r"))


def test_a_body_that_is_not_json_is_a_storage_error(db_url: str) -> None:
    store, items = stored_run(db_url, 1)
    set_body(store, items[0].id, "{truncated")
    with pytest.raises(StorageError, match="is corrupt"):
        store.items_by_id([items[0].id])
