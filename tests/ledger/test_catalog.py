"""The list of runs read without SQLAlchemy (ledger.catalog) equals the store's, value for value
and in the same order, on SQLite and real PostgreSQL; it reads only the names it declares, which
the models have; and it declines every database it cannot vouch for, creating none."""

from __future__ import annotations

import itertools
import re
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlmodel import SQLModel

import ledger.catalog as catalog
import ledger.models  # noqa: F401  (registers the tables)
from ledger.catalog import COLUMNS_READ, FailureCounts, ListedAgent, read_run_listing
from ledger.db import open_engine
from ledger.schema import MIGRATION_IDS, MIGRATIONS_TABLE
from ledger.store import RunAgent, Store, TrialRecord
from tests.ledger.test_store import make_items

SPEC = {"adapter": "reference", "policy": "oracle"}


def store_sample_runs(url: str) -> None:
    """Three runs in ``url`` (migrated here): ``mixed`` (agents stored in an order that is not
    their names' order; an agent with API errors, an unreadable answer and a right one; its
    control failing as often, so the two tie for the worst; a reference with a trial of another
    family; an agent with no trial), ``sealed`` (held out, one unparsed trial whose answer is
    the text ``null``) and ``fresh`` (no trial yet), created in that order."""
    ticks = (f"2026-12-03T10:{m:02d}:00.000000+00:00" for m in itertools.count())
    engine = open_engine(url)
    store = Store(engine, clock=lambda: next(ticks))
    items = make_items(3)
    mixed = [
        RunAgent("zeta", "agent", SPEC),
        RunAgent("zeta-control", "control", SPEC, "zeta"),
        RunAgent("ref:oracle", "reference", SPEC),
        RunAgent("alpha", "reference", SPEC),
    ]
    store.create_run("mixed", suite="quick", seed=4242, held_out=False, params={},
                     agents=mixed, items=items)  # fmt: skip

    def trial(run: str, agent: str, i: int, status: str, answer: object = None) -> None:
        assert store.record_trial(TrialRecord(
            run_id=run, agent=agent, item_id=items[i].id, status=status,
            transcript=[{"role": "user", "content": "q"}], answer=answer,
            correct=answer == "yes" if status == "ok" else None,
            error="boom" if status == "api_error" else None,
        ))  # fmt: skip

    trial("mixed", "zeta", 0, "ok", "yes")
    trial("mixed", "zeta", 1, "ok")  # unparsed
    trial("mixed", "zeta", 2, "api_error")
    trial("mixed", "zeta-control", 0, "api_error")
    trial("mixed", "zeta-control", 1, "ok", "no")
    trial("mixed", "zeta-control", 2, "ok")  # unparsed: 2 of 3 failed, as zeta
    trial("mixed", "ref:oracle", 0, "ok", "yes")
    trial("mixed", "ref:oracle", 1, "not_applicable")
    store.set_run_status("mixed", "complete", finished=True)
    store.create_run("sealed", suite="nesttom", seed=9_000_000_123, held_out=True, params={},
                     agents=mixed[:1], items=items[:1])  # fmt: skip
    trial("sealed", "zeta", 0, "ok")
    with engine.begin() as conn:  # unparsed too: the store counts JSON null as no answer
        conn.execute(sa.text("UPDATE trials SET answer_json = 'null' WHERE run_id = 'sealed'"))
    store.create_run("fresh", suite="quick", seed=7, held_out=False, params={},
                     agents=mixed[2:], items=items[:2])  # fmt: skip
    engine.dispose()


