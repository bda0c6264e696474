"""``mindledger db``: schema status and migrations."""

from __future__ import annotations

import click

from harness.cli.common import echo_json, get_settings
from harness.workspace import Workspace
from ledger.db import mask, schema_version
from ledger.migrations import migrate, pending_migrations


@click.group()
def db() -> None:
    """Create, migrate and inspect the database.

    \b
    Examples:
      mindledger db migrate
      mindledger --db postgresql://user@host/mindledger db status
    """


@db.command("status")
def status() -> None:
    """Show the database URL, the schema version and pending migrations (changes nothing).

    \b
    Example:
      mindledger --db postgresql://user@host/mindledger db status
    """
    settings = get_settings(click.get_current_context())
    url = settings.database_url
    engine = Workspace.open(settings, migrate=False).engine
    version, _ = schema_version(engine)
    echo_json({"url": mask(url), "schema": version, "pending": pending_migrations(engine)})


@db.command("migrate")
def migrate_cmd() -> None:
    """Apply every pending migration (each in its own transaction).

    \b
    Example:
      mindledger --db postgresql://user@host/mindledger db migrate
    """
    settings = get_settings(click.get_current_context())
    url = settings.database_url
    engine = Workspace.open(settings, migrate=False).engine
    from ledger.db import utc_now

    applied = migrate(engine, utc_now)
    version, _ = schema_version(engine)
    echo_json({"url": mask(url), "applied": applied, "schema": version})
