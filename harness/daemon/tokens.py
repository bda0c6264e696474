"""Bearer tokens of the daemon's API: created once and shown once, stored as a SHA-256 hash.

A token has a **scope**:

* ``agent`` — names one agent and acts as it: commits and reveals that agent's predictions,
  calls the query proxy as that caller, requests runs of that agent only, lists and reads only
  its own runs and profiles (:meth:`ledger.store.Store.owns_run`), its own predictions and its
  own calls, and never sees a held-out run's seeds or items;
* ``operator`` — names no agent (an optional label says whose it is): records observations,
  reads every run, profile, prediction and call and the daemon's metrics, requests runs of any
  agent, and sees a held-out run's seeds and items when it asks (``?reveal_held_out=true``).

The rules live in :class:`Principal`, which :func:`authenticate` returns for a token that is
known, not expired and not revoked (None otherwise); which route may be called by which scope is
the table :data:`harness.daemon.access.ACCESS`. Each token has a short public id
(:func:`token_id_of`: ``tok_`` + the first 8 hex digits of its hash) that is safe to print, so
tokens can be listed and revoked without their secret.

**Default expiry** (:data:`DEFAULT_EXPIRY`): agent tokens never expire, operator tokens expire
after 30 days. An agent token is held by a program that runs unattended for months (its nightly
work would stop without anyone noticing an expiry) and can only ever act as that one agent; if it
leaks, revoke it. An operator token is held by a person, is worth more to steal (held-out seeds,
runs of any agent) and is cheap to make again, so it lapses unless asked otherwise
(``--expires never``).

**Open runs**: each run requested through the API is recorded against the token that requested
it (:func:`claim_run_request`, or :func:`record_run_request`), so the API can cap how many runs
one token has queued or running at once (:func:`open_run_requests`).

Times are ISO 8601 UTC strings, as everywhere in the database. Functions called per request take
``now`` (the API reads its clock once per request); the token administration functions take a
``clock``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ledger.db import Clock, utc_now
from ledger.models import ApiRunRequestRow, ApiTokenRow, RunRow
from mindledger.errors import InputError, NotFoundError
from mindledger.names import AGENT_NAME, check_agent_name

__all__ = [
    "AGENT_NAME",
    "DEFAULT_EXPIRY",
    "RESERVATION_GRACE",
    "SCOPES",
    "STOPPED_RUN_STATUSES",
    "TOKEN_PREFIX",
    "Principal",
    "Scope",
    "TokenInfo",
    "agent_for_token",
    "authenticate",
    "check_agent_name",
    "check_label",
    "claim_run_request",
    "create_token",
    "hash_token",
    "list_tokens",
    "open_run_requests",
    "parse_expiry",
    "parse_scope",
    "record_run_request",
    "release_run_request",
    "revoke_token",
    "token_id_of",
]

Scope = Literal["agent", "operator"]
SCOPES: tuple[Scope, ...] = ("agent", "operator")
"""The scopes a token may have."""

TOKEN_PREFIX = "mlt_"
"""Every token starts with this, so a leaked one is easy to recognise in logs and scanners."""
TOKEN_ID_PREFIX = "tok_"
_LABEL = re.compile(r"^[^\x00-\x1f\x7f]{1,100}$")
_DURATION = re.compile(r"^(\d{1,5})([mhdw])$")
_UNITS = {
    "m": dt.timedelta(minutes=1),
    "h": dt.timedelta(hours=1),
    "d": dt.timedelta(days=1),
    "w": dt.timedelta(weeks=1),
}
_MAX_TOKEN_LENGTH = 256
_MAX_QUEUED_RUNS = 1000

DEFAULT_EXPIRY: dict[Scope, dt.timedelta | None] = {
    "agent": None,
    "operator": dt.timedelta(days=30),
}
"""How long a new token lasts when its creator does not say (None: forever); see the module
docstring for why."""
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)
""":func:`authenticate` records a token's last use at most this often (one small write)."""
STOPPED_RUN_STATUSES = ("complete", "incomplete", "interrupted")
"""Statuses of a run that is neither queued nor executing. Any other status (``running``,
``queued``, or one added later) counts towards its token's cap."""
RESERVATION_GRACE = dt.timedelta(minutes=10)
"""How long a run request whose run is not stored (yet) counts as open: the time the API may
take to plan the run after :func:`claim_run_request`. A request left behind by a crash during
planning frees its slot after this."""