def test_the_reader_lists_what_the_store_lists(db_url: str) -> None:
    store_sample_runs(db_url)
    engine = open_engine(db_url, migrate_schema=False)
    store = Store(engine)
    for limit in (20, 2, 1):
        read = read_run_listing(db_url, limit)
        assert read is not None
        assert read == store.run_listing(limit)  # counts are pairs: their order is compared
    engine.dispose()

    fresh, sealed, mixed = read_run_listing(db_url, 20) or []
    assert [r.id for r in (fresh, sealed, mixed)] == ["fresh", "sealed", "mixed"]
    assert (sealed.held_out, sealed.seed, mixed.held_out) == (True, 9_000_000_123, False)
    assert mixed.status == "complete" and mixed.finished_at and fresh.finished_at is None
    assert set(mixed.agents) == {ListedAgent("zeta", "agent"),
                                 ListedAgent("zeta-control", "control"),
                                 ListedAgent("ref:oracle", "reference"),
                                 ListedAgent("alpha", "reference")}  # fmt: skip
    counted = {a: replace(c, last_trial_at=None) for a, c in mixed.failures.items()}
    assert counted == {
        "zeta": FailureCounts(trials=3, errors=1, unparsed=1, not_applicable=0, correct=1),
        "zeta-control": FailureCounts(trials=3, errors=1, unparsed=1, not_applicable=0),
        "ref:oracle": FailureCounts(trials=2, errors=0, unparsed=0, not_applicable=1, correct=1),
    }
    # each agent's newest trial, and the run's: ref:oracle's were recorded last
    last = {a: c.last_trial_at for a, c in mixed.failures.items()}
    assert all(t and t.startswith("2026-12-03T10:") for t in last.values()), last
    assert last["zeta"] < last["zeta-control"] < last["ref:oracle"] == mixed.last_trial_at
    assert replace(sealed.failures["zeta"], last_trial_at=None) == FailureCounts(1, 0, 1, 0)
    assert fresh.counts == () and fresh.last_trial_at is None


def test_the_reader_asks_one_question_per_table_whatever_the_number_of_runs(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_sample_runs(sqlite_url)
    seen: list[str] = []
    real = catalog._read

    class Spy:
        def __init__(self, cur: catalog._Cursor) -> None:
            self.cur = cur

        def execute(self, sql: str, params: object = ()) -> object:
            seen.append(re.findall(r"FROM (\w+)", sql)[0])
            return self.cur.execute(sql, params)  # type: ignore[arg-type]

        def fetchall(self) -> list[object]:
            return self.cur.fetchall()

    monkeypatch.setattr(catalog, "_read", lambda cur, limit, **kw: real(Spy(cur), limit, **kw))
    assert len(read_run_listing(sqlite_url, 20) or []) == 3
    assert seen == [MIGRATIONS_TABLE, "runs", "run_agents", "trials"]


def test_the_reader_reads_only_declared_names_that_the_models_have(sqlite_url: str) -> None:
    tables = SQLModel.metadata.tables
    for table, columns in COLUMNS_READ.items():
        if table == MIGRATIONS_TABLE:  # the migrations' own bookkeeping, not a model
            engine = open_engine(sqlite_url)
            have = {c["name"] for c in sa.inspect(engine).get_columns(table)}
            engine.dispose()
        else:
            have = set(tables[table].columns.keys())
        assert set(columns) <= have, table
    declared = set(COLUMNS_READ) | {c for cs in COLUMNS_READ.values() for c in cs}
    statements = [catalog.APPLIED_MIGRATIONS_SQL, catalog.RUNS_SQL, catalog.RUN_AGENTS_SQL,
                  catalog.FAILURE_COUNTS_SQL]  # fmt: skip
    for sql in statements:
        names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", re.sub(r"'[^']*'|\{ids\}", "", sql)))
        assert names and names <= declared, sql


def test_the_reader_declines_a_database_it_cannot_vouch_for(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "m.db"
    assert read_run_listing(f"sqlite:///{missing}", 20) is None
    assert not missing.parent.exists()  # nothing created: the store path does that
    (tmp_path / "empty.db").touch()
    assert read_run_listing(f"sqlite:///{tmp_path / 'empty.db'}", 20) is None

    url = f"sqlite:///{tmp_path / 'm.db'}"
    store_sample_runs(url)
    assert read_run_listing(url, 20) is not None
    with sqlite3.connect(tmp_path / "m.db") as conn:  # a migration not applied yet
        conn.execute(f"DELETE FROM {MIGRATIONS_TABLE} WHERE name = ?", (MIGRATION_IDS[-1],))
    assert read_run_listing(url, 20) is None
    with sqlite3.connect(tmp_path / "m.db") as conn:  # a newer mindledger's migration
        conn.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES (?, 'x'), ('9999_later', 'x')",
                     (MIGRATION_IDS[-1],))  # fmt: skip
    assert read_run_listing(url, 20) is None

    for other in ("sqlite://", "sqlite:///:memory:", f"sqlite:///{tmp_path}/a%20b.db",
                  f"sqlite:///{tmp_path / 'm.db'}?timeout=3", "sqlite:///~/m.db",
                  "mysql://u@h/db", "postgresql+psycopg2://u@h/db"):  # fmt: skip
        assert read_run_listing(other, 20) is None, other
    # a server that does not answer: the store path says so, in its words
    assert read_run_listing("postgresql://nobody@127.0.0.1:1/none", 20) is None
