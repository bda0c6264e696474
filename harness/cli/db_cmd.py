"""``mindledger db``: schema status and migrations."""

from __future__ import annotations

import click

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import format_option
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
@format_option("an object: url (password masked), schema, pending (migration names)")
def status(fmt: str) -> None:
    """Show the database URL, the schema version and pending migrations (changes nothing).

    \b
    Examples:
      mindledger --db postgresql://user@host/mindledger db status
      mindledger db status --format json | jq '.pending | length'
    """
    settings = get_settings(click.get_current_context())
    url = settings.database_url
    engine = Workspace.open(settings, migrate=False, read_only=True).engine
    version, _ = schema_version(engine)
    pending = pending_migrations(engine)
    if fmt == "json":
        echo_json({"url": mask(url), "schema": version, "pending": pending})
        return
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console

    table = Table(show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for field, value in (
        ("database", mask(url)),
        ("schema", str(version) if version else "none (`mindledger db migrate` creates it)"),
        ("pending", ", ".join(pending) if pending else "none: up to date"),
    ):
        table.add_row(field, Text(value))
    print_table(stdout_console(), table)


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
