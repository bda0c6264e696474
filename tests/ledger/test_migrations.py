"""A database migrated from empty equals the SQLModel models; migrating twice is a no-op."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

import ledger.models  # noqa: F401  (registers the tables)
from ledger.db import open_engine, schema_version, utc_now
from ledger.migrations import MIGRATIONS, migrate


def test_migrated_schema_equals_models(db_url: str) -> None:
    engine = open_engine(db_url)
    with engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(ctx, SQLModel.metadata)
    # the migrations bookkeeping table is ours, not a model
    diff = [d for d in diff if not (d[0] == "remove_table" and d[1].name == "_migrations")]
    assert diff == []
    assert schema_version(engine) == (MIGRATIONS[-1][0], 0)
    assert migrate(engine, utc_now) == []
    engine.dispose()


def _open(url: str) -> int:
    from ledger.db import open_engine

    engine = open_engine(url)
    engine.dispose()
    return 0


def test_concurrent_first_opens_do_not_collide(db_url: str) -> None:
    """Several processes opening a new database at once: each migration applies exactly once."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(4) as pool:
        assert list(pool.map(_open, [db_url] * 4)) == [0, 0, 0, 0]
    engine = open_engine(db_url, migrate_schema=False)
    assert schema_version(engine) == (MIGRATIONS[-1][0], 0)
    engine.dispose()
