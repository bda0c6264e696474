"""The prediction ledger over a database: commit, observe, reveal, expire, verify, export.

Every request becomes one entry (an ``open`` entry first, when the ledger is new), appended in
its own transaction under a lock that serialises all writers — ``BEGIN IMMEDIATE`` on SQLite,
``LOCK TABLE … IN EXCLUSIVE MODE`` on PostgreSQL — and the table's UNIQUE ``seq``, ``prev_hash``
and ``hash`` make a fork impossible even if the lock were bypassed. Before linking to the head
the service checks it: its hash and signature (unless it is the head this process wrote last),
and the head witness (so it never builds on a ledger whose tail was cut off). No row is ever
updated or deleted; a prediction's state is the fold of its entries
(:class:`~ledger.protocol.PredictionState`).
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sqlalchemy.engine import Engine

from ledger._receipts import CommitReceipt, RevealResult
from ledger._witness import HeadWitness
from ledger.calls import Calls, CallTally, check_call, check_refusal
from ledger.chain import (
    GENESIS_HASH,
    LEDGER_FORMAT,
    PROBLEMS,
    Entry,
    Failure,
    Verification,
    Witness,
    entry_hash,
    key_change_message,
    make_entry,
    signature_ok,
    verify_entries,
)
from ledger.client import LedgerClient
from ledger.db import Clock, mask, open_engine, utc_now
from ledger.errors import (
    AgentSignatureError,
    LedgerIntegrityError,
    LedgerKeyError,
    LedgerStateError,
)
from ledger.keys import (
    COMMIT_TAG,
    EXPORT_TAG,
    KEY_TAG,
    load_or_create_service_key,
    parse_public_key,
    public_key_hex,
    sign,
    verify_signature,
)
from ledger.merkle import (
    CompactRange,
    NodeKey,
    consistency_keys,
    consistency_proof,
    inclusion_keys,
    inclusion_proof,
    leaf_hash,
    root_from,
    root_keys,
)
from ledger.protocol import (
    QUERY_VERSION,
    REFUSALS,
    PredictionState,
    check_provenance,
    check_reveal,
    commit_message,
    is_digest,
    parse_time,
    prediction_id,
    provenance,
    query_messages,
    unlock_refusal,
)
from ledger.protocol import query_hash as hash_query
from ledger.scoring import ScoreRecord, aggregate, penalty_scores, score_prediction
from ledger.tree import (
    HEADS_FILE,
    HeadsFile,
    TreeHead,
    check_head,
    digest_bytes,
    digest_text,
    sign_tree_head,
)
from mindledger.canonical import canonical_json
from mindledger.errors import InputError, NotFoundError, StorageError
from mindledger.jsonin import parse_json
from mindledger.names import check_agent_name

__all__ = [
    "WITNESS_DIR",
    "CommitReceipt",
    "Ledger",
    "RevealResult",
    "open_ledger",
    "verify_export",
]

_COLUMNS = "seq, subject, kind, payload_json, time, prev_hash, prev_signature, hash, signature"
_INSERT = f"INSERT INTO ledger_entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_TREE_INSERT = "INSERT INTO ledger_tree (level, idx, hash) VALUES (?, ?, ?)"
_PREDICTION_KINDS = ("commit", "observe", "reveal", "reject", "expire")
WITNESS_DIR = "ledger-witness"
"""The head witness's directory, relative to the data directory."""
EXPORT_FORMAT = "mindledger-export/1"
"""The ``format`` of an export's signed trailer."""

Spec = tuple[str, str, dict[str, Any]]
"""(kind, subject, payload) of an entry to append."""


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InputError("expected a non-empty string", where=where)
    return value


_CLOSED_BY = {"reveal": "scored", "reject": "rejected", "expire": "expired"}
"""The state an entry of each closing kind leaves a prediction in."""


class _Request:
    """One caller's append, queued for group commit: its build, then its result."""

    __slots__ = ("build", "done", "result")

    def __init__(self, build: Callable[[_Cursor, str], tuple[list[Spec], Any]]):
        self.build = build
        self.done = False
        self.result: tuple[list[Entry], Any] | BaseException | None = None


def _row_entry(row: Any) -> Entry:
    return Entry(*row)


class _Cursor:
    """A DBAPI cursor taking ``?`` placeholders on SQLite and PostgreSQL alike. The ledger's
    hot paths go straight to the driver: SQLAlchemy's per-statement overhead would cost a
    third of the commit rate."""

    def __init__(self, cursor: Any, postgres: bool):
        self.cursor = cursor
        self.postgres = postgres

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.postgres else sql

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self.cursor.execute(self._sql(sql), params)

    def one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        self.cursor.execute(self._sql(sql), params)
        return self.cursor.fetchone()

    def all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        self.cursor.execute(self._sql(sql), params)
        return list(self.cursor.fetchall())

    def many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.cursor.executemany(self._sql(sql), rows)