_TOKENS = ApiTokenRow.__table__  # type: ignore[attr-defined]
_REQUESTS = ApiRunRequestRow.__table__  # type: ignore[attr-defined]
_RUNS = RunRow.__table__  # type: ignore[attr-defined]


# -- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Principal:
    """Who a valid token authenticates, and what that scope may do. The API asks these methods
    rather than comparing scopes itself."""

    token_id: str
    scope: Scope
    agent: str | None
    """The agent an ``agent`` token acts as; None for an ``operator`` token."""
    label: str | None
    max_queued_runs: int | None
    """The token's own cap on open runs; None: the daemon's default (see :meth:`run_cap`)."""

    @property
    def is_operator(self) -> bool:
        return self.scope == "operator"

    @property
    def name(self) -> str:
        """How logs and provenance name the holder: the agent, or ``operator:LABEL`` (the token
        id when it has no label)."""
        if self.scope == "agent" and self.agent is not None:
            return self.agent
        return "operator:" + (self.label or self.token_id)

    @property
    def sees_held_out(self) -> bool:
        """May see held-out seeds and the item bodies of held-out runs (when it asks:
        :meth:`reveals`)."""
        return self.is_operator

    def reveals(self, asked: bool) -> bool:
        """Whether a request that ``asked`` for held-out seeds and items gets them: an
        operator's that asked; never an agent's (the API refuses an agent that asks)."""
        return asked and self.sees_held_out

    def may_read_prediction(self, predictor: str) -> bool:
        """May read a prediction of ``predictor``: an operator any, an agent token its own."""
        return self.is_operator or self.may_predict_as(predictor)

    @property
    def owner(self) -> str | None:
        """The agent whose runs alone this token reads (None: an operator reads every run)."""
        return None if self.is_operator else (self.agent or "")

    @property
    def may_observe(self) -> bool:
        """May record a target's answer (an observation): operators only, never the predictor
        or the target (DESIGN.md, "Who records what")."""
        return self.is_operator

    def may_predict_as(self, predictor: str) -> bool:
        """May commit and reveal predictions, and call the query proxy, as ``predictor``."""
        return self.scope == "agent" and predictor == self.agent

    def may_request_runs_of(self, agent: str) -> bool:
        """May request runs of ``agent``: an operator of any, an agent token of itself."""
        return self.is_operator or agent == self.agent

    def run_cap(self, default: int) -> int:
        """How many runs requested with this token may be open at once."""
        return default if self.max_queued_runs is None else self.max_queued_runs


@dataclass(frozen=True)
class TokenInfo:
    """A stored token as ``--list`` shows it: everything but the secret (and its hash)."""

    token_id: str
    scope: Scope
    agent: str | None
    label: str | None
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None
    max_queued_runs: int | None

    def state(self, now: str) -> Literal["active", "expired", "revoked"]:
        """Whether the token authenticates anyone at ``now``."""
        if self.revoked_at is not None:
            return "revoked"
        if _expired(self.expires_at, _instant(now, "now")):
            return "expired"
        return "active"

    def to_dict(self, now: str) -> dict[str, Any]:
        return {
            "id": self.token_id,
            "scope": self.scope,
            "agent": self.agent,
            "label": self.label,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "last_used_at": self.last_used_at,
            "max_queued_runs": self.max_queued_runs,
            "state": self.state(now),
        }


# -- checking input -----------------------------------------------------------------------------


def parse_scope(text: str, *, where: str = "scope") -> Scope:
    """``agent`` or ``operator``; InputError naming ``where`` otherwise."""
    if text not in SCOPES:
        raise InputError(f"expected one of {', '.join(SCOPES)}, got {text!r}", where=where)
    return cast(Scope, text)


