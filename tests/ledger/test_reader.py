"""The dashboard's reads without SQLAlchemy (ledger.reader): a Reader opened from the URL
answers as the Store's own Reader (over the engine's connection) does, and as the ORM rows say,
on SQLite and real PostgreSQL; a run loaded either way is the same; the SQL names only declared
columns, which the models have; and it declines a database it cannot vouch for."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlmodel import Session, SQLModel, select

import ledger.models  # noqa: F401  (registers the tables)
import ledger.reader as reader_module
from ledger.catalog import read_run_listing
from ledger.db import open_engine
from ledger.models import RunRow, TrialRow
from ledger.reader import COLUMNS_READ, Reader, RunAgent
from ledger.schema import MIGRATION_IDS, MIGRATIONS_TABLE
from ledger.store import JudgementRecord, Store
from reports._data import RunData, load_run
from reports.matrix_runs import accompanying_matrix
from tests.ledger.test_catalog import SPEC, store_sample_runs
from tui.source import run_summary


def _judge_and_accompany(url: str) -> None:
    """Two judgements of one trial of ``mixed`` and a complete matrix run beside it."""
    engine = open_engine(url, migrate_schema=False)
    store = Store(engine)
    (item_id,) = [t[1] for t in _trials(store, "mixed") if t[0] == "zeta" and t[3]]
    for judge, status in (("j1", "ok"), ("j2", "parse_error")):
        assert store.record_judgement(JudgementRecord(
            run_id="mixed", agent="zeta", item_id=item_id, judge=judge, judge_hash="sha256:x",
            status=status, score={"details": {"judge": judge}},
        ))  # fmt: skip
    store.create_run("m1", suite="matrix", seed=1, held_out=False,
                     params={"accompanies": "mixed"}, agents=[RunAgent("zeta", "agent", SPEC)],
                     items=[])  # fmt: skip
    store.set_run_status("m1", "complete", finished=True)
    engine.dispose()


def _trials(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    with store.reader() as r:
        return r.trial_rows(run_id)


def _answers(r: Reader) -> dict[str, Any]:
    runs = ("mixed", "sealed", "fresh", "m1")
    return {
        "runs": r.list_runs(20),
        "two": r.list_runs(2),
        "each": [r.get_run(x) for x in runs],
        "agents": [r.run_agents(x) for x in runs],
        "counts": [r.trial_counts(x) for x in runs],
        "failures": r.failure_counts(list(runs)),
        "bodies": [r.item_bodies(x) for x in runs],
        "trials": [r.trial_rows(x) for x in runs],
        "judgements": [r.judgement_rows(x) for x in runs],
        "matrix": r.runs_of_suite("matrix", "complete"),
        "proxy": r.proxy_entries(["agent:zeta"]),
        "last": r.last_entry_time(),
        "summaries": [run_summary(r, x) for x in runs],
        "accompanies": [accompanying_matrix(r, x) for x in runs],
    }


def _same_run_data(a: RunData, b: RunData) -> None:
    assert (a.run, a.agents, a.proxy, a.judgements) == (b.run, b.agents, b.proxy, b.judgements)
    for table_a, table_b in ((a.items, b.items), (a.trials, b.trials)):
        for name, value in vars(table_a).items():
            other = vars(table_b)[name]
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(value, other, err_msg=name)
            else:
                assert value == other, name


def test_a_reader_of_the_url_answers_as_the_stores_reader_and_the_orm(db_url: str) -> None:
    store_sample_runs(db_url)
    _judge_and_accompany(db_url)
    opened = Reader.open(db_url)
    assert opened is not None
    engine = open_engine(db_url, migrate_schema=False)
    store = Store(engine)
    try:
        with store.reader() as through_store:
            expected = _answers(through_store)
        got = _answers(opened)
        assert got == expected

        # and as the ORM reads the same rows
        with Session(engine) as s:
            orm_runs = s.exec(select(RunRow).order_by(sa.desc(RunRow.created_at))).all()
            orm_trials = s.exec(
                select(TrialRow).where(TrialRow.run_id == "mixed").order_by(TrialRow.id)
            ).all()  # type: ignore[arg-type]
        assert [(r.id, r.suite, r.seed, r.held_out, r.status, r.created_at, r.finished_at)
                for r in orm_runs] == [
            (r.id, r.suite, r.seed, r.held_out, r.status, r.created_at, r.finished_at)
            for r in got["runs"]
        ]  # fmt: skip
        assert [(t.agent, t.item_id, t.status, t.correct, t.answer_json) for t in orm_trials] == [
            (t[0], t[1], t[2], t[3], t[11]) for t in got["trials"][0]
        ]
        assert {a.name for a in got["agents"][0]} == {"zeta", "zeta-control", "ref:oracle",
                                                      "alpha"}  # fmt: skip
        assert got["counts"][0]["zeta"] == {"ok": 2, "api_error": 1, "not_applicable": 0,
                                            "correct": 1}  # fmt: skip
        assert [row[2:4] for row in got["judgements"][0]] == [("j1", "ok"), ("j2", "parse_error")]
        assert got["accompanies"] == ["m1", None, None, None]
        assert got["summaries"][1].seed is None  # sealed: held out, its seed withheld

        # a run loaded through either is the same run
        _same_run_data(load_run(opened, "mixed"), load_run(store, "mixed"))
    finally:
        opened.close()
        engine.dispose()


def test_the_reader_reads_only_declared_names_that_the_models_have(sqlite_url: str) -> None:
    engine = open_engine(sqlite_url)
    tables = SQLModel.metadata.tables
    for table, columns in COLUMNS_READ.items():
        if table in tables:
            have = set(tables[table].columns.keys())
        else:  # the migrations' bookkeeping, the judgements: tables without a model
            have = {c["name"] for c in sa.inspect(engine).get_columns(table)}
        assert set(columns) <= have, table
    engine.dispose()
    declared = set(COLUMNS_READ) | {c for cs in COLUMNS_READ.values() for c in cs}
    statements = [v for k, v in vars(reader_module).items() if k.endswith("_SQL")]
    assert len(statements) >= 12
    for sql in statements:
        names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b", re.sub(r"'[^']*'|\{ids\}", "", sql)))
        assert names and names <= declared, sql


def test_the_reader_declines_a_database_it_cannot_vouch_for(tmp_path: Path) -> None:
    missing = tmp_path / "none" / "m.db"
    assert Reader.open(f"sqlite:///{missing}") is None
    assert not missing.parent.exists()
    (tmp_path / "empty.db").touch()
    assert Reader.open(f"sqlite:///{tmp_path / 'empty.db'}") is None

    url = f"sqlite:///{tmp_path / 'm.db'}"
    store_sample_runs(url)
    opened = Reader.open(url)
    assert opened is not None
    opened.close()
    with sqlite3.connect(tmp_path / "m.db") as conn:  # a migration not applied yet
        conn.execute(f"DELETE FROM {MIGRATIONS_TABLE} WHERE name = ?", (MIGRATION_IDS[-1],))
    assert Reader.open(url) is None
    for other in ("sqlite://", "sqlite:///:memory:", f"sqlite:///{tmp_path}/a%20b.db",
                  "mysql://u@h/db", "postgresql+psycopg2://u@h/db"):  # fmt: skip
        assert Reader.open(other) is None, other


def test_a_runs_agents_come_in_name_order_on_every_database(db_url: str) -> None:
    """SQLite read them in its primary-key index's order (by name), PostgreSQL in the order the
    rows were written: the SQL now says which."""
    engine = open_engine(db_url)
    store = Store(engine)
    names = ["zed", "mid", "alpha", "kappa"]
    store.create_run("ordered", suite="quick", seed=1, held_out=False, params={},
                     agents=[RunAgent(n, "agent", SPEC) for n in names], items=[])  # fmt: skip
    assert [a.name for a in store.run_agents("ordered")] == sorted(names)
    engine.dispose()
    listed = [r for r in read_run_listing(db_url, 10) or [] if r.id == "ordered"]
    assert [a.name for a in listed[0].agents] == sorted(names)