class Ledger:
    """The prediction ledger in one database, signed with one service key.

    ``clock`` returns the current time as an ISO 8601 UTC string (tests pass their own);
    ``reveal_timeout`` is how many seconds after its commit a prediction expires;
    ``witness_dir`` holds the head witness (see :mod:`ledger._witness`; None turns it off, and
    with it the detection of a cut-off tail); ``heads_file`` receives every signed tree head
    (see :mod:`ledger.tree`; None: heads are signed but not kept).

    Safe to call from several threads: their appends are grouped into shared transactions
    (group commit, see :meth:`_append`).
    """

    GROUP_LIMIT = 512
    """The most queued appends one transaction takes."""

    def __init__(
        self,
        engine: Engine,
        key: Ed25519PrivateKey,
        *,
        clock: Clock = utc_now,
        reveal_timeout: float = 86400.0,
        witness_dir: Path | None = None,
        heads_file: Path | None = None,
    ):
        if reveal_timeout <= 0:
            raise InputError("must be a positive number of seconds", where="reveal_timeout")
        self.engine = engine
        self.key = key
        self.public_key = key.public_key()
        self.public_key_hex = public_key_hex(key)
        self.clock = clock
        self.reveal_timeout = reveal_timeout
        self.witness = HeadWitness(witness_dir) if witness_dir is not None else None
        self.heads = HeadsFile(heads_file) if heads_file is not None else None
        self._published: TreeHead | None = None
        self.db_label = mask(engine.url.render_as_string(hide_password=False))
        self._sqlite = engine.dialect.name == "sqlite"
        self._integrity_error: type[Exception] = engine.dialect.loaded_dbapi.IntegrityError
        self._operational_error: type[Exception] = engine.dialect.loaded_dbapi.OperationalError
        self._trusted: tuple[int, str, str] | None = None
        """The head this process last wrote or verified: no need to check its signature."""
        self._ledger_id: str | None = None
        self._tree: tuple[str, CompactRange] | None = None
        """The Merkle tree's compact range at the head this process last wrote (its hash)."""
        self._bound = False
        """Whether this process checked that the data directory witnessed no other ledger."""
        self._group = threading.Condition()
        """Guards the group-commit queue (see :meth:`_append`)."""
        self._queue: list[_Request] = []
        self._writing = False
        """Whether a thread of this process is running a transaction of queued appends."""

    def close(self) -> None:
        """Release the head witness's file descriptors (the engine is the caller's)."""
        if self.witness is not None:
            self.witness.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def client(self, predictor: str, *, agent_key: Ed25519PrivateKey | None = None) -> LedgerClient:
        """A :class:`~ledger.client.LedgerClient` for ``predictor``."""
        return LedgerClient(self, predictor, agent_key=agent_key)

    # -- writing --------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[_Cursor]:
        """One transaction holding the ledger's write lock."""
        raw = self.engine.raw_connection()
        try:
            cur = _Cursor(raw.cursor(), not self._sqlite)
            if self._sqlite:
                cur.run("BEGIN IMMEDIATE")
            else:
                cur.run("LOCK TABLE ledger_entries IN EXCLUSIVE MODE")
            try:
                yield cur
            except BaseException:
                raw.rollback()
                raise
            raw.commit()
        finally:
            raw.close()

    @contextmanager
    def _reading(self) -> Iterator[_Cursor]:
        raw = self.engine.raw_connection()
        try:
            yield _Cursor(raw.cursor(), not self._sqlite)
        finally:
            raw.rollback()
            raw.close()

    def _head(self, cur: _Cursor) -> Entry | None:
        row = cur.one(f"SELECT {_COLUMNS} FROM ledger_entries ORDER BY seq DESC LIMIT 1")
        return None if row is None else _row_entry(row)

    def _genesis(self, cur: _Cursor) -> str | None:
        """The ledger's id (hash of entry 1), checking that the ledger's current key (the open
        entry's, or the newest ``key`` entry's) is the service key here."""
        if self._ledger_id is not None:
            return self._ledger_id
        row = cur.one("SELECT hash, payload_json FROM ledger_entries WHERE seq = 1")
        if row is None:
            return None
        try:
            opened_with = json.loads(row[1]).get("public_key")
        except (ValueError, AttributeError):
            opened_with = None
        changed = cur.one(
            "SELECT payload_json FROM ledger_entries WHERE kind = 'key' ORDER BY seq DESC LIMIT 1"
        )
        if changed is None:
            if opened_with != self.public_key_hex:
                raise LedgerKeyError(
                    f"this ledger was opened with public key {opened_with}, but the service "
                    f"key here is {self.public_key_hex}: use the key the ledger was created "
                    "with (a key changes only by `mindledger ledger rotate-key`)"
                )
        else:
            current = json.loads(changed[0]).get("public_key")
            if current != self.public_key_hex:
                raise LedgerKeyError(
                    f"this ledger's current key is {current}, but the service key here is "
                    f"{self.public_key_hex}: a key changes only by `mindledger ledger "
                    "rotate-key`, which records the change signed by the old key (if one "
                    "was interrupted, the new key is in keys/ledger-ed25519.next.pem)"
                )
        self._ledger_id = row[0]
        return self._ledger_id

    def _foreign_witnesses(self, lid: str | None) -> list[tuple[str, Witness]]:
        """Witnesses in this data directory of ledgers other than ``lid``."""
        if self.witness is None:
            return []
        return [(other, w) for other, w in self.witness.recorded() if other != lid]

    def _check_head(self, cur: _Cursor, head: Entry | None) -> None:
        """Refuse to build on a head that is not authentic, on a ledger shorter than the head
        witness, or on a ledger other than the one this data directory witnessed."""
        lid = self._genesis(cur) if head is not None else None
        if self.witness is not None:
            if not self._bound or head is None:
                foreign = self._foreign_witnesses(lid)
                if foreign:
                    other, seen = max(foreign, key=lambda t: t[1].seq)
                    now = "is empty" if lid is None else f"holds ledger {lid}"
                    raise LedgerIntegrityError(
                        f"the database {now}, but {seen.source} recorded ledger {other} up to "
                        f"entry {seen.seq}: the ledger was replaced; refusing to append (run "
                        "`mindledger ledger verify`; to start a new ledger on purpose, use a "
                        "new data directory)"
                    )
                self._bound = lid is not None
            # the head this process wrote last, with the witness it wrote then: nothing to check
            ours = (
                lid is not None
                and head is not None
                and self._trusted == (head.seq, head.hash, head.signature)
                and self.witness.wrote_last(lid, head.seq)
            )
            if lid is not None and not ours:
                w = self.witness.read(lid)
                if w is not None:
                    assert head is not None
                    if head.seq < w.seq or (head.seq == w.seq and head.hash != w.hash):
                        raise LedgerIntegrityError(
                            f"the ledger ends at entry {head.seq}, but {w.source} recorded "
                            f"entry {w.seq} ({w.hash}): entries are missing or were "
                            "rewritten; refusing to append (run `mindledger ledger verify`)"
                        )
                    if head.seq > w.seq:
                        row = cur.one("SELECT hash FROM ledger_entries WHERE seq = ?", (w.seq,))
                        if row is None or row[0] != w.hash:
                            raise LedgerIntegrityError(
                                f"entry {w.seq} is not the one {w.source} recorded: the ledger "
                                "was rewritten; refusing to append (run `mindledger ledger verify`)"
                            )
        if head is None:
            return
        signer = self._head_signer(head)
        if entry_hash(head) != head.hash or (
            self._trusted != (head.seq, head.hash, head.signature)
            and (signer is None or not signature_ok(signer, head))
        ):
            raise LedgerIntegrityError(
                f"the ledger's last entry ({head.seq}) does not verify: it was changed or "
                "forged; refusing to append (run `mindledger ledger verify`)"
            )
        self._trusted = (head.seq, head.hash, head.signature)

    def _head_signer(self, head: Entry) -> Ed25519PublicKey | None:
        """The key that signed ``head``: the service key, or for a key change the old key."""
        if head.kind != "key":
            return self.public_key
        try:
            return parse_public_key(str(json.loads(head.payload_json)["previous"]))
        except (ValueError, KeyError, TypeError, LedgerKeyError):
            return None

    def _append(
        self, build: Callable[[_Cursor, str], tuple[list[Spec], Any]]
    ) -> tuple[list[Entry], Any]:
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
            results: list[tuple[list[Entry], Any] | BaseException]
            try:
                results = self._append_group([r.build for r in batch])
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

    def _append_group(
        self, builds: Sequence[Callable[[_Cursor, str], tuple[list[Spec], Any]]]
    ) -> list[tuple[list[Entry], Any] | BaseException]:
        """Append the entries each of ``builds`` asks for, in order, in one locked transaction:
        each build runs after the entries of those before it are inserted. A build that raises
        adds nothing, and its exception is its result."""
        for _attempt in range(3):
            results: list[tuple[list[Entry], Any] | BaseException] = []
            written: list[Entry] = []
            try:
                with self._locked() as cur:
                    head = self._head(cur)
                    self._check_head(cur, head)
                    now = self.clock()
                    tree = self._tree_at(cur, head)
                    nodes: list[tuple[int, int, str]] = []
                    seq = 0 if head is None else head.seq
                    prev_hash = GENESIS_HASH if head is None else head.hash
                    prev_sig = "" if head is None else head.signature
                    for build in builds:
                        try:
                            specs, outcome = build(cur, now)
                        except (self._integrity_error, self._operational_error):
                            raise
                        except Exception as exc:  # refused: this request adds nothing
                            results.append(exc)
                            continue
                        if not specs:
                            results.append(([], outcome))
                            continue
                        if seq == 0:
                            specs = [
                                (
                                    "open",
                                    "ledger",
                                    {
                                        "format": LEDGER_FORMAT,
                                        "public_key": self.public_key_hex,
                                        "nonce": secrets.token_hex(16),
                                    },
                                ),
                                *specs,
                            ]
                        entries: list[Entry] = []
                        for kind, subject, payload in specs:
                            seq += 1
                            e = make_entry(
                                self.key,
                                seq=seq,
                                prev_hash=prev_hash,
                                prev_signature=prev_sig,
                                time=now,
                                kind=kind,
                                subject=subject,
                                payload=payload,
                            )
                            entries.append(e)
                            prev_hash, prev_sig = e.hash, e.signature
                        nodes += [
                            (n.level, n.index, n.hash.hex())
                            for e in entries
                            for n in tree.append(leaf_hash(digest_bytes(e.hash)))
                        ]
                        rows = [
                            (
                                e.seq,
                                e.subject,
                                e.kind,
                                e.payload_json,
                                e.time,
                                e.prev_hash,
                                e.prev_signature,
                                e.hash,
                                e.signature,
                            )
                            for e in entries
                        ]
                        if len(rows) == 1:
                            cur.run(_INSERT, rows[0])
                        else:
                            cur.many(_INSERT, rows)
                        written += entries
                        results.append((entries, outcome))
                    if nodes:
                        cur.many(_TREE_INSERT, nodes)
            except self._integrity_error:
                # Only possible if the lock was bypassed: the UNIQUE constraints stopped a fork.
                self._trusted = None
                self._tree = None
                continue
            except self._operational_error as exc:
                raise StorageError(
                    f"cannot append to the ledger in {self.db_label}: {str(exc).strip()}"
                ) from exc
            if not written:
                return results
            last = written[-1]
            self._trusted = (last.seq, last.hash, last.signature)
            self._tree = (last.hash, tree)
            if head is None:
                self._ledger_id = written[0].hash
            if self.witness is not None and self._ledger_id is not None:
                self.witness.advance(self._ledger_id, last, self.db_label)
            return results
        raise StorageError("could not append to the ledger: concurrent writers kept colliding")

    def _tree_at(self, cur: _Cursor, head: Entry | None) -> CompactRange:
        """A copy of the Merkle tree's compact range at ``head`` (to extend), from memory
        when this process wrote that head, else from the stored nodes."""
        size = 0 if head is None else head.seq
        if head is not None and self._tree is not None and self._tree[0] == head.hash:
            return self._tree[1].copy()
        nodes = self._nodes(cur, [*root_keys(size), (0, size)])
        if (0, size) in nodes:
            raise LedgerIntegrityError(
                f"the ledger's Merkle tree records entry {size + 1}, but the ledger ends at "
                f"entry {size}: entries were deleted; refusing to append (run `mindledger "
                "ledger verify`)"
            )
        try:
            return CompactRange.from_nodes(size, nodes)
        except KeyError:
            raise LedgerIntegrityError(
                f"the ledger's Merkle tree lacks nodes for its {size} entries (the "
                "ledger_tree table was changed); refusing to append (run `mindledger ledger "
                "verify`)"
            ) from None

    def _nodes(self, cur: _Cursor, keys: Iterable[NodeKey]) -> dict[NodeKey, bytes]:
        """The stored tree nodes ``keys`` (one query; a missing one is simply absent)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return {}
        where = " OR ".join(["(level = ? AND idx = ?)"] * len(wanted))
        params = tuple(x for key in wanted for x in key)
        out: dict[NodeKey, bytes] = {}
        for level, idx, digest in cur.all(
            f"SELECT level, idx, hash FROM ledger_tree WHERE {where}", params
        ):
            try:
                out[(int(level), int(idx))] = bytes.fromhex(digest)
            except (TypeError, ValueError):
                continue
        return out

    def _check_stored_tree(self) -> list[Failure]:
        """Every stored tree node against the node re-derived from the entries (``--full``):
        both streams in the order the nodes were completed. A changed interior node would
        make the proofs served for its leaves wrong."""
        failures: list[Failure] = []
        raw = self.engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute(
                "SELECT level, idx, hash FROM ledger_tree ORDER BY ((idx + 1) * "
                "(CAST(1 AS BIGINT) << level)), level"
            )
            tree = CompactRange()
            expected = (
                node for e in self.iter_entries() for node in tree.append(
                    leaf_hash(digest_bytes(e.hash))
                )
            )
            while len(failures) < 20:
                rows = cursor.fetchmany(5000)
                if not rows:
                    break
                for level, idx, stored in rows:
                    want = next(expected, None)
                    if want is None or (want.level, want.index) != (int(level), int(idx)):
                        got = ((int(idx) + 1) << int(level), int(level))
                        if want is not None and ((want.index + 1) << want.level, want.level) < got:
                            where, what = want.index + 1 << want.level, (
                                f"the Merkle tree lacks node ({want.level}, {want.index})"
                            )
                        else:
                            where, what = got[0], (
                                f"the Merkle tree stores node ({level}, {idx}), which the "
                                "entries do not make"
                            )
                        failures.append(Failure(where, "content-changed", what))
                        return failures
                    if want.hash.hex() != stored:
                        failures.append(
                            Failure(
                                (want.index + 1) << want.level,
                                "content-changed",
                                f"the stored Merkle tree node ({level}, {idx}) is not the hash "
                                "of the entries under it: proofs through it would be wrong",
                            )
                        )
            cursor.close()
            missing = next(expected, None) if not failures else None
            if missing is not None:
                failures.append(
                    Failure(
                        (missing.index + 1) << missing.level,
                        "content-changed",
                        f"the Merkle tree lacks node ({missing.level}, {missing.index})",
                    )
                )
        finally:
            raw.rollback()
            raw.close()
        return failures

    def _nodes_now(self, keys: Iterable[NodeKey]) -> dict[NodeKey, bytes]:
        with self._reading() as cur:
            return self._nodes(cur, keys)

    def _deadline(self, now: str) -> str:
        t = parse_time(now) + dt.timedelta(seconds=self.reveal_timeout)
        return t.isoformat(timespec="microseconds")

    def _state(self, cur: _Cursor, pid: str) -> PredictionState:
        rows = cur.all(
            "SELECT seq, kind, payload_json, time FROM ledger_entries WHERE subject = ? "
            "ORDER BY seq",
            (pid,),
        )
        if not rows or rows[0][1] != "commit":
            raise NotFoundError(f"no prediction with id {pid!r} (see `mindledger ledger show`)")
        seq, _, payload_json, time = rows[0]
        state = PredictionState.from_commit(pid, json.loads(payload_json), time, seq)
        for _, kind, payload_json, time in rows[1:]:
            state.apply(kind, json.loads(payload_json), time)
        return state

    def register_agent(self, predictor: str, public_key: str) -> Entry:
        """Register ``predictor``'s Ed25519 public key (hex): from now on its commits must
        carry its signature over :func:`~ledger.protocol.commit_message`."""
        check_agent_name(predictor, where="predictor")
        key_hex = public_key_hex(parse_public_key(public_key))
        entries, _ = self._append(
            lambda cur, now: (
                [
                    (
                        "register",
                        f"agent:{predictor}",
                        {"predictor": predictor, "public_key": key_hex},
                    )
                ],
                None,
            )
        )
        return entries[-1]

    def commit(
        self,
        predictor: str,
        target: str,
        query: str,
        commitment: str,
        *,
        item: str | None = None,
        condition: Any = None,
        agent_signature: str | None = None,
        query_hash: str | None = None,
    ) -> CommitReceipt:
        """Record a commitment (see :func:`~ledger.protocol.commitment`). The prediction itself
        stays with the committer until the reveal. ``query_hash`` names the chat request the
        prediction is about (:func:`~ledger.protocol.query_hash`: its messages and every field
        that can change the answer; by default ``query`` as one user message): the query proxy
        forwards a call carrying this prediction only if the call hashes to it. (The daemon
        checks that ``query`` is the request's question before it calls this.)"""
        check_agent_name(predictor, where="predictor")
        check_agent_name(target, where="target")
        _text(query, "query")
        _text(item, "item", optional=True)
        if query_hash is None:
            query_hash = hash_query(query_messages(query))
        elif not is_digest(query_hash):
            raise InputError("expected sha256: and 64 lowercase hex digits", where="query_hash")
        if (
            not isinstance(commitment, str)
            or not commitment.startswith("sha256:")
            or len(commitment) != 71
            or any(c not in "0123456789abcdef" for c in commitment[7:])
        ):
            raise InputError("expected sha256: and 64 lowercase hex digits", where="commitment")
        try:
            canonical_json(condition)
        except (TypeError, ValueError):
            raise InputError("must be JSON", where="condition") from None
        pid = prediction_id(commitment)

        def build(cur: _Cursor, now: str) -> tuple[list[Spec], Any]:
            agent_key: str | None = None
            for subject, payload_json in cur.all(
                "SELECT subject, payload_json FROM ledger_entries WHERE subject = ? OR "
                "(subject = ? AND kind = 'register') ORDER BY seq DESC",
                (pid, f"agent:{predictor}"),
            ):
                if subject == pid:
                    raise LedgerStateError(
                        f"this commitment is already recorded as prediction {pid} (a new "
                        "prediction needs a new salt)",
                        prediction=pid,
                        state="committed",
                    )
                if agent_key is None:
                    agent_key = str(json.loads(payload_json)["public_key"])
            payload = {
                "predictor": predictor,
                "target": target,
                "query": query,
                "item": item,
                "condition": condition,
                "commitment": commitment,
                "deadline": self._deadline(now),
                "agent_signature": agent_signature,
                "query_hash": query_hash,
            }
            if agent_key is None and agent_signature is not None:
                raise AgentSignatureError(
                    f"agent_signature: no public key is registered for {predictor!r}: "
                    "register one before signing commits",
                    state="unregistered",
                )
            if agent_key is not None and (
                agent_signature is None
                or not verify_signature(
                    parse_public_key(agent_key),
                    COMMIT_TAG,
                    commit_message(payload),
                    agent_signature,
                )
            ):
                raise AgentSignatureError(
                    f"{predictor!r} has registered a public key, so its commits must carry its "
                    "valid signature (agent_signature: "
                    f"{'missing' if agent_signature is None else 'does not verify'})",
                    state="signature_required",
                )
            return [("commit", pid, payload)], payload["deadline"]

        entries, deadline = self._append(build)
        e = entries[-1]
        return CommitReceipt(pid, commitment, e.seq, e.hash, deadline, e.time)

    def observe(self, prediction: str, answer: str, provenance: Mapping[str, Any]) -> Entry:
        """Record one answer of the target to the prediction's query (repeatable, for a target
        sampled several times), with its ``provenance`` (:func:`~ledger.protocol.provenance`:
        who asked the target, which request, the hash of the raw response). Only whoever
        asked the target records its answer: the proxy, the matrix, the runner, or an
        operator. Refused for an unknown id, after the reveal and after the deadline."""
        return self.observe_answers([prediction], [(answer, provenance)])[-1]

    def observe_many(
        self, predictions: Sequence[str], answer: str, provenance: Mapping[str, Any]
    ) -> list[Entry]:
        """Record one answer of the target against several predictions about it (the same
        query asked once, its answer owed to every prediction of it) in one transaction: an
        ``observe`` entry per prediction, in the order given, each as :meth:`observe` records
        it. All or nothing: refused (nothing recorded) if any of them is refused."""
        return self.observe_answers(predictions, [(answer, provenance)])

    def observe_answers(
        self,
        predictions: Sequence[str],
        answers: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> list[Entry]:
        """Record several answers of the target (each with its provenance) against every
        prediction in ``predictions``, in one transaction: for each answer in turn, an
        ``observe`` entry per prediction, as :meth:`observe_many` records it. All or nothing:
        refused (nothing recorded) if any prediction is refused."""
        recorded: list[tuple[str, dict[str, Any]]] = []
        for i, pair in enumerate(answers):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise InputError("expected (answer, provenance)", where=f"answers[{i}]")
            answer, source = pair
            if not isinstance(answer, str):
                raise InputError("expected the answer as text", where="answer")
            wrong = check_provenance(source)
            if wrong is not None:
                raise InputError(wrong, where="provenance")
            recorded.append((answer, dict(source)))
        ids = list(predictions)
        if len(set(ids)) != len(ids):
            raise InputError("a prediction is named twice", where="predictions")

        def build(cur: _Cursor, now: str) -> tuple[list[Spec], Any]:
            self._check_taking_answers(cur, ids, now)
            return [
                ("observe", pid, {"answer": answer, "provenance": source})
                for answer, source in recorded
                for pid in ids
            ], None

        entries, _ = self._append(build)
        return entries

    def _check_taking_answers(self, cur: _Cursor, ids: Sequence[str], now: str) -> None:
        """Refuse, as :meth:`_check_open` does, an answer to any of ``ids`` (in order): one
        query, which reads each prediction's commit and closing entry but not its answers
        (they do not decide whether it takes another)."""
        rows = cur.all(
            "SELECT seq, subject, kind, payload_json, time FROM ledger_entries WHERE subject IN "
            f"({', '.join('?' * len(ids))}) AND kind IN ('commit', 'reveal', 'reject', 'expire') "
            "ORDER BY seq",
            tuple(ids),
        )
        states: dict[str, PredictionState] = {}
        for seq, subject, kind, payload_json, time in rows:
            if kind == "commit" and subject not in states:
                states[subject] = PredictionState.from_commit(
                    subject, json.loads(payload_json), time, seq
                )
            elif subject in states and not states[subject].final:
                states[subject].state = _CLOSED_BY[kind]
        for pid in ids:
            state = states.get(pid)
            if state is None:
                raise NotFoundError(f"no prediction with id {pid!r} (see `mindledger ledger show`)")
            self._check_open(state, now)

    @staticmethod
    def _check_open(state: PredictionState, now: str) -> None:
        if state.final:
            raise LedgerStateError(
                f"prediction {state.id} is {state.state}: answers are refused after the reveal",
                prediction=state.id,
                state=state.state,
            )
        if parse_time(now) > parse_time(state.deadline):
            raise LedgerStateError(
                f"prediction {state.id} passed its deadline {state.deadline}: answers are "
                "refused after it",
                prediction=state.id,
                state="expired",
            )

    def record_call(
        self,
        caller: str,
        target: str,
        *,
        request: str,
        query_hash: str,
        status: int,
        prediction: str | None = None,
        answer: str | None = None,
        response: str | None = None,
    ) -> list[Entry]:
        """Record a call the query proxy forwarded to ``target`` for ``caller`` (a ``call``
        entry) and, when it carried a prediction and the target answered, the answer against
        that prediction (an ``observe`` entry with the proxy's provenance), in one
        transaction. A prediction that is not the caller's, not about this target or not of
        this query is refused (LedgerStateError, nothing recorded: the proxy checks that before
        it forwards). One that closed or was used while the target answered (another process,
        a deadline) takes no answer: the call is recorded unanswered and the result has no
        ``observe`` entry, so the proxy withholds the answer."""
        if not is_digest(query_hash):
            raise InputError("expected sha256: and 64 lowercase hex digits", where="query_hash")
        answered = prediction is not None and answer is not None
        if answered and not is_digest(response):
            raise InputError("an answered call needs the hash of the response", where="response")
        call = {
            "caller": caller,
            "target": target,
            "request": request,
            "query_hash": query_hash,
            "prediction": prediction,
            "status": status,
            "answered": answered,
            "response": response,
            "query_v": QUERY_VERSION,
        }
        wrong = check_call(f"agent:{caller}", call)
        if wrong is not None:
            raise InputError(wrong, where="call")

        def build(cur: _Cursor, now: str) -> tuple[list[Spec], Any]:
            specs: list[Spec] = [("call", f"agent:{caller}", call)]
            if prediction is None:
                return specs, None
            state = self._state(cur, prediction)
            reason = unlock_refusal(state, caller, target, query_hash, now)
            if reason in ("wrong_predictor", "wrong_target", "query_mismatch"):
                raise LedgerStateError(
                    f"prediction {prediction} cannot unlock this call: {REFUSALS[reason]}",
                    prediction=prediction,
                    state=reason,
                )
            if reason is not None:
                specs[0] = ("call", f"agent:{caller}", {**call, "answered": False})
            elif answered:
                source = provenance("proxy", request, response, caller=caller)
                specs.append(("observe", prediction, {"answer": answer, "provenance": source}))
            return specs, None

        entries, _ = self._append(build)
        return entries

    def record_refusal(
        self,
        caller: str,
        target: str,
        reason: str,
        *,
        request: str,
        query_hash: str | None,
        prediction: str | None = None,
    ) -> Entry:
        """Record a call the query proxy refused (a ``refuse`` entry; see
        :data:`~ledger.protocol.REFUSALS` for the reasons)."""
        refusal = {
            "caller": caller,
            "target": target,
            "request": request,
            "query_hash": query_hash,
            "prediction": prediction,
            "reason": reason,
            "query_v": QUERY_VERSION,
        }
        wrong = check_refusal(f"agent:{caller}", refusal)
        if wrong is not None:
            raise InputError(wrong, where="refusal")
        entries, _ = self._append(lambda cur, now: ([("refuse", f"agent:{caller}", refusal)], None))
        return entries[-1]

    def calls(self, caller: str | None = None) -> list[CallTally]:
        """The query proxy's record per (caller, target): calls forwarded, calls that carried
        a prediction, refusals by reason, and the obligations (the one owed, if any; how many
        were opened and met). Whether an owed one is abandoned is a question for
        :func:`ledger.calls.summarise`, as of the ledger's last entry (:meth:`head`)."""
        fold = Calls()
        with self._reading() as cur:
            if caller is None:
                rows = cur.all(
                    "SELECT seq, kind, payload_json, time FROM ledger_entries "
                    "WHERE kind IN ('call', 'refuse') ORDER BY seq"
                )
            else:
                rows = cur.all(
                    "SELECT seq, kind, payload_json, time FROM ledger_entries WHERE subject = ? "
                    "AND kind IN ('call', 'refuse') ORDER BY seq",
                    (f"agent:{caller}",),
                )
        for seq, kind, payload_json, time in rows:
            fold.apply(int(seq), kind, json.loads(payload_json), str(time))
        return fold.by_caller(caller)

    def reveal(
        self, prediction: str, revealed: Mapping[str, Any], salt: bytes | str
    ) -> RevealResult:
        """Open the commitment with the prediction and salt, and score it against the observed
        answers. A reveal that does not match (or comes after the deadline) is recorded as
        ``rejected`` (``expired``) with the worst-case score, and the result says so."""
        salt_hex = salt.hex() if isinstance(salt, bytes | bytearray) else salt
        if not isinstance(salt_hex, str):
            raise InputError("expected hex", where="salt")
        try:
            canonical_json(revealed)
        except (TypeError, ValueError):
            raise InputError("the prediction must be JSON", where="prediction") from None

        def build(cur: _Cursor, now: str) -> tuple[list[Spec], Any]:
            state = self._state(cur, prediction)
            if state.final:
                raise LedgerStateError(
                    f"prediction {prediction} is already {state.state}",
                    prediction=prediction,
                    state=state.state,
                )
            if parse_time(now) > parse_time(state.deadline):
                late = penalty_scores(state.observed)
                why = f"the reveal came after the deadline {state.deadline}"
                return [("expire", prediction, {"scores": late})], ("expired", late, why)
            if not state.observed:
                raise LedgerStateError(
                    f"no answer of the target has been observed for {prediction} yet: reveal "
                    "after the query has run",
                    prediction=prediction,
                    state=state.state,
                )
            ok, reason, dist, top1 = check_reveal(state.commit, revealed, salt_hex)
            if ok and dist is not None and top1 is not None:
                scores = score_prediction(dist, top1, state.observed)
                payload = {"revealed": revealed, "salt": salt_hex, "scores": scores}
                return [("reveal", prediction, payload)], ("scored", scores, None)
            penalty = penalty_scores(state.observed)
            rejected = {"revealed": revealed, "salt": salt_hex, "reason": reason, "scores": penalty}
            return [("reject", prediction, rejected)], ("rejected", penalty, reason)

        entries, (status, scores, reason) = self._append(build)
        e = entries[-1]
        return RevealResult(prediction, status, scores, reason, e.seq, e.hash)

    def expire_overdue(self) -> list[str]:
        """Record an ``expire`` entry, with the worst-case score, for every prediction still
        open after its deadline. Returns their ids."""
        now = self.clock()
        expired: list[str] = []
        for state in self.predictions():
            if not state.overdue(now):
                continue

            def build(cur: _Cursor, now: str, pid: str = state.id) -> tuple[list[Spec], Any]:
                current = self._state(cur, pid)
                if not current.overdue(now):
                    return [], None
                return [("expire", pid, {"scores": penalty_scores(current.observed)})], None

            if self._append(build)[0]:
                expired.append(state.id)
        return expired

    # -- reading --------------------------------------------------------------------------

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry in ``seq`` order, streamed (one consistent snapshot)."""
        raw = self.engine.raw_connection()
        try:
            if self._sqlite:
                cursor = raw.cursor()
            else:
                cursor = raw.driver_connection.cursor(name="ledger_scan")  # type: ignore[union-attr]
            cursor.execute(f"SELECT {_COLUMNS} FROM ledger_entries ORDER BY seq")
            while True:
                rows = cursor.fetchmany(5000)
                if not rows:
                    break
                for row in rows:
                    yield Entry(*row)
            cursor.close()
        finally:
            raw.rollback()
            raw.close()

    def entries(self) -> list[Entry]:
        return list(self.iter_entries())

    def head(self) -> Entry | None:
        with self._reading() as cur:
            return self._head(cur)

    def count(self, kind: str) -> int:
        """How many entries of ``kind`` (``commit``, ``reveal``, …) the ledger holds."""
        with self._reading() as cur:
            (n,) = cur.one("SELECT count(*) FROM ledger_entries WHERE kind = ?", (kind,))
            return int(n)

    def ledger_id(self) -> str | None:
        """The hash of entry 1, which names this ledger (None while it is empty)."""
        with self._reading() as cur:
            return self._genesis(cur)

    def prediction(self, prediction: str) -> PredictionState:
        """The current state of one prediction (NotFoundError if there is none)."""
        with self._reading() as cur:
            return self._state(cur, prediction)

    def predictions(
        self, predictor: str | None = None, target: str | None = None
    ) -> list[PredictionState]:
        """Every prediction (optionally of one predictor and/or target), in commit order."""
        states: dict[str, PredictionState] = {}
        with self._reading() as cur:
            rows = cur.all(
                "SELECT seq, subject, kind, payload_json, time FROM ledger_entries "
                "WHERE kind IN ('commit', 'observe', 'reveal', 'reject', 'expire') "
                "ORDER BY seq"
            )
            for seq, subject, kind, payload_json, time in rows:
                payload = json.loads(payload_json)
                if kind == "commit":
                    if (predictor is None or payload.get("predictor") == predictor) and (
                        target is None or payload.get("target") == target
                    ):
                        states[subject] = PredictionState.from_commit(subject, payload, time, seq)
                elif subject in states:
                    states[subject].apply(kind, payload, time)
        return list(states.values())

    def summary(self, predictor: str | None = None, target: str | None = None) -> dict[str, Any]:
        """Counts by state and aggregate scores of the final predictions, penalties included
        (an open prediction past its deadline counts as expired)."""
        now = self.clock()
        everyone = self.predictions()
        selected = [
            s
            for s in everyone
            if (predictor is None or s.predictor == predictor)
            and (target is None or s.target == target)
        ]
        by_query: dict[str, list[PredictionState]] = defaultdict(list)
        for s in everyone:
            by_query[s.query].append(s)
        counts: dict[str, int] = defaultdict(int)
        records: list[ScoreRecord] = []
        for s in selected:
            state = s.effective_state(now)
            counts[state] += 1
            if state not in ("scored", "rejected", "expired"):
                continue
            scores = s.scores if s.final and s.scores else penalty_scores(s.observed)
            own = s.revealed.get("own_answer") if state == "scored" and s.revealed else None
            population = [
                a for other in by_query[s.query] if other.target != s.target for a in other.observed
            ]
            records.append(
                ScoreRecord(
                    scores=scores,
                    observed=list(s.observed),
                    own_answer=own if isinstance(own, str) else None,
                    population=population,
                )
            )
        return {
            "predictor": predictor,
            "target": target,
            "states": dict(counts),
            **aggregate(records),
        }

    # -- verification and export ----------------------------------------------------------

    def _witness_for(self) -> Witness | None:
        if self.witness is None:
            return None
        lid = self.ledger_id()
        if lid is not None:
            return self.witness.read(lid)
        recorded = self.witness.recorded()
        return max((w for _, w in recorded), key=lambda w: w.seq) if recorded else None

    def verification(
        self, *, full: bool = False, heads: Sequence[tuple[TreeHead, str]] = ()
    ) -> Verification:
        """Verify the stored ledger (see :func:`~ledger.chain.verify_entries`), and beyond the
        entries: that the stored Merkle tree matches them, that this data directory witnessed
        no other ledger, that the service key here is the ledger's current key, and that every
        tree head the service published (the heads file) and every head given as ``heads``
        ((head, where it came from) pairs: say, one saved before an attack) is consistent with
        the ledger now."""
        try:
            witness = self._witness_for()
        except LedgerKeyError:
            witness = None
        saved: list[tuple[TreeHead, str]] = list(heads)
        extra: list[Failure] = []
        if self.heads is not None:
            for n, head in self.heads.read():
                if isinstance(head, TreeHead):
                    saved.append((head, f"the published head on line {n} of {self.heads.path}"))
                else:
                    extra.append(Failure(1, "invalid-entry", head))
        result = verify_entries(
            self.iter_entries,
            self.public_key,
            full=full,
            witness=witness,
            sizes={h.size for h, _ in saved},
        )
        lid = result.ledger_id
        beyond = self._nodes_now([(0, result.head_seq)])
        if beyond:
            extra.append(
                Failure(
                    result.head_seq + 1,
                    "entry-missing",
                    f"the ledger's Merkle tree records entry {result.head_seq + 1}, but the "
                    f"ledger ends at entry {result.head_seq}: its tail was cut off",
                )
            )
        if full and result.root is not None:
            extra.extend(self._check_stored_tree())
        for other, seen in self._foreign_witnesses(lid) if lid is not None else ():
            now = "is empty" if lid is None else f"holds ledger {lid}"
            extra.append(
                Failure(
                    1,
                    "ledger-replaced",
                    f"{seen.source} recorded ledger {other} up to entry {seen.seq}, but the "
                    f"database {now}: the ledger was replaced (emptied and started again, or "
                    "rewritten under a new key)",
                )
            )
        if result.keys and self.public_key_hex != result.keys[-1]:
            extra.append(
                Failure(
                    result.head_seq,
                    "ledger-replaced",
                    f"the service key here is {self.public_key_hex}, but the ledger's current "
                    f"key is {result.keys[-1]}: the key was changed without a key entry",
                )
            )
        if result.root is not None and result.head_seq:
            stored = self.root(result.head_seq)
            if stored != result.root:
                extra.append(
                    Failure(
                        result.head_seq,
                        "content-changed",
                        "the stored Merkle tree does not match the entries (the ledger_tree "
                        "table was changed): proofs served from it would be wrong",
                    )
                )
        for head, source in saved:
            extra.extend(check_head(result, head, source))
        if extra:
            result.failures = sorted(
                [*result.failures, *extra], key=lambda f: (f.seq, PROBLEMS.index(f.problem))
            )
        return result

    def verify(
        self, *, full: bool = False, heads: Sequence[tuple[TreeHead, str]] = ()
    ) -> list[Failure]:
        """What is wrong with the stored ledger, first bad entry first; empty when intact."""
        return self.verification(full=full, heads=heads).failures

    # -- the Merkle tree: heads and proofs --------------------------------------------------

    def root(self, size: int | None = None) -> bytes | None:
        """The Merkle root of entries 1…``size`` (default: all) from the stored tree; None
        when the stored tree lacks the nodes."""
        with self._reading() as cur:
            if size is None:
                head = self._head(cur)
                size = 0 if head is None else head.seq
            try:
                return root_from(size, self._nodes(cur, root_keys(size)))
            except KeyError:
                return None

    def tree_head(self, *, publish: bool = True) -> TreeHead | None:
        """A signed tree head of the ledger as it is now (None while it is empty). A head is
        signed only when the ledger grew since the last one this process signed; with
        ``publish``, each newly signed head is appended to the heads file."""
        with self._reading() as cur:
            head = self._head(cur)
            if head is None:
                return None
            last = self._published
            if last is not None and (last.size, last.head) == (head.seq, head.hash):
                return last
            lid = self._genesis(cur)
            assert lid is not None
            try:
                root = root_from(head.seq, self._nodes(cur, root_keys(head.seq)))
            except KeyError:
                raise LedgerIntegrityError(
                    f"the ledger's Merkle tree lacks nodes for its {head.seq} entries; "
                    "refusing to sign a head (run `mindledger ledger verify`)"
                ) from None
        signed = sign_tree_head(
            self.key, ledger=lid, size=head.seq, root=root, head=head.hash, time=self.clock()
        )
        if publish and self.heads is not None:
            self.heads.append(signed)
        self._published = signed
        return signed

    def inclusion_proof(self, seq: int, size: int | None = None) -> dict[str, Any]:
        """The RFC 6962 audit path of entry ``seq`` in the tree of the first ``size`` entries
        (default: all), from O(log n) stored nodes: ``{seq, entry, size, root, proof,
        nodes_read}`` (hashes as ``sha256:<hex>``)."""
        with self._reading() as cur:
            head = self._head(cur)
            n = 0 if head is None else head.seq
            size = n if size is None else size
            if type(seq) is not int or not 1 <= seq <= size <= n:
                raise NotFoundError(
                    f"no entry {seq} in a tree of {size} (expected 1 ≤ entry ≤ size ≤ {n}: the "
                    f"ledger has {n} entries)"
                )
            row = cur.one("SELECT hash FROM ledger_entries WHERE seq = ?", (seq,))
            keys = [*inclusion_keys(seq - 1, size), *root_keys(size)]
            nodes = self._nodes(cur, keys)
        try:
            proof = inclusion_proof(seq - 1, size, nodes)
            root = root_from(size, nodes)
        except KeyError:
            raise LedgerIntegrityError(
                "the ledger's Merkle tree lacks nodes (run `mindledger ledger verify`)"
            ) from None
        return {
            "seq": seq,
            "entry": row[0],
            "size": size,
            "root": digest_text(root),
            "proof": [digest_text(h) for h in proof],
            "nodes_read": len(nodes),
        }

    def consistency_proof(self, old: int, new: int | None = None) -> dict[str, Any]:
        """The RFC 6962 consistency proof that the first ``new`` entries (default: all) extend
        the first ``old``, from O(log n) stored nodes (never the entries): ``{old, new,
        old_root, new_root, proof, nodes_read}``."""
        with self._reading() as cur:
            head = self._head(cur)
            n = 0 if head is None else head.seq
            new = n if new is None else new
            if type(old) is not int or not 0 <= old <= new <= n:
                raise NotFoundError(
                    f"no trees of {old} and {new} entries (expected 0 ≤ old ≤ new ≤ {n}: the "
                    f"ledger has {n} entries)"
                )
            keys = [*consistency_keys(old, new), *root_keys(old), *root_keys(new)]
            nodes = self._nodes(cur, keys)
        try:
            proof = consistency_proof(old, new, nodes)
            old_root, new_root = root_from(old, nodes), root_from(new, nodes)
        except KeyError:
            raise LedgerIntegrityError(
                "the ledger's Merkle tree lacks nodes (run `mindledger ledger verify`)"
            ) from None
        return {
            "old": old,
            "new": new,
            "old_root": digest_text(old_root),
            "new_root": digest_text(new_root),
            "proof": [digest_text(h) for h in proof],
            "nodes_read": len(nodes),
        }

    def prove(self, subject: str) -> dict[str, Any]:
        """Inclusion proofs of a prediction's entries (``subject`` a prediction id) or of one
        entry (``subject`` its seq), against a freshly signed tree head: a bundle anyone can
        check offline (:func:`ledger.tree.check_proof`)."""
        if subject.isdigit():
            seqs = [int(subject)]
        else:
            with self._reading() as cur:
                seqs = [
                    int(r[0])
                    for r in cur.all(
                        "SELECT seq FROM ledger_entries WHERE subject = ? ORDER BY seq", (subject,)
                    )
                ]
            if not seqs:
                raise NotFoundError(f"no entries for {subject!r} (a prediction id or an entry seq)")
        head = self.tree_head()
        if head is None:
            raise NotFoundError("the ledger is empty: there is nothing to prove")
        marks = ", ".join("?" * len(seqs))
        with self._reading() as cur:
            rows = cur.all(
                f"SELECT {_COLUMNS} FROM ledger_entries WHERE seq IN ({marks})", tuple(seqs)
            )
        entries = {int(r[0]): _row_entry(r) for r in rows}
        proofs = []
        for seq in seqs:
            if seq not in entries or seq > head.size:
                raise NotFoundError(f"no entry {seq} in the ledger's {head.size} entries")
            proof = self.inclusion_proof(seq, head.size)
            if proof["root"] != head.root:
                raise LedgerIntegrityError(
                    "the stored Merkle tree does not match the signed head (run `mindledger "
                    "ledger verify`)"
                )
            proofs.append({"entry": entries[seq].to_export(), "proof": proof["proof"]})
        return {"subject": subject, "tree_head": head.to_dict(), "proofs": proofs}

    # -- the service key ----------------------------------------------------------------------

    def rotate_key(self, new_key: Ed25519PrivateKey) -> Entry:
        """Change the service key: append a ``key`` entry, signed by the current key, naming
        the new one and carrying the new key's signature over the change (proof of
        possession); from then on entries and heads are signed with ``new_key``. The caller
        stores the new key (:func:`ledger.keys.rotate_service_key` does it safely)."""
        new_hex = public_key_hex(new_key)
        if new_hex == self.public_key_hex:
            raise InputError("the new key is the current key", where="key")

        def build(cur: _Cursor, now: str) -> tuple[list[Spec], Any]:
            head = self._head(cur)
            if head is None:
                raise LedgerStateError(
                    "the ledger is empty: there is no key to change (a new ledger is opened "
                    "with whatever key the service has)"
                )
            lid = self._genesis(cur)
            message = key_change_message(lid, head.hash, self.public_key_hex, new_hex)
            payload = {
                "previous": self.public_key_hex,
                "public_key": new_hex,
                "possession": sign(new_key, KEY_TAG, message),
            }
            return [("key", "ledger", payload)], None

        entries, _ = self._append(build)
        self.key = new_key
        self.public_key = new_key.public_key()
        self.public_key_hex = new_hex
        return entries[-1]

    def export(self, path: Path) -> int:
        """Write every entry, one canonical JSON object a line, then a trailer signed by the
        service naming the head, so a third party can verify it offline with the public key.
        Returns the number of entries."""
        count = 0
        last: Entry | None = None
        tree = CompactRange()
        tmp = Path(path).with_name(Path(path).name + ".part")
        with open(tmp, "wb") as f:
            for e in self.iter_entries():
                f.write(canonical_json(e.to_export()) + b"\n")
                tree.append(leaf_hash(digest_bytes(e.hash)))
                count += 1
                last = e
            trailer = {
                "format": EXPORT_FORMAT,
                "ledger": self.ledger_id(),
                "public_key": self.public_key_hex,
                "entries": count,
                "head_seq": 0 if last is None else last.seq,
                "head_hash": None if last is None else last.hash,
                "root": digest_text(tree.root()),
                "exported_at": self.clock(),
            }
            signature = sign(self.key, EXPORT_TAG, canonical_json(trailer))
            f.write(canonical_json({"trailer": trailer, "signature": signature}) + b"\n")
        tmp.replace(path)
        return count


def open_ledger(
    home: Path,
    db_url: str,
    *,
    clock: Clock = utc_now,
    reveal_timeout: float = 86400.0,
) -> Ledger:
    """The ledger of the data directory ``home`` over the database ``db_url`` (migrated): the
    service key of ``home`` (created if missing) and its head witness and heads file. The
    harness opens it through ``harness.workspace.Workspace``, from the settings."""
    home = Path(home).expanduser()
    key = load_or_create_service_key(home)
    engine = open_engine(db_url, clock=clock)
    return Ledger(
        engine,
        key,
        clock=clock,
        reveal_timeout=reveal_timeout,
        witness_dir=home / WITNESS_DIR,
        heads_file=home / HEADS_FILE,
    )


def verify_export(
    path: Path,
    public_key: str,
    *,
    full: bool = False,
    heads: Sequence[tuple[TreeHead, str]] = (),
) -> Verification:
    """Verify an export offline with nothing but a service public key the ledger had (hex,
    PEM, or a file holding either). The signed trailer names the head and the Merkle root, so
    a file cut short is caught; each saved tree head in ``heads`` must be consistent with the
    exported ledger (see :func:`~ledger.tree.check_head`)."""
    pub = parse_public_key(public_key)
    lines: list[bytes] = Path(path).read_bytes().splitlines()
    lines = [ln for ln in lines if ln.strip()]
    failures: list[Failure] = []
    trailer: dict[str, Any] | None = None
    entries: list[Entry] = []
    for n, line in enumerate(lines, start=1):
        try:
            obj = parse_json(line)
        except InputError as exc:
            failures.append(
                Failure(len(entries) + 1, "invalid-entry", f"line {n} of the export: {exc}")
            )
            continue
        if isinstance(obj, dict) and "trailer" in obj:
            if n != len(lines):
                failures.append(
                    Failure(len(entries) + 1, "invalid-entry", f"a trailer at line {n}, not last")
                )
            trailer = obj
            continue
        try:
            entries.append(Entry.from_export(obj))
        except (KeyError, TypeError, ValueError):
            failures.append(
                Failure(len(entries) + 1, "invalid-entry", f"line {n} is not a ledger entry")
            )
    witness: Witness | None = None
    trailer_root: str | None = None
    signed_by: str | None = None
    if trailer is None:
        head = entries[-1].seq if entries and type(entries[-1].seq) is int else 0
        failures.append(
            Failure(
                head + 1,
                "entry-missing",
                "the export has no signed trailer: it may have been cut short",
            )
        )
    else:
        body = trailer.get("trailer")
        sig = trailer.get("signature")
        signer = body.get("public_key") if isinstance(body, dict) else None
        try:
            by = parse_public_key(signer) if isinstance(signer, str) else pub
        except LedgerKeyError:
            by = pub
        if (
            not isinstance(body, dict)
            or not isinstance(sig, str)
            or not verify_signature(by, EXPORT_TAG, canonical_json(body), sig)
        ):
            head = entries[-1].seq if entries and type(entries[-1].seq) is int else 0
            failures.append(
                Failure(head + 1, "signature-invalid", "the export's trailer signature is invalid")
            )
        elif body.get("head_hash") is not None:
            witness = Witness(int(body["head_seq"]), str(body["head_hash"]), "the signed trailer")
            trailer_root = body.get("root") if isinstance(body.get("root"), str) else None
            signed_by = str(signer)
    result = verify_entries(
        lambda: entries, pub, full=full, witness=witness, sizes={h.size for h, _ in heads}
    )
    if signed_by is not None and signed_by not in result.keys:
        failures.append(
            Failure(
                1,
                "ledger-replaced",
                f"the trailer was signed by {signed_by}, a key the exported ledger never had",
            )
        )
    if (
        trailer_root is not None
        and witness is not None
        and result.head_seq == witness.seq
        and result.root is not None
        and trailer_root != digest_text(result.root)
    ):
        failures.append(
            Failure(
                result.head_seq,
                "content-changed",
                f"the entries' Merkle root is not the {trailer_root} the signed trailer names",
            )
        )
    for saved, source in heads:
        failures.extend(check_head(result, saved, source))
    if failures:
        result.failures = sorted(
            [*result.failures, *failures], key=lambda f: (f.seq, PROBLEMS.index(f.problem))
        )
    return result
