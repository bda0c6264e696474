"""``mindledger db``: schema status and migrations."""

from __future__ import annotations

import click

from harness.cli.common import echo_json, get_settings
from ledger.db import mask, open_engine, schema_version
from ledger.migrations import migrate, pending_migrations


@click.group()
def db() -> None:
    """Create, migrate and inspect the database.

    \b
    Example:
      mindledger db migrate
      mindledger --db postgresql://user@host/mindledger db status
    """


@db.command("status")
def status() -> None:
    """Show the database URL, the schema version and pending migrations (changes nothing)."""
    url = get_settings(click.get_current_context()).database_url
    engine = open_engine(url, migrate_schema=False)
    version, _ = schema_version(engine)
    echo_json({"url": mask(url), "schema": version, "pending": pending_migrations(engine)})


@db.command("migrate")
def migrate_cmd() -> None:
    """Apply every pending migration (each in its own transaction)."""
    url = get_settings(click.get_current_context()).database_url
    engine = open_engine(url, migrate_schema=False)
    from ledger.db import utc_now

    applied = migrate(engine, utc_now)
    version, _ = schema_version(engine)
    echo_json({"url": mask(url), "applied": applied, "schema": version})
