"""The database tables (SQLModel): runs, items, trials, agents, the response cache, and the
prediction ledger's entries and Merkle tree. Schema changes go through :mod:`ledger.migrations`;
a test checks that a freshly migrated database equals these models.

Times are stored as ISO 8601 UTC strings (``2026-11-30T05:40:00.123456+00:00``): sortable,
readable, and free of the naive/aware datetime trap across SQLite and PostgreSQL.
JSON columns hold canonical JSON text (:func:`mindledger.canonical.canonical_json`).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "AgentRow",
    "ApiRunRequestRow",
    "ApiTokenRow",
    "ItemRow",
    "JudgementRow",
    "LedgerEntryRow",
    "LedgerTreeRow",
    "NotificationRow",
    "ResponseCacheRow",
    "RunAgentRow",
    "RunItemRow",
    "RunRow",
    "TrialRow",
]


class AgentRow(SQLModel, table=True):
    """An agent as it was declared when a run used it (public settings only, no secrets)."""

    __tablename__ = "agents"

    name: str = Field(primary_key=True)
    adapter: str
    config_json: str = Field(sa_column=Column(Text, nullable=False))
    config_hash: str
    created_at: str


class RunRow(SQLModel, table=True):
    """One evaluation run: a suite, a seed, and the agents evaluated on the same items."""

    __tablename__ = "runs"

    id: str = Field(primary_key=True)
    suite: str
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    held_out: bool = False
    params_json: str = Field(sa_column=Column(Text, nullable=False))
    status: str = Field(index=True)
    created_at: str = Field(index=True)
    finished_at: str | None = None


class RunAgentRow(SQLModel, table=True):
    """An agent taking part in a run, with its role and what it takes to rebuild its adapter."""

    __tablename__ = "run_agents"

    run_id: str = Field(primary_key=True, foreign_key="runs.id")
    agent: str = Field(primary_key=True)
    role: str
    base_agent: str | None = None
    spec_json: str = Field(sa_column=Column(Text, nullable=False))


class ItemRow(SQLModel, table=True):
    """A generated item, stored once by its content hash."""

    __tablename__ = "items"

    id: str = Field(primary_key=True)
    family: str = Field(index=True)
    generator: str
    version: str
    seed: int = Field(sa_column=Column(BigInteger, nullable=False))
    body_json: str = Field(sa_column=Column(Text, nullable=False))


class RunItemRow(SQLModel, table=True):
    """Which items a run evaluates, in order."""

    __tablename__ = "run_items"

    run_id: str = Field(primary_key=True, foreign_key="runs.id")
    item_id: str = Field(primary_key=True, foreign_key="items.id")
    position: int


class TrialRow(SQLModel, table=True):
    """One agent's attempt at one item of one run. Exactly one per (run, agent, item)."""

    __tablename__ = "trials"
    __table_args__ = (
        UniqueConstraint("run_id", "agent", "item_id", name="uq_trial_run_agent_item"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True)
    agent: str
    item_id: str = Field(foreign_key="items.id")
    status: str
    """``ok`` (an answer, parsed or not, was scored), ``api_error`` (excluded from accuracy,
    counted) or ``not_applicable`` (a reference policy of another item family; excluded)."""
    answer_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    raw_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    transcript_json: str = Field(sa_column=Column(Text, nullable=False))
    confidence: float | None = None
    correct: bool | None = None
    score_value: float | None = None
    primary_error: str | None = None
    score_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    provider_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: str


class JudgementRow(SQLModel, table=True):
    """The extraction judge's reading of one trial's chain of thought (seed 000 Appendix D),
    by one judge: at most one per (run, agent, item, judge). Written by
    :mod:`harness.run.judging`; the trial itself is never changed."""

    __tablename__ = "judgements"
    __table_args__ = (
        UniqueConstraint("run_id", "agent", "item_id", "judge", name="uq_judgement_trial_judge"),
    )

    id: int | None = Field(default=None, primary_key=True)
    run_id: str = Field(foreign_key="runs.id", index=True)
    agent: str
    """The agent whose trial was judged."""
    item_id: str = Field(foreign_key="items.id")
    judge: str
    """The judge agent's name."""
    judge_hash: str
    """``sha256:`` of the judge's stored spec (no secrets): what its replies are cached under."""
    status: str
    """``ok`` (an extraction was read) or ``parse_error`` (the reply held no JSON object)."""
    cached: bool = False
    """The reply came from the response cache (no model call)."""
    reply_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """The judge's reply as it came."""
    extraction_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """The extraction the reply held (canonical JSON)."""
    reading_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """What entered the metrics (quotes required): stated belief, chain, mentalizing,
    grounding and the dropped fields (canonical JSON)."""
    score_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """The trial re-scored by its family's scorer with the reading (canonical JSON)."""
    grounded: int = 0
    """Quoted values whose quote occurs verbatim in the chain of thought."""
    ungrounded: int = 0
    """Quoted values whose quote does not."""
    dropped: int = 0
    """Values left out of the metrics because their quote is not in the chain of thought."""
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    created_at: str


class ResponseCacheRow(SQLModel, table=True):
    """A model response keyed by the hash of the full request."""

    __tablename__ = "response_cache"

    key: str = Field(primary_key=True)
    response_json: str = Field(sa_column=Column(Text, nullable=False))
    created_at: str


# -- the prediction ledger ------------------------------------------------------------------
# Append-only: no row of these two tables is ever updated or deleted.
#
# Every state change of every prediction is one row, an *entry*, in one gap-free order (``seq``).
# Each entry's ``hash`` covers its content and the previous entry's hash and signature, so the
# rows form one chain; ``signature`` is the service's Ed25519 signature over ``hash``. The
# canonical form of an entry is in :mod:`ledger.chain` and ``docs/ledger.md``.
#
# ``seq`` is the primary key and ``prev_hash`` and ``hash`` are UNIQUE, so two writers that both
# believed they held the head cannot fork the chain: the second insert fails.


class LedgerEntryRow(SQLModel, table=True):
    """One entry of the prediction ledger."""

    __tablename__ = "ledger_entries"
    __table_args__ = (
        UniqueConstraint("prev_hash", name="uq_ledger_entries_prev_hash"),
        UniqueConstraint("hash", name="uq_ledger_entries_hash"),
    )

    seq: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """Position in the ledger: 1, 2, 3, … with no gaps."""
    subject: str = Field(index=True)
    """What the entry is about: a prediction id (``p…``), ``agent:NAME`` or ``ledger``."""
    kind: str = Field(index=True)
    """open, key, register, commit, observe, reveal, reject, expire, call, refuse, forecast,
    run-start or forecast-reveal."""
    payload_json: str = Field(sa_column=Column(Text, nullable=False))
    """The entry's content as canonical JSON."""
    time: str
    """When the service appended it (ISO 8601 UTC)."""
    prev_hash: str
    """``hash`` of the previous entry (a fixed genesis value for entry 1)."""
    prev_signature: str = Field(sa_column=Column(Text, nullable=False))
    """``signature`` of the previous entry (empty for entry 1)."""
    hash: str
    """``sha256:<hex>`` of the entry's canonical form."""
    signature: str = Field(sa_column=Column(Text, nullable=False))
    """The service's Ed25519 signature over the hash, hex."""


class LedgerTreeRow(SQLModel, table=True):
    """One stored node of the ledger's Merkle tree (RFC 6962; see :mod:`ledger.merkle`): the
    root of the perfect subtree over leaves ``[idx << level, (idx + 1) << level)``, where leaf
    ``i`` is entry ``i + 1``. Written once, in the transaction that appends its last leaf."""

    __tablename__ = "ledger_tree"

    level: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    """Height of the subtree (0: a leaf)."""
    idx: int = Field(sa_column=Column(BigInteger, primary_key=True, autoincrement=False))
    """Position of the subtree among those of its level."""
    hash: str
    """The subtree's root hash, 64 hex digits."""

class HeldForecastRow(SQLModel, table=True):
    """A self-forecast the service holds for its agent (sent in clear, see
    :mod:`ledger.forecasts`): what its commitment hashes and the salt the service drew. Written
    in the transaction that appends its ``forecast`` entry; the service reveals it after the
    run."""

    __tablename__ = "held_forecasts"

    id: str = Field(primary_key=True)
    """The forecast's id (``f`` + 20 hex digits of its commitment)."""
    body_json: str = Field(sa_column=Column(Text, nullable=False))
    """``{"forecast": …, "reason": …}`` as canonical JSON."""
    salt_hex: str
    """The salt, 32 bytes in hex."""


# -- the daemon's tables: API bearer tokens (stored as their SHA-256 hash) and which token
# requested which run. A token is shown once, when ``mindledger serve token`` creates it; the
# database holds only ``sha256:<hex>`` of it. Each token also has a short public id (``tok_``
# and 8 hex digits of that hash) that is safe to print, log and type. Neither table has a
# foreign key, on purpose: a run is reserved before it is stored (see
# :func:`harness.daemon.tokens.claim_run_request`), and on SQLite a later migration that
# recreates ``api_tokens`` or ``runs`` (alembic's batch mode) would trip over a reference.


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


class NotificationRow(SQLModel, table=True):
    """A regression notification (``mindledger history``, the daemon after a scheduled run):
    at most one per (agent, run, channel), sent or failed. Written by
    :mod:`harness.publish.notify`."""

    __tablename__ = "notifications"
    __table_args__ = (
        UniqueConstraint("agent", "run_id", "channel", name="uq_notification_run_channel"),
    )

    id: int | None = Field(default=None, primary_key=True)
    agent: str = Field(index=True)
    """The agent whose run regressed."""
    run_id: str = Field(foreign_key="runs.id")
    """The run whose figures were flagged."""
    channel: str
    """``webhook`` or ``command``."""
    target: str
    """Where it went, without secrets: the webhook's scheme, host and port, or the program."""
    status: str
    """``sent`` or ``failed``."""
    attempts: int
    """Deliveries tried (a failing webhook is tried a few times, never forever)."""
    error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """Why the last attempt failed, when it did."""
    payload_json: str = Field(sa_column=Column(Text, nullable=False))
    """The JSON payload sent (canonical JSON)."""
    created_at: str
    """When it was recorded (ISO 8601 UTC)."""
