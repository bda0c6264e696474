"""The daemon's one table (SQLModel): API bearer tokens, stored as their SHA-256 hash.

A token is shown once, when ``mindledger serve token AGENT`` creates it; the database holds only
``sha256:<hex>`` of it, so a copy of the database does not let anyone call the API.
"""

from __future__ import annotations

from sqlmodel import Field, SQLModel

__all__ = ["ApiTokenRow"]


class ApiTokenRow(SQLModel, table=True):
    """One bearer token of the HTTP API, naming the agent it authenticates."""

    __tablename__ = "api_tokens"

    token_hash: str = Field(primary_key=True)
    """``sha256:<hex>`` of the token (the token itself is never stored)."""
    agent: str = Field(index=True)
    """The agent the token authenticates: it commits and reveals as this predictor."""
    created_at: str
    """When the token was created (ISO 8601 UTC)."""
