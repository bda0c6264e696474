"""The daemon's tables (SQLModel): API bearer tokens, stored as their SHA-256 hash, and which
token requested which run.

A token is shown once, when ``mindledger serve token`` creates it; the database holds only
``sha256:<hex>`` of it, so a copy of the database does not let anyone call the API. Each token
also has a short public id (``tok_`` and 8 hex digits of that hash) that is safe to print, log
and type: ``--list`` shows it and ``--revoke`` takes it.

Neither table has a foreign key, on purpose: a run is reserved before it is stored (see
:func:`harness.daemon.tokens.claim_run_request`), and on SQLite a later migration that
recreates ``api_tokens`` or ``runs`` (alembic's batch mode) would trip over a reference to them.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

__all__ = ["ApiRunRequestRow", "ApiTokenRow"]


class ApiTokenRow(SQLModel, table=True):
    """One bearer token of the HTTP API: its scope, whom it names, and whether it still works."""

    __tablename__ = "api_tokens"

    token_hash: str = Field(primary_key=True)
    """``sha256:<hex>`` of the token (the token itself is never stored)."""
    token_id: str = Field(index=True, unique=True)
    """Public id, ``tok_`` + the first 8 hex digits of the hash: safe to print."""
    scope: str
    """``agent`` (acts as :attr:`agent`) or ``operator`` (names no agent)."""
    agent: str | None = Field(default=None, index=True)
    """The agent an ``agent`` token authenticates as; None for an ``operator`` token."""
    label: str | None = None
    """A name for the token's holder or purpose (e.g. an operator's name), shown by ``--list``."""
    created_at: str
    """When the token was created (ISO 8601 UTC)."""
    expires_at: str | None = None
    """From when the token authenticates nobody (ISO 8601 UTC); None: never."""
    revoked_at: str | None = None
    """When the token was revoked (ISO 8601 UTC); a revoked token authenticates nobody."""
    last_used_at: str | None = None
    """When the token last authenticated a request (to the minute; ISO 8601 UTC)."""
    max_queued_runs: int | None = None
    """How many runs requested with this token may be open at once; None: the daemon's
    default."""


class ApiRunRequestRow(SQLModel, table=True):
    """A run requested through the API, and the token that requested it (for the per-token cap
    on open runs). The run need not be stored yet: a request is recorded before it is planned."""

    __tablename__ = "api_run_requests"

    run_id: str = Field(primary_key=True)
    """The run (``runs.id``), once it is stored."""
    token_id: str = Field(index=True)
    """The requesting token's public id (``api_tokens.token_id``)."""
    created_at: str
    """When the run was requested (ISO 8601 UTC)."""
