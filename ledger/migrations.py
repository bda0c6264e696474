"""Schema migrations: small named functions applied in order and recorded by name.

Each migration takes an alembic :class:`~alembic.operations.Operations` object bound to a
connection inside one transaction, so a migration either applies whole or not at all. Never edit
a migration that has shipped: add a new one. ``tests/ledger/test_migrations.py`` checks that a
database migrated from empty equals the SQLModel models.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger.schema import MIGRATIONS_TABLE
from mindledger.errors import StorageError

if TYPE_CHECKING:
    from alembic.operations import Operations  # imported to migrate: alembic takes 0.3 s

__all__ = ["MIGRATIONS", "applied_migrations", "migrate", "pending_migrations"]

Migration = tuple[str, Callable[["Operations"], None]]


def m0001_runs_items_trials(op: Operations) -> None:
    op.create_table(
        "agents",
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("adapter", sa.String(), nullable=False),
        sa.Column("config_json", sa.Text(), nullable=False),
        sa.Column("config_hash", sa.String(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("suite", sa.String(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("held_out", sa.Boolean(), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
        sa.Column("finished_at", sa.String(), nullable=True),
    )
    op.create_index("ix_runs_status", "runs", ["status"])
    op.create_index("ix_runs_created_at", "runs", ["created_at"])
    op.create_table(
        "run_agents",
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("agent", sa.String(), primary_key=True),
        sa.Column("role", sa.String(), nullable=False),
        sa.Column("base_agent", sa.String(), nullable=True),
        sa.Column("spec_json", sa.Text(), nullable=False),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("family", sa.String(), nullable=False),
        sa.Column("generator", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("body_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_items_family", "items", ["family"])
    op.create_table(
        "run_items",
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("item_id", sa.String(), sa.ForeignKey("items.id"), primary_key=True),
        sa.Column("position", sa.Integer(), nullable=False),
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("item_id", sa.String(), sa.ForeignKey("items.id"), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("answer_json", sa.Text(), nullable=True),
        sa.Column("raw_text", sa.Text(), nullable=True),
        sa.Column("transcript_json", sa.Text(), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=True),
        sa.Column("correct", sa.Boolean(), nullable=True),
        sa.Column("score_value", sa.Float(), nullable=True),
        sa.Column("primary_error", sa.String(), nullable=True),
        sa.Column("score_json", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("provider_json", sa.Text(), nullable=True),
        sa.Column("created_at", sa.String(), nullable=False),
        sa.UniqueConstraint("run_id", "agent", "item_id", name="uq_trial_run_agent_item"),
    )
    op.create_index("ix_trials_run_id", "trials", ["run_id"])
    op.create_table(
        "response_cache",
        sa.Column("key", sa.String(), primary_key=True),
        sa.Column("response_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
    )


def m0002_predictions(op: Operations) -> None:
    """The prediction ledger: one append-only, hash-chained table (see ledger.models)."""
    op.create_table(
        "ledger_entries",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("subject", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("payload_json", sa.Text(), nullable=False),
        sa.Column("time", sa.String(), nullable=False),
        sa.Column("prev_hash", sa.String(), nullable=False),
        sa.Column("prev_signature", sa.Text(), nullable=False),
        sa.Column("hash", sa.String(), nullable=False),
        sa.Column("signature", sa.Text(), nullable=False),
        sa.UniqueConstraint("prev_hash", name="uq_ledger_entries_prev_hash"),
        sa.UniqueConstraint("hash", name="uq_ledger_entries_hash"),
    )
    op.create_index("ix_ledger_entries_subject", "ledger_entries", ["subject"])
    op.create_index("ix_ledger_entries_kind", "ledger_entries", ["kind"])
    # Append-only, enforced by the database too: UPDATE and DELETE (and TRUNCATE) fail. Someone
    # with rights to drop the triggers can still tamper; verification is what catches that.
    if op.get_bind().dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER ledger_entries_no_{action.lower()} BEFORE {action} "
                "ON ledger_entries BEGIN "
                "SELECT RAISE(ABORT, 'ledger entries are append-only'); END"
            )
    else:
        op.execute(
            "CREATE FUNCTION ledger_entries_append_only() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'ledger entries are append-only'; END $$"
        )
        op.execute(
            "CREATE TRIGGER ledger_entries_no_change BEFORE UPDATE OR DELETE ON ledger_entries "
            "FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only()"
        )
        op.execute(
            "CREATE TRIGGER ledger_entries_no_truncate BEFORE TRUNCATE ON ledger_entries "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only()"
        )


def m0003_api_tokens(op: Operations) -> None:
    """The daemon's bearer tokens, stored hashed (see ledger.models)."""
    op.create_table(
        "api_tokens",
        sa.Column("token_hash", sa.String(), primary_key=True),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
    )
    op.create_index("ix_api_tokens_agent", "api_tokens", ["agent"])


