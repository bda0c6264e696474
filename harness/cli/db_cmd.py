"""``mindledger db``: schema status and migrations, backup and restore."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import format_option
from harness.config.workspace import Workspace
from ledger.db import mask, schema_version
from ledger.migrations import migrate, pending_migrations
from mindledger.errors import InputError, StorageError

if TYPE_CHECKING:
    from harness.config.settings import Settings


@click.group()
def db() -> None:
    """Create, migrate and inspect the database.

    \b
    Examples:
      mindledger db migrate
      mindledger db backup /var/backups/mindledger/mindledger-$(date +%F).db
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


def _sqlite_file(settings: Settings) -> Path | None:
    """The file of the configured SQLite database; None when the database is PostgreSQL."""
    from ledger.db import normalise_url, parse_url

    url = parse_url(normalise_url(settings.database_url))
    if url.get_backend_name() != "sqlite":
        return None
    if not url.database or url.database == ":memory:":
        raise InputError(f"{mask(settings.database_url)} is an in-memory database", where="--db")
    return Path(url.database).expanduser()


@db.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--full",
    is_flag=True,
    help="Check every ledger entry's signature in the copy too (slower; as `ledger verify "
    "--full`).",
)
@format_option(
    "an object: path, bytes, ok, schema, runs, trials, ledger_entries, ledger_head, "
    "heads_checked, problems, warnings"
)
def backup_cmd(file: Path, full: bool, fmt: str) -> None:
    """Copy the database to FILE while the daemon writes, then check the copy.

    SQLite: the online backup API copies the database as of one commit (writers go on beside
    it) into a temporary file, which is checked — SQLite's integrity and foreign-key checks,
    its runs, trials and ledger entries counted, the ledger verified with this data
    directory's key against the heads it published — and only then renamed to FILE. Exit 2,
    and FILE untouched, when the copy does not check out. The service key (keys/) and the
    published heads (ledger-heads.jsonl) live in the data directory, not the database: keep a
    copy of them too. PostgreSQL: prints the pg_dump command to run instead, and exits 2.

    \b
    Examples:
      mindledger db backup mindledger-$(date +%F).db
      mindledger db backup /var/backups/mindledger/nightly.db --format json
    """
    from ledger.backup import backup_sqlite, pg_dump_guidance

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    source = _sqlite_file(settings)
    if source is None:  # exit 2: nothing was backed up, whatever runs this must not think so
        click.echo("error: " + pg_dump_guidance(settings.database_url, str(file)), err=True)
        ctx.exit(2)
    check = backup_sqlite(source, file, home=settings.home, full=full)
    for warning in check.warnings:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        echo_json(check.to_dict())
        return
    click.echo(f"backed up {source} to {file}: {check.summary()}")


@db.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Restore even while a process has the database open, or when the backup's ledger "
    "ends before entries this data directory saw (they are cut off).",
)
@format_option(
    "an object: backup and restored (each as `db backup` prints it), before_restore (where "
    "the replaced database was kept), overridden (the refusals --force overrode)"
)
def restore_cmd(file: Path, force: bool, fmt: str) -> None:
    """Replace the database by the backup FILE, keeping the replaced one as NAME.before-restore.

    FILE is checked first as `db backup` checks a copy (with this data directory's key: a
    backup restores into the data directory it came from, or one holding a copy of its
    keys/). Refused (exit 2, nothing changed) while a process has the database open — the
    daemon, a worker, the dashboard: stop them first — or when this data directory saw the
    ledger grow past the backup's last entry (restoring cuts those signed entries off, and
    the service then refuses to append); --force restores anyway. PostgreSQL: use
    pg_restore (see `mindledger db backup`).

    \b
    Examples:
      mindledger db restore mindledger-2026-12-01.db   # the daemon stopped first
      MINDLEDGER_HOME=/tmp/look mindledger db restore nightly.db  # a copy to read
    """
    from ledger.backup import BEFORE_RESTORE, restore_sqlite

    settings = get_settings(click.get_current_context())
    target = _sqlite_file(settings)
    if target is None:
        raise StorageError(
            f"{mask(settings.database_url)} is PostgreSQL: restore a pg_dump file with "
            "pg_restore (`mindledger db backup FILE` prints the command)"
        )
    done = restore_sqlite(file, target, home=settings.home, force=force)
    for reason in done.overridden:
        click.echo(f"warning: restored anyway (--force): {reason}", err=True)
    for warning in done.target.warnings:
        click.echo(f"warning: {warning}", err=True)
    if fmt == "json":
        echo_json(done.to_dict())
        return
    kept = (
        f"; the database it replaced is kept at {done.before}"
        if done.before
        else f" (there was no database to keep as {target.name}{BEFORE_RESTORE})"
    )
    click.echo(f"restored {file} to {target}: {done.target.summary()}{kept}")


@db.command("prune")
@click.option(
    "--transcripts-older-than",
    "days",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="DAYS",
    help="Prune the transcripts of trials stored more than DAYS days ago (default: the "
    "retention setting, [retention] transcripts_days).",
)
@click.option("--dry-run", is_flag=True, help="Say what would be pruned and freed; change nothing.")
@format_option("an object: before (the cutoff), trials, runs, bytes, dry_run")
def prune_cmd(days: float | None, dry_run: bool, fmt: str) -> None:
    """Replace old trials' transcripts by a marker ("transcript pruned on DATE").

    A transcript (every message of a trial as sent and received) is most of a database's
    bytes. What is never pruned: the prediction ledger (`ledger verify` passes after a prune),
    items, and a trial's answer, reply, scores and counts, so every report's figures stay as
    they were; nor the trials of runs still running or queued. The daemon prunes nightly when
    [retention] transcripts_days is set. SQLite reuses the freed pages; run VACUUM (with the
    daemon stopped) to shrink the file.

    \b
    Examples:
      mindledger db prune --transcripts-older-than 90 --dry-run
      mindledger db prune --transcripts-older-than 90
    """
    from ledger.retention import cutoff_before, prune_transcripts

    settings = get_settings(click.get_current_context())
    if days is None:
        if settings.retention_transcripts_days is None:
            raise InputError(
                "no retention period: pass --transcripts-older-than DAYS or set "
                "[retention] transcripts_days",
                where="--transcripts-older-than",
            )
        days = float(settings.retention_transcripts_days)
    store = Workspace.open(settings, read_only=dry_run).store
    report = prune_transcripts(
        store.engine, before=cutoff_before(days, store.clock()), dry_run=dry_run,
        clock=store.clock,
    )
    if fmt == "json":
        echo_json(report.to_dict())
        return
    click.echo(report.describe())
