"""Which schema a database has, told without SQLAlchemy: the table where
:mod:`ledger.migrations` records the migrations it applied, and the ids of every migration in
order.

A reader that skips the ORM (:mod:`ledger.catalog`) trusts a database only when its recorded
migrations are exactly :data:`MIGRATION_IDS`. The migrations themselves live in
:mod:`ledger.migrations`, which needs SQLAlchemy (and alembic to apply them);
``tests/ledger/test_schema.py`` checks that this list names them, in the same order.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS_TABLE", "MIGRATION_IDS"]

MIGRATIONS_TABLE = "_migrations"
"""The table of applied migrations: one row per migration, ``name`` (its id) and ``applied_at``."""

MIGRATION_IDS: tuple[str, ...] = (
    "0001_runs_items_trials",
    "0002_predictions",
    "0003_api_tokens",
    "0004_token_scopes",
    "0005_ledger_tree",
    "0006_notifications",
    "0007_judgements",
    "0008_held_forecasts",
)
"""The id of every migration in :data:`ledger.migrations.MIGRATIONS`, in the order they apply.
A new migration adds its id here too."""
