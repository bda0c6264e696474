"""Appending to the ledger: group commit, linking, signing, and the tree nodes, in one place.

Every request to append is a :data:`~ledger._table.Build`: given a cursor inside the write
transaction and the time, it reads what it must and returns the entries to append (or raises
to refuse). :class:`Writer` runs it under the write lock after checking the head
(:class:`~ledger._head_guard.HeadGuard`), links and signs its entries (an ``open`` entry first,
when the ledger is new), stores them with the Merkle tree nodes they complete, and commits
before the caller returns. The table's UNIQUE ``seq``, ``prev_hash`` and ``hash`` make a fork
impossible even if the lock were bypassed. No row is ever updated or deleted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ledger._head_guard import HeadGuard
from ledger._identity import LedgerIdentity
from ledger._table import COLUMNS, Build, Cursor, EntryTable, Spec, head_entry
from ledger._tree_store import TreeStore
from ledger.chain import GENESIS_HASH, Entry, make_entry
from ledger.clock import Clock
from ledger.merkle import CompactRange
from mindledger.errors import StorageError

__all__ = ["Outcome", "Writer"]

_INSERT = f"INSERT INTO ledger_entries ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

Outcome = tuple[list[Entry], Any] | BaseException
"""What one request in a group came to: its entries and its build's result, or why it was
refused."""


class _Request:
    """One caller's append, queued for group commit: its build, then its result."""

    __slots__ = ("build", "done", "result")

    def __init__(self, build: Build):
        self.build = build
        self.done = False
        self.result: Outcome | None = None


class _Chain:
    """The end of the chain while a transaction appends to it: the last seq, hash and
    signature, and the Merkle tree's compact range."""

    def __init__(self, head: Entry | None, tree: CompactRange):
        self.seq = 0 if head is None else head.seq
        self.prev_hash = GENESIS_HASH if head is None else head.hash
        self.prev_sig = "" if head is None else head.signature
        self.tree = tree
        self.nodes: list[tuple[int, int, str]] = []
        """The tree nodes the entries linked so far complete (stored at the end)."""


class Writer:
    """Appends to the ledger in ``table``, signed with ``identity``'s key, its head checked by
    ``guard``, its tree stored in ``tree``; ``clock`` stamps the entries.

    Safe to call from several threads: their appends are grouped into shared transactions
    (group commit, see :meth:`append`)."""

    GROUP_LIMIT = 512
    """The most queued appends one transaction takes."""

    def __init__(
        self,
        table: EntryTable,
        identity: LedgerIdentity,
        guard: HeadGuard,
        tree: TreeStore,
        clock: Clock,
    ):
        self.table = table
        self.identity = identity
        self.guard = guard
        self.tree = tree
        self.clock = clock
        self._group = threading.Condition()
        """Guards the group-commit queue (see :meth:`append`)."""
        self._queue: list[_Request] = []
        self._writing = False
        """Whether a thread of this process is running a transaction of queued appends."""

    def append(self, build: Build) -> tuple[list[Entry], Any]:
        """Append the entries ``build(cur, now)`` asks for, durably, before returning.

        Group commit: while one thread's transaction is running, the requests of other threads
        queue; the next of them to run takes every queued request into one transaction (at most
        :attr:`GROUP_LIMIT`), builds and links them in arrival order, and commits once. Each
        request still sees every entry before its own (a build runs after the entries of the
        requests ahead of it are inserted), and each caller returns only once the transaction
        holding its entries is committed. A build that raises adds nothing; the caller gets its
        exception and the others' entries are committed."""
        req = _Request(build)
        with self._group:
            self._queue.append(req)
            while not req.done and self._writing:
                self._group.wait()
            if not req.done:
                self._writing = True
                batch, self._queue = (
                    self._queue[: self.GROUP_LIMIT],
                    self._queue[self.GROUP_LIMIT :],
                )
        if not req.done:
            results: list[Outcome]
            try:
                results = self.append_group([r.build for r in batch])
            except BaseException as exc:  # the transaction failed: every request in it did
                results = [exc] * len(batch)
            with self._group:
                for r, outcome in zip(batch, results, strict=True):
                    r.result = outcome
                    r.done = True
                self._writing = False
                self._group.notify_all()
        result = req.result
        if isinstance(result, BaseException):
            raise result
        assert result is not None
        return result

    def append_group(self, builds: Sequence[Build]) -> list[Outcome]:
        """Append the entries each of ``builds`` asks for, in order, in one locked transaction:
        each build runs after the entries of those before it are inserted. A build that raises
        adds nothing, and its exception is its result."""
        table = self.table
        for _attempt in range(3):
            results: list[Outcome] = []
            written: list[Entry] = []
            try:
                with table.locked() as cur:
                    head = head_entry(cur)
                    self.guard.check(cur, head)
                    now = self.clock()
                    chain = _Chain(head, self.tree.at(cur, head))
                    for build in builds:
                        outcome = self._run(cur, now, build, chain)
                        results.append(outcome)
                        if not isinstance(outcome, BaseException):
                            written += outcome[0]
                    if chain.nodes:
                        self.tree.insert(cur, chain.nodes)
            except table.integrity_error:
                # Only possible if the lock was bypassed: the UNIQUE constraints stopped a fork.
                self.guard.forget()
                self.tree.forget()
                continue
            except table.operational_error as exc:
                raise StorageError(
                    f"cannot append to the ledger in {table.db_label}: {str(exc).strip()}"
                ) from exc
            if written:
                self._wrote(head, written, chain.tree)
            return results
        raise StorageError("could not append to the ledger: concurrent writers kept colliding")

    def _run(self, cur: Cursor, now: str, build: Build, chain: _Chain) -> Outcome:
        """Run one request's ``build`` and insert the entries it asks for, linked to
        ``chain``."""
        try:
            specs, outcome = build(cur, now)
        except (self.table.integrity_error, self.table.operational_error):
            raise
        except Exception as exc:  # refused: this request adds nothing
            return exc
        if not specs:
            return ([], outcome)
        if chain.seq == 0:
            specs = [self.identity.open_spec(), *specs]
        entries = self._link(specs, now, chain)
        chain.nodes += self.tree.grow(chain.tree, entries)
        rows = [tuple(e) for e in entries]
        if len(rows) == 1:
            cur.run(_INSERT, rows[0])
        else:
            cur.many(_INSERT, rows)
        return (entries, outcome)

    def _link(self, specs: list[Spec], now: str, chain: _Chain) -> list[Entry]:
        """The entries of ``specs``, each signed and linked to the one before it."""
        entries: list[Entry] = []
        for kind, subject, payload in specs:
            chain.seq += 1
            e = make_entry(
                self.identity.key,
                seq=chain.seq,
                prev_hash=chain.prev_hash,
                prev_signature=chain.prev_sig,
                time=now,
                kind=kind,
                subject=subject,
                payload=payload,
            )
            entries.append(e)
            chain.prev_hash, chain.prev_sig = e.hash, e.signature
        return entries

    def _wrote(self, head: Entry | None, written: list[Entry], tree: CompactRange) -> None:
        """Remember what this process just committed: the new head is trusted, its tree is
        in memory, and the witness moves to it."""
        last = written[-1]
        self.tree.remember(last.hash, tree)
        if head is None:
            self.identity.opened(written[0].hash)
        self.guard.wrote(last, self.table.db_label)
