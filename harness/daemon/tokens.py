"""Bearer tokens of the daemon's API: created once and shown once, stored as a SHA-256 hash."""

from __future__ import annotations

import hashlib
import re
import secrets

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harness.daemon.models import ApiTokenRow
from ledger.db import Clock, utc_now
from mindledger.errors import InputError

__all__ = ["TOKEN_PREFIX", "agent_for_token", "create_token", "hash_token"]

TOKEN_PREFIX = "mlt_"
"""Every token starts with this, so a leaked one is easy to recognise in logs and scanners."""
AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$")
_TABLE = ApiTokenRow.__table__  # type: ignore[attr-defined]


def hash_token(token: str) -> str:
    """``sha256:<hex>`` of the token's UTF-8 bytes: what the database stores."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def create_token(engine: Engine, agent: str, *, clock: Clock = utc_now) -> str:
    """Create a token for ``agent``, store its hash, and return the token (its only copy)."""
    if not isinstance(agent, str) or not AGENT_NAME.match(agent):
        raise InputError(
            "expected an agent name: letters, digits and _ . : - (up to 100 characters)",
            where="agent",
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with engine.begin() as conn:
        conn.execute(
            sa.insert(_TABLE).values(token_hash=hash_token(token), agent=agent, created_at=clock())
        )
    return token


def agent_for_token(engine: Engine, token: str) -> str | None:
    """The agent a token authenticates, or None for an unknown token."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    with engine.connect() as conn:
        row = conn.execute(
            sa.select(_TABLE.c.agent).where(_TABLE.c.token_hash == hash_token(token))
        ).first()
    return None if row is None else str(row[0])