def check_label(label: object, *, where: str = "label") -> str:
    """``label`` if it is 1 to 100 printable characters."""
    if not isinstance(label, str) or not _LABEL.match(label) or not label.strip():
        raise InputError("expected 1 to 100 printable characters", where=where)
    return label


def parse_expiry(text: str, *, now: str, where: str = "expires") -> str | None:
    """When a token given ``--expires text`` at ``now`` expires: ``30d``, ``12h``, ``90m`` or
    ``2w`` from now, an ISO 8601 time with a time zone (``2027-01-01T00:00:00Z``), or ``never``
    (None). InputError naming ``where`` for anything else, or for a time not in the future."""
    start = _instant(now, "now")
    value = text.strip()
    if value.lower() in ("never", "none"):
        return None
    m = _DURATION.match(value)
    if m:
        if int(m.group(1)) == 0:
            raise InputError(f"expected a duration longer than zero, got {text!r}", where=where)
        return _stamp(start + int(m.group(1)) * _UNITS[m.group(2)])
    try:
        when = dt.datetime.fromisoformat(value)
    except ValueError:
        raise InputError(
            "expected a duration like 30d, 12h or 90m, a time like 2027-01-01T00:00:00Z, "
            f"or never; got {text!r}",
            where=where,
        ) from None
    if when.tzinfo is None:
        raise InputError(
            f"expected a time with a time zone, like 2027-01-01T00:00:00Z; got {text!r}",
            where=where,
        )
    if when <= start:
        raise InputError(f"{text!r} is not in the future", where=where)
    return _stamp(when)


