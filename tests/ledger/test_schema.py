"""ledger.schema names the migrations ledger.migrations defines, in order, without importing
SQLAlchemy."""

from __future__ import annotations

import subprocess
import sys

from ledger.migrations import MIGRATIONS
from ledger.schema import MIGRATION_IDS


def test_migration_ids_name_every_migration_in_order() -> None:
    assert tuple(name for name, _ in MIGRATIONS) == MIGRATION_IDS


def test_the_schema_and_the_catalog_import_no_database_library() -> None:
    probe = (
        "import sys, ledger.schema, ledger.catalog; "
        "print(sorted({'sqlalchemy', 'sqlmodel', 'alembic', 'psycopg'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
