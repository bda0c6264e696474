"""A fresh PostgreSQL database on the test server, for the tests that need one of their own
(procrastinate keeps its tables in the default schema, so a queue or a worker cannot share a
database with another test: the schema-per-test fixtures of ``tests/conftest.py`` do not do)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from ledger.db import normalise_url

PG_URL = os.environ.get("MINDLEDGER_TEST_PG_URL", "")


@contextlib.contextmanager
def fresh_database(prefix: str) -> Iterator[str]:
    """The URL of a new, empty database named ``prefix`` + a random suffix, dropped afterwards.
    Skips the test where ``MINDLEDGER_TEST_PG_URL`` is unset; fails it under CI."""
    if not PG_URL:
        if os.environ.get("CI"):
            pytest.fail("MINDLEDGER_TEST_PG_URL is not set under CI: PostgreSQL tests must run")
        pytest.skip("MINDLEDGER_TEST_PG_URL not set")
    name = prefix + uuid.uuid4().hex[:12]
    admin = sa.create_engine(normalise_url(PG_URL), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()