def m0004_token_scopes(op: Operations) -> None:
    """API tokens get a public id, a scope, a label, expiry, revocation, last use and a cap on
    open runs; ``api_run_requests`` records which token requested which run (see
    ledger.models). Tokens made before this migration become ``agent`` tokens that never
    expire, with the id ``tok_`` + the first 8 hex digits of their hash (more digits for the
    rare one whose 8 collide with an earlier token's)."""
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("token_id", sa.String(), nullable=True))
        batch.add_column(sa.Column("scope", sa.String(), nullable=True))
        batch.add_column(sa.Column("label", sa.String(), nullable=True))
        batch.add_column(sa.Column("expires_at", sa.String(), nullable=True))
        batch.add_column(sa.Column("revoked_at", sa.String(), nullable=True))
        batch.add_column(sa.Column("last_used_at", sa.String(), nullable=True))
        batch.add_column(sa.Column("max_queued_runs", sa.Integer(), nullable=True))
        batch.alter_column("agent", existing_type=sa.String(), nullable=True)
    conn = op.get_bind()
    tokens = sa.table(
        "api_tokens",
        sa.column("token_hash", sa.String()),
        sa.column("token_id", sa.String()),
        sa.column("scope", sa.String()),
        sa.column("created_at", sa.String()),
    )
    taken: set[str] = set()
    rows = conn.execute(
        sa.select(tokens.c.token_hash).order_by(tokens.c.created_at, tokens.c.token_hash)
    ).all()
    for (token_hash,) in rows:
        digest = str(token_hash).removeprefix("sha256:")
        n = 8
        while "tok_" + digest[:n] in taken and n < len(digest):
            n += 1
        token_id = "tok_" + digest[:n]
        taken.add(token_id)
        conn.execute(
            sa.update(tokens)
            .where(tokens.c.token_hash == token_hash)
            .values(token_id=token_id, scope="agent")
        )
    with op.batch_alter_table("api_tokens") as batch:
        batch.alter_column("token_id", existing_type=sa.String(), nullable=False)
        batch.alter_column("scope", existing_type=sa.String(), nullable=False)
        batch.create_index("ix_api_tokens_token_id", ["token_id"], unique=True)
    op.create_table(
        "api_run_requests",
        sa.Column("run_id", sa.String(), primary_key=True),
        sa.Column("token_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
    )
    op.create_index("ix_api_run_requests_token_id", "api_run_requests", ["token_id"])


def m0005_ledger_tree(op: Operations) -> None:
    """The ledger's Merkle tree (RFC 6962): the root of every perfect subtree, written once when
    its last leaf is appended (see ledger.merkle), append-only like the entries; filled in for
    the entries already there."""
    op.create_table(
        "ledger_tree",
        sa.Column("level", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("idx", sa.BigInteger(), primary_key=True, autoincrement=False),
        sa.Column("hash", sa.String(), nullable=False),
    )
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for action in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER ledger_tree_no_{action.lower()} BEFORE {action} "
                "ON ledger_tree BEGIN "
                "SELECT RAISE(ABORT, 'the ledger tree is append-only'); END"
            )
    else:
        op.execute(
            "CREATE TRIGGER ledger_tree_no_change BEFORE UPDATE OR DELETE ON ledger_tree "
            "FOR EACH ROW EXECUTE FUNCTION ledger_entries_append_only()"
        )
        op.execute(
            "CREATE TRIGGER ledger_tree_no_truncate BEFORE TRUNCATE ON ledger_tree "
            "FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_append_only()"
        )
    from ledger.merkle import CompactRange, leaf_hash  # pure; here to keep this module light

    tree = CompactRange()
    insert = sa.text("INSERT INTO ledger_tree (level, idx, hash) VALUES (:l, :i, :h)")
    batch: list[dict[str, object]] = []
    rows = conn.execute(sa.text("SELECT hash FROM ledger_entries ORDER BY seq"))
    for (digest,) in rows:
        for node in tree.append(leaf_hash(bytes.fromhex(str(digest)[7:]))):
            batch.append({"l": node.level, "i": node.index, "h": node.hash.hex()})
        if len(batch) >= 5000:
            conn.execute(insert, batch)
            batch = []
    if batch:
        conn.execute(insert, batch)


def m0006_notifications(op: Operations) -> None:
    """Regression notifications (see ledger.models: NotificationRow): one row per (agent, run,
    channel), whether it was sent or failed."""
    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("target", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("payload_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
        sa.UniqueConstraint("agent", "run_id", "channel", name="uq_notification_run_channel"),
    )
    op.create_index("ix_notifications_agent", "notifications", ["agent"])


def m0007_judgements(op: Operations) -> None:
    """The extraction judge's readings of trials' chains of thought (see ledger.models:
    JudgementRow): one row per (run, agent, item, judge)."""
    op.create_table(
        "judgements",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("item_id", sa.String(), sa.ForeignKey("items.id"), nullable=False),
        sa.Column("judge", sa.String(), nullable=False),
        sa.Column("judge_hash", sa.String(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("cached", sa.Boolean(), nullable=False),
        sa.Column("reply_text", sa.Text(), nullable=True),
        sa.Column("extraction_json", sa.Text(), nullable=True),
        sa.Column("reading_json", sa.Text(), nullable=True),
        sa.Column("score_json", sa.Text(), nullable=True),
        sa.Column("grounded", sa.Integer(), nullable=False),
        sa.Column("ungrounded", sa.Integer(), nullable=False),
        sa.Column("dropped", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("latency_s", sa.Float(), nullable=False),
        sa.Column("created_at", sa.String(), nullable=False),
        sa.UniqueConstraint(
            "run_id", "agent", "item_id", "judge", name="uq_judgement_trial_judge"
        ),
    )
    op.create_index("ix_judgements_run_id", "judgements", ["run_id"])


def m0008_held_forecasts(op: Operations) -> None:
    """Self-forecasts the service holds for their agents (see ledger.models: HeldForecastRow):
    the forecast and its salt, written in the transaction of its ``forecast`` ledger entry."""
    op.create_table(
        "held_forecasts",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("body_json", sa.Text(), nullable=False),
        sa.Column("salt_hex", sa.String(), nullable=False),
    )


MIGRATIONS: list[Migration] = [
    ("0001_runs_items_trials", m0001_runs_items_trials),
    ("0002_predictions", m0002_predictions),
    ("0003_api_tokens", m0003_api_tokens),
    ("0004_token_scopes", m0004_token_scopes),
    ("0005_ledger_tree", m0005_ledger_tree),
    ("0006_notifications", m0006_notifications),
    ("0007_judgements", m0007_judgements),
    ("0008_held_forecasts", m0008_held_forecasts),
]
"""Every migration, in the order it applies. Append only, and add the new id to
:data:`ledger.schema.MIGRATION_IDS`."""


def _ensure_table(conn: Connection) -> None:
    sa.Table(
        MIGRATIONS_TABLE,
        sa.MetaData(),
        sa.Column("name", sa.String(), primary_key=True),
        sa.Column("applied_at", sa.String(), nullable=False),
    ).create(conn, checkfirst=True)


def applied_migrations(engine: Engine) -> list[str]:
    """Names of the migrations already applied (empty for a new database)."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table(MIGRATIONS_TABLE):
            return []
        rows = conn.execute(sa.text(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY name"))
        return [r[0] for r in rows]


def pending_migrations(engine: Engine) -> list[str]:
    """Names of the migrations not yet applied."""
    done = set(applied_migrations(engine))
    return [name for name, _ in MIGRATIONS if name not in done]


def _lock(conn: Connection) -> None:
    """Take the database's migration lock for this transaction, so that two processes opening
    a new database at once cannot both apply a migration: SQLite's write lock (BEGIN IMMEDIATE;
    pysqlite issues no BEGIN of its own, so this also makes the DDL transactional), or a
    PostgreSQL transaction-scoped advisory lock."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(7466715423)"))


def _sqlite_file(engine: Engine) -> Path | None:
    """The file of a SQLite database (None for PostgreSQL or an in-memory database)."""
    database = engine.url.database
    if engine.dialect.name != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):
        return None  # a URI filename: not one mindledger makes
    path = Path(database).expanduser()
    return path if path.is_file() else None


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _backup_first(engine: Engine, migration: str, say: Callable[[str], None]) -> None:
    """Copy a SQLite database that holds data before ``migration`` changes it (see
    :func:`ledger._sqlite_copy.backup_before_migration`), saying so; a StorageError, and no
    migration, when the copy cannot be made. The caller holds the migration lock."""
    path = _sqlite_file(engine)
    if path is None:
        return
    import sqlite3

    from ledger._sqlite_copy import MIGRATION_BACKUPS_KEPT, backup_before_migration

    try:
        copy, removed = backup_before_migration(path, migration)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(
            f"cannot back up {path} before migrating it to {migration}: {exc}; nothing was "
            "migrated (free some space, or copy the database yourself with `mindledger db "
            "backup FILE` and retry)"
        ) from None
    if copy is None:
        return
    gone = f"; removed the older {', '.join(p.name for p in removed)}" if removed else ""
    say(
        f"backed up {path} to {copy} ({copy.stat().st_size:,} bytes) before migrating it to "
        f"{migration} (the last {MIGRATION_BACKUPS_KEPT} such copies are kept{gone})"
    )


def migrate(
    engine: Engine, now: Callable[[], str], *, say: Callable[[str], None] = _say
) -> list[str]:
    """Apply every pending migration, each in its own transaction under the migration lock;
    return the names applied (by this call). A database with none pending is only read.

    A SQLite database that holds data is first copied beside itself to
    ``NAME.before-<first pending migration>.bak`` (the last few kept), under the lock, and
    ``say`` is told where (default: a line on stderr)."""
    if not pending_migrations(engine):
        return []
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    applied: list[str] = []
    backed_up = False
    for name, fn in MIGRATIONS:
        with engine.connect() as conn:
            _lock(conn)
            _ensure_table(conn)
            exists = conn.execute(
                sa.text(f"SELECT 1 FROM {MIGRATIONS_TABLE} WHERE name = :n"), {"n": name}
            ).first()
            if exists:
                conn.rollback()
                continue
            if not backed_up:
                _backup_first(engine, name, say)
                backed_up = True
            fn(Operations(MigrationContext.configure(conn)))
            conn.execute(
                sa.text(f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (:n, :t)"),
                {"n": name, "t": now()},
            )
            conn.commit()
            applied.append(name)
    return applied
