"""The composition root: everything a command, the daemon or a worker opens from the settings.

:meth:`Workspace.open` turns :class:`~harness.config.settings.Settings` into the database engine
(``settings.database_url``, migrated unless told not to), the :class:`~ledger.store.Store` over
it, the prediction :class:`~ledger.predictions.Ledger` (signed with the service key of the data
directory, its head witness and heads file there, ``settings.reveal_timeout``) and the seed
policy (``settings.held_out_fraction``). The ledger is opened on first use, so a command that
never touches it never creates a service key. Opened ``read_only`` (the commands that only
read), a workspace creates nothing: no data directory, database, schema or service key (see
:meth:`Workspace.open`). Opening makes an existing data directory private (0700), as a new one is
(:func:`~ledger.db.private_home`).

::

    with Workspace.open(settings) as ws:
        ws.store.list_runs()
        ws.ledger.verify()
        seed = ws.draw_seed(held_out=False)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harness.config.seeds import check_seed, draw_seed, is_held_out
from harness.config.settings import Settings
from ledger.db import mask, open_engine, private_home
from ledger.store import Store

if TYPE_CHECKING:  # the ledger's modules (and its cryptography) load when it is first opened
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from ledger.predictions import Ledger

__all__ = ["SeedPolicy", "Workspace"]


@dataclass(frozen=True)
class SeedPolicy:
    """The held-out share of the seed space (see :mod:`harness.config.seeds`)."""

    held_out_fraction: float

    @classmethod
    def of(cls, settings: Settings) -> SeedPolicy:
        return cls(settings.held_out_fraction)

    def draw_seed(self, *, held_out: bool) -> int:
        """A fresh seed from the held-out share, or from the rest."""
        return draw_seed(held_out=held_out, fraction=self.held_out_fraction)

    def check_seed(self, seed: int | None, *, held_out: bool = False) -> None:
        """Refuse a seed outside the seed space, or a held-out one for a development run."""
        check_seed(seed, held_out=held_out, fraction=self.held_out_fraction)

    def is_held_out(self, seed: int) -> bool:
        """Whether ``seed`` belongs to the held-out share."""
        return is_held_out(seed, self.held_out_fraction)


@dataclass(frozen=True)
class Workspace:
    """The engine, store, prediction ledger and seed policy of one set of settings."""

    settings: Settings
    engine: Engine
    store: Store
    seeds: SeedPolicy
    read_only: bool = False
    """Whether this workspace may create nothing (see :meth:`open`)."""

    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        migrate: bool = True,
        database_url: str | None = None,
        read_only: bool = False,
    ) -> Workspace:
        """Open the database of ``settings`` (or ``database_url``: another database, with the
        data directory's key material), migrated to the current schema unless ``migrate`` is
        false.

        ``read_only``: create nothing. A database that is not there (or has no schema, when
        ``migrate``) is a :class:`~mindledger.errors.NoDatabaseError` (exit 2); one at an older
        schema is still migrated; the ledger opens without creating a service key
        (:meth:`new_ledger`)."""
        note = private_home(settings.home)
        if note:
            print(note, file=sys.stderr)
        engine = open_engine(
            database_url or settings.database_url, migrate_schema=migrate, create=not read_only
        )
        return cls(settings, engine, Store(engine), SeedPolicy.of(settings), read_only)

    # -- the prediction ledger ----------------------------------------------------------------

    @property
    def has_service_key(self) -> bool:
        """Whether the data directory holds a service key (anything was ever committed)."""
        from ledger.keys import KEY_FILE

        return (self.settings.home / KEY_FILE).exists()

    def new_ledger(self, *, heads_file: bool = True, witness: bool = True) -> Ledger:
        """A fresh :class:`Ledger` over this engine (the caller closes it), signed with the
        data directory's service key (created if missing); ``heads_file`` false: signed heads
        are not kept, nor checked against the published ones; ``witness`` false: the head
        witness is neither checked nor moved (see :mod:`ledger._witness`).

        A read-only workspace creates no key: with none in the data directory it opens an
        empty ledger with a key that is never written (it has nothing to sign or check), and
        refuses (LedgerKeyError, exit 2) a ledger that has entries."""
        from ledger.keys import KEY_FILE, load_or_create_service_key, load_private_key
        from ledger.predictions import WITNESS_DIR, Ledger
        from ledger.tree import HEADS_FILE

        home = self.settings.home
        if self.read_only and not self.has_service_key:
            key = self._unwritten_key()
        elif self.read_only:
            key = load_private_key(home / KEY_FILE)
        else:
            key = load_or_create_service_key(home)
        return Ledger(
            self.engine,
            key,
            reveal_timeout=self.settings.reveal_timeout,
            witness_dir=home / WITNESS_DIR if witness else None,
            heads_file=home / HEADS_FILE if heads_file else None,
        )

    def _unwritten_key(self) -> Ed25519PrivateKey:
        from ledger.errors import LedgerKeyError
        from ledger.keys import KEY_FILE, generate_key

        with self.engine.connect() as conn:
            entries = conn.execute(sa.text("SELECT COUNT(*) FROM ledger_entries")).scalar_one()
        if entries:
            raise LedgerKeyError(
                f"the ledger in {mask(self.engine.url.render_as_string(hide_password=False))} "
                f"has {entries} entries, but there is no service key at "
                f"{self.settings.home / KEY_FILE}: restore the key (a new one would not be the "
                "ledger's), or verify an export with `ledger verify --file F --public-key K`"
            )
        return generate_key()

    @cached_property
    def ledger(self) -> Ledger:
        """The workspace's ledger, opened on first use and closed by :meth:`close`."""
        return self.new_ledger()

    # -- the seed policy ----------------------------------------------------------------------

    def draw_seed(self, *, held_out: bool) -> int:
        return self.seeds.draw_seed(held_out=held_out)

    def check_seed(self, seed: int | None, *, held_out: bool = False) -> None:
        self.seeds.check_seed(seed, held_out=held_out)

    def is_held_out(self, seed: int) -> bool:
        return self.seeds.is_held_out(seed)

    # -- closing ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the ledger (if it was opened) and dispose of the engine."""
        ledger = self.__dict__.get("ledger")
        if ledger is not None:
            ledger.close()
        self.engine.dispose()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
