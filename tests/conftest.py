"""Shared fixtures: a fresh database on SQLite and, where configured, on real PostgreSQL.

PostgreSQL tests use the server named by ``MINDLEDGER_TEST_PG_URL`` (``.ci/run`` starts one and
sets it); each test gets a schema of its own. Under CI (``CI=true``) a missing server is an
error, not a skip, so the PostgreSQL half of the suite can never silently vanish.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

PG_URL = os.environ.get("MINDLEDGER_TEST_PG_URL", "")

# pytest-xdist's workers start with COLUMNS=80 and LINES=24 in their environment; a command's
# table written to a pipe takes its width from COLUMNS when set (harness.cli.tables), so the
# same test would print other tables under xdist than alone. Tests that need a width set it.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """A failing test's report also shows what its fixtures can say about the failure: any
    fixture value with a ``failure_context()`` method (a ``(title, text)`` pair), such as a
    daemon in a child process, whose log holds the reason a wait timed out (CI keeps only the
    report)."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        context = getattr(value, "failure_context", None)
        if callable(context):
            try:
                title, text = context()
            except Exception as exc:  # the report must still be written
                title, text = "failure context", f"could not be read: {exc!r}"
            report.sections.append((title, text))


@pytest.fixture(autouse=True, scope="session")
def _no_user_data_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that names no data directory gets a temporary one, never the user's: executing a
    run seals it in the ledger, which creates a service key in the data directory."""
    if os.environ.get("MINDLEDGER_HOME"):
        yield
        return
    os.environ["MINDLEDGER_HOME"] = str(tmp_path_factory.mktemp("default-home"))
    try:
        yield
    finally:
        os.environ.pop("MINDLEDGER_HOME", None)


def _pg_schema_url(base: str) -> Iterator[str]:
    from ledger.db import normalise_url

    schema = "t_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(normalise_url(base))
    with admin.begin() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: SQLite in a temp dir, then PostgreSQL."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'test.db'}"
        return
    if not PG_URL:
        if os.environ.get("CI"):
            pytest.fail("MINDLEDGER_TEST_PG_URL is not set under CI: PostgreSQL tests must run")
        pytest.skip("MINDLEDGER_TEST_PG_URL not set")
    yield from _pg_schema_url(PG_URL)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'test.db'}"


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """MINDLEDGER_HOME in a temp dir, no MINDLEDGER_* variables, cwd in a temp dir."""
    for key in list(os.environ):
        if key.startswith("MINDLEDGER_") and key != "MINDLEDGER_TEST_PG_URL":
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MINDLEDGER_HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return home