def _check_cap(value: object, *, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_QUEUED_RUNS:
        raise InputError(f"expected an integer from 0 to {_MAX_QUEUED_RUNS}", where=where)
    return value


# -- tokens -------------------------------------------------------------------------------------


def hash_token(token: str) -> str:
    """``sha256:<hex>`` of the token's UTF-8 bytes: what the database stores."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def token_id_of(token: str) -> str:
    """The public id of a token made by :func:`create_token`: ``tok_`` + the first 8 hex
    digits of its hash. It reveals 32 bits of a hash of 256 random bits: nothing usable."""
    return TOKEN_ID_PREFIX + hash_token(token).removeprefix("sha256:")[:8]


def create_token(
    engine: Engine,
    agent: str | None = None,
    *,
    scope: Scope = "agent",
    label: str | None = None,
    expires_at: str | Literal["default"] | None = "default",
    max_queued_runs: int | None = None,
    clock: Clock = utc_now,
) -> str:
    """Create a token, store its hash, and return the token (its only copy); its public id is
    :func:`token_id_of` of it.

    An ``agent`` token needs ``agent``; an ``operator`` token takes none. ``expires_at`` is
    anything :func:`parse_expiry` reads (``30d``, ``2027-01-01T00:00:00Z``, ``never``), None
    for never, or ``"default"`` (:data:`DEFAULT_EXPIRY` of the scope). ``max_queued_runs`` caps
    the token's open runs (None: the daemon's default). Raises InputError naming the field for
    bad input, before anything is written."""
    scope = parse_scope(scope)
    if scope == "agent":
        agent = check_agent_name(agent)
    elif agent is not None:
        raise InputError(
            "an operator token names no agent (give it a label instead)", where="agent"
        )
    if label is not None:
        label = check_label(label)
    max_queued_runs = _check_cap(max_queued_runs, where="max_queued_runs")
    now = clock()
    if expires_at == "default":
        lasts = DEFAULT_EXPIRY[scope]
        expires_at = None if lasts is None else _stamp(_instant(now, "now") + lasts)
    elif expires_at is not None:
        expires_at = parse_expiry(expires_at, now=now, where="expires_at")
    with engine.begin() as conn:
        while True:
            token = TOKEN_PREFIX + secrets.token_urlsafe(32)
            taken = conn.execute(
                sa.select(_TOKENS.c.token_id).where(_TOKENS.c.token_id == token_id_of(token))
            ).first()
            if taken is None:  # 8 hex digits collide once in billions: then draw again
                break
        conn.execute(
            sa.insert(_TOKENS).values(
                token_hash=hash_token(token),
                token_id=token_id_of(token),
                scope=scope,
                agent=agent,
                label=label,
                created_at=now,
                expires_at=expires_at,
                max_queued_runs=max_queued_runs,
            )
        )
    return token


def authenticate(
    engine: Engine, token: str, *, now: str, record_use: bool = True
) -> Principal | None:
    """Who ``token`` authenticates at ``now``: None for a malformed, unknown, expired or revoked
    token. The token is looked up by its hash, so timing says nothing about stored tokens.
    Records the token's last use (at most once a minute) unless ``record_use`` is false (a
    read only: ``/health``, which must answer while another process holds the database's
    write lock)."""
    if not _well_formed(token):
        return None
    token_hash = hash_token(token)
    with engine.connect() as conn:
        row = conn.execute(sa.select(_TOKENS).where(_TOKENS.c.token_hash == token_hash)).first()
    if row is None or row.revoked_at is not None:
        return None
    at = _instant(now, "now")
    if _expired(row.expires_at, at):
        return None
    last = _instant_or_none(row.last_used_at)
    if record_use and (last is None or at - last >= LAST_USED_RESOLUTION):
        with engine.begin() as conn:
            conn.execute(
                sa.update(_TOKENS)
                .where(_TOKENS.c.token_hash == token_hash)
                .values(last_used_at=now)
            )
    return Principal(
        token_id=row.token_id,
        scope=cast(Scope, row.scope),
        agent=row.agent,
        label=row.label,
        max_queued_runs=row.max_queued_runs,
    )


def agent_for_token(engine: Engine, token: str, *, now: str | None = None) -> str | None:
    """The agent an ``agent`` token acts as, or None for any other token (operator, unknown,
    expired, revoked). Kept for callers that know only agents; new code uses
    :func:`authenticate`."""
    principal = authenticate(engine, token, now=now or utc_now())
    return principal.agent if principal is not None and principal.scope == "agent" else None


def list_tokens(engine: Engine) -> list[TokenInfo]:
    """Every stored token (revoked and expired ones too), oldest first."""
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(_TOKENS).order_by(_TOKENS.c.created_at, _TOKENS.c.token_id)
        ).all()
    return [_info(r) for r in rows]


def revoke_token(engine: Engine, token_id: str, *, clock: Clock = utc_now) -> TokenInfo:
    """Revoke a token by its public id, from now on; return it. Revoking a revoked token
    changes nothing (it keeps its first revocation time). NotFoundError for an unknown id."""
    with engine.begin() as conn:
        conn.execute(
            sa.update(_TOKENS)
            .where(_TOKENS.c.token_id == token_id, _TOKENS.c.revoked_at.is_(None))
            .values(revoked_at=clock())
        )
        row = conn.execute(sa.select(_TOKENS).where(_TOKENS.c.token_id == token_id)).first()
    if row is None:
        raise NotFoundError(f"no token with id {token_id!r} (see `mindledger serve token --list`)")
    return _info(row)


# -- run requests and the cap on open runs ------------------------------------------------------


def claim_run_request(engine: Engine, token_id: str, run_id: str, *, cap: int, now: str) -> bool:
    """Record that ``token_id`` requests run ``run_id`` if fewer than ``cap`` of its runs are
    open; False (nothing recorded) at the cap, for the API to answer 429.

    Count and record happen under a lock on the token, so concurrent requests cannot overshoot
    the cap. Call it with the id the run will get (``create_run(..., run_id=...)``) *before*
    planning the run, and :func:`release_run_request` if planning fails. NotFoundError for an
    unknown token."""
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # the database's write lock, held to commit
        _require_token(conn, token_id, lock=True)
        if _count_open(conn, token_id, now) >= cap:
            conn.rollback()
            return False
        conn.execute(sa.insert(_REQUESTS).values(run_id=run_id, token_id=token_id, created_at=now))
        conn.commit()
    return True


def record_run_request(engine: Engine, token_id: str, run_id: str, now: str) -> None:
    """Record that ``token_id`` requested run ``run_id`` at ``now``, whatever the cap (see
    :func:`claim_run_request` for the checked form). NotFoundError for an unknown token."""
    with engine.begin() as conn:
        _require_token(conn, token_id)
        conn.execute(sa.insert(_REQUESTS).values(run_id=run_id, token_id=token_id, created_at=now))


def release_run_request(engine: Engine, run_id: str) -> bool:
    """Forget the request of ``run_id`` (its planning failed); True if there was one."""
    with engine.begin() as conn:
        deleted = conn.execute(sa.delete(_REQUESTS).where(_REQUESTS.c.run_id == run_id))
    return bool(deleted.rowcount)


def open_run_requests(engine: Engine, token_id: str, *, now: str | None = None) -> int:
    """How many runs requested with ``token_id`` are open: stored and not stopped (see
    :data:`STOPPED_RUN_STATUSES`), or not stored yet and requested less than
    :data:`RESERVATION_GRACE` before ``now`` (default: the current time)."""
    with engine.connect() as conn:
        return _count_open(conn, token_id, now or utc_now())


def _count_open(conn: Connection, token_id: str, now: str) -> int:
    rows = conn.execute(
        sa.select(_REQUESTS.c.created_at, _RUNS.c.id)
        .select_from(_REQUESTS.outerjoin(_RUNS, _RUNS.c.id == _REQUESTS.c.run_id))
        .where(
            _REQUESTS.c.token_id == token_id,
            sa.or_(_RUNS.c.id.is_(None), _RUNS.c.status.not_in(STOPPED_RUN_STATUSES)),
        )
    ).all()
    cutoff = _instant(now, "now") - RESERVATION_GRACE
    return sum(
        1
        for created_at, stored in rows
        if stored is not None or (_instant_or_none(created_at) or cutoff) > cutoff
    )


def _require_token(conn: Connection, token_id: str, *, lock: bool = False) -> None:
    stmt = sa.select(_TOKENS.c.token_id).where(_TOKENS.c.token_id == token_id)
    if conn.execute(stmt.with_for_update() if lock else stmt).first() is None:
        raise NotFoundError(f"no token with id {token_id!r}")


# -- helpers ------------------------------------------------------------------------------------


def _well_formed(token: object) -> bool:
    return (
        isinstance(token, str)
        and token.startswith(TOKEN_PREFIX)
        and len(token) <= _MAX_TOKEN_LENGTH
        and token.isascii()
        and token.isprintable()
        and " " not in token
    )


def _info(row: Any) -> TokenInfo:
    return TokenInfo(
        token_id=row.token_id,
        scope=cast(Scope, row.scope),
        agent=row.agent,
        label=row.label,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        last_used_at=row.last_used_at,
        max_queued_runs=row.max_queued_runs,
    )


def _instant(text: str, what: str) -> dt.datetime:
    """An aware UTC datetime from an ISO 8601 string with a time zone (ValueError otherwise:
    the clock is the program's, not the user's)."""
    when = dt.datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise ValueError(f"{what}: expected an ISO 8601 time with a time zone, got {text!r}")
    return when.astimezone(dt.UTC)


def _instant_or_none(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        return _instant(text, "stored time")
    except ValueError:
        return None


def _expired(expires_at: str | None, at: dt.datetime) -> bool:
    """Whether a token with this expiry is expired at ``at``. An expiry that cannot be read
    counts as expired: a token fails closed."""
    if expires_at is None:
        return False
    until = _instant_or_none(expires_at)
    return until is None or at >= until


def _stamp(when: dt.datetime) -> str:
    """The stored form of a time (as :func:`ledger.db.utc_now` writes it)."""
    return when.astimezone(dt.UTC).isoformat(timespec="microseconds")
