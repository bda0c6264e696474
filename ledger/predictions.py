"""The prediction ledger over a database: commit, observe, reveal, expire, verify, export.

:class:`Ledger` is the one object callers hold. It is made of parts, each in its own module
over the database's tables (:mod:`ledger._table`), each using only the parts listed before it;
every part that appends hands its request to the one :class:`~ledger._writer.Writer`:

- :class:`~ledger._identity.LedgerIdentity` — which ledger this is and the service key that
  signs for it; a key change is a ``key`` entry.
- :class:`~ledger._head_guard.HeadGuard` — before every append, the head is checked: its hash
  and signature (unless it is the head this process wrote last) and the head witness, so the
  service never builds on a ledger whose tail was cut off or that was replaced.
- :class:`~ledger._tree_store.TreeStore` and :class:`~ledger._tree_heads.TreeHeads` — the stored
  Merkle tree, its roots and proofs; signed tree heads and proof bundles.
- :class:`~ledger._writer.Writer` — group commit: every request becomes entries, appended in
  one transaction under a lock that serialises all writers, linked, signed, with the Merkle
  tree nodes they complete.
- :class:`~ledger._commit_reveal.CommitReveal` — the protocol: commit, observe, reveal, expire,
  and a prediction's state (the fold of its entries, :class:`~ledger.protocol.PredictionState`).
- :class:`~ledger.forecasts.Forecasts` — self-forecasts: commit, the runs' seals, reveal
  (scored by the ledger), and a forecast's state (:class:`~ledger.forecasts.ForecastState`).
- :class:`~ledger._proxy_record.ProxyRecord` — the query proxy's calls and refusals, and the
  obligations they open.
- :class:`~ledger._verifier.Verifier` and :mod:`ledger._export` — verification of the stored
  ledger, and the signed export verified offline (:func:`verify_export`).

No row is ever updated or deleted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from sqlalchemy.engine import Engine

from ledger._commit_reveal import CommitReveal
from ledger._export import EXPORT_FORMAT, verify_export, write_export
from ledger._head_guard import HeadGuard
from ledger._identity import LedgerIdentity
from ledger._proxy_record import ProxyRecord
from ledger._receipts import CommitReceipt, RevealResult
from ledger._table import EntryTable
from ledger._tree_heads import TreeHeads
from ledger._tree_store import TreeStore
from ledger._verifier import Verifier
from ledger._witness import HeadWitness
from ledger._writer import Writer
from ledger.calls import CallTally
from ledger.chain import Entry, Failure, Verification
from ledger.client import LedgerClient
from ledger.db import Clock, open_engine, utc_now
from ledger.forecasts import Forecasts, ForecastState, read_forecasts
from ledger.keys import load_or_create_service_key
from ledger.protocol import PredictionState
from ledger.tree import HEADS_FILE, HeadsFile, TreeHead

__all__ = [
    "EXPORT_FORMAT",
    "WITNESS_DIR",
    "CommitReceipt",
    "Ledger",
    "RevealResult",
    "open_ledger",
    "verify_export",
]

WITNESS_DIR = "ledger-witness"
"""The head witness's directory, relative to the data directory."""


class Ledger:
    """The prediction ledger in one database, signed with one service key.

    ``clock`` returns the current time as an ISO 8601 UTC string (tests pass their own, and may
    replace it later: the parts read the time through :attr:`clock`); ``reveal_timeout`` is how
    many seconds after its commit a prediction expires; ``witness_dir`` holds the head witness
    (see :mod:`ledger._witness`; None turns it off, and with it the detection of a cut-off
    tail); ``heads_file`` receives every signed tree head (see :mod:`ledger.tree`; None: heads
    are signed but not kept).

    Safe to call from several threads: their appends are grouped into shared transactions
    (group commit, see :class:`~ledger._writer.Writer`). Each method hands its work to the
    part that owns it (see the module's docstring).
    """

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
        self.engine = engine
        self.clock = clock
        self.witness = HeadWitness(witness_dir) if witness_dir is not None else None
        self.heads = HeadsFile(heads_file) if heads_file is not None else None
        self.table = EntryTable(engine)
        self.identity = LedgerIdentity(key)
        self.guard = HeadGuard(self.identity, self.witness)
        self.tree = TreeStore(self.table)
        self.tree_heads = TreeHeads(self.table, self.identity, self.tree, self.heads, self._now)
        self.writer = Writer(self.table, self.identity, self.guard, self.tree, self._now)
        self.commit_reveal = CommitReveal(self.table, self.writer, self._now, reveal_timeout)
        self.proxy = ProxyRecord(self.table, self.writer)
        self.self_forecasts = Forecasts(self.table, self.writer)
        self.verifier = Verifier(self.table, self.identity, self.guard, self.tree, self.tree_heads)

    def _now(self) -> str:
        return self.clock()

    @property
    def key(self) -> Ed25519PrivateKey:
        """The service key (changed only by :meth:`rotate_key`)."""
        return self.identity.key

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.identity.public_key

    @property
    def public_key_hex(self) -> str:
        return self.identity.public_key_hex

    @property
    def reveal_timeout(self) -> float:
        return self.commit_reveal.reveal_timeout

    @property
    def db_label(self) -> str:
        """The database's URL without its password."""
        return self.table.db_label

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

    # -- the commit-reveal protocol ---------------------------------------------------------

    def register_agent(self, predictor: str, public_key: str) -> Entry:
        """Register ``predictor``'s Ed25519 public key (hex): from now on its commits must
        carry its signature over :func:`~ledger.protocol.commit_message`."""
        return self.commit_reveal.register_agent(predictor, public_key)

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
        return self.commit_reveal.commit(
            predictor,
            target,
            query,
            commitment,
            item=item,
            condition=condition,
            agent_signature=agent_signature,
            query_hash=query_hash,
        )

    def observe(self, prediction: str, answer: str, provenance: Mapping[str, Any]) -> Entry:
        """Record one answer of the target to the prediction's query (repeatable, for a target
        sampled several times), with its ``provenance`` (:func:`~ledger.protocol.provenance`:
        who asked the target, which request, the hash of the raw response). Only whoever
        asked the target records its answer: the proxy, the matrix, the runner, or an
        operator. Refused for an unknown id, after the reveal and after the deadline."""
        return self.commit_reveal.observe_answers([prediction], [(answer, provenance)])[-1]

    def observe_many(
        self, predictions: Sequence[str], answer: str, provenance: Mapping[str, Any]
    ) -> list[Entry]:
        """Record one answer of the target against several predictions about it (the same
        query asked once, its answer owed to every prediction of it) in one transaction: an
        ``observe`` entry per prediction, in the order given, each as :meth:`observe` records
        it. All or nothing: refused (nothing recorded) if any of them is refused."""
        return self.commit_reveal.observe_answers(predictions, [(answer, provenance)])

    def observe_answers(
        self,
        predictions: Sequence[str],
        answers: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> list[Entry]:
        """Record several answers of the target (each with its provenance) against every
        prediction in ``predictions``, in one transaction: for each answer in turn, an
        ``observe`` entry per prediction, as :meth:`observe_many` records it. All or nothing:
        refused (nothing recorded) if any prediction is refused."""
        return self.commit_reveal.observe_answers(predictions, answers)

    def reveal(
        self, prediction: str, revealed: Mapping[str, Any], salt: bytes | str
    ) -> RevealResult:
        """Open the commitment with the prediction and salt, and score it against the observed
        answers. A reveal that does not match (or comes after the deadline) is recorded as
        ``rejected`` (``expired``) with the worst-case score, and the result says so."""
        return self.commit_reveal.reveal(prediction, revealed, salt)

    def expire_overdue(self) -> list[str]:
        """Record an ``expire`` entry, with the worst-case score, for every prediction still
        open after its deadline. Returns their ids."""
        return self.commit_reveal.expire_overdue()

    def prediction(self, prediction: str) -> PredictionState:
        """The current state of one prediction (NotFoundError if there is none)."""
        return self.commit_reveal.prediction(prediction)

    def predictions(
        self, predictor: str | None = None, target: str | None = None
    ) -> list[PredictionState]:
        """Every prediction (optionally of one predictor and/or target), in commit order."""
        return self.commit_reveal.predictions(predictor, target)

    def summary(self, predictor: str | None = None, target: str | None = None) -> dict[str, Any]:
        """Counts by state and aggregate scores of the final predictions, penalties included
        (an open prediction past its deadline counts as expired)."""
        return self.commit_reveal.summary(predictor, target)

    # -- self-forecasts (see ledger.forecasts) ----------------------------------------------

    def commit_forecast(
        self,
        predictor: str,
        run_id: str,
        figure: str,
        commitment: str,
        *,
        agent_signature: str | None = None,
        held: tuple[Mapping[str, Any], str] | None = None,
    ) -> ForecastState:
        """Record ``predictor``'s forecast of ``figure`` (a name
        :func:`mindledger.forecasts.figure` accepts) of its own profile in run ``run_id``: a
        ``forecast`` entry with the commitment. ``held`` = (body, salt hex): the service holds
        the forecast (body ``{"forecast": …, "reason": …}``, which with the salt must open the
        commitment) to reveal it itself, in ``held_forecasts``, written with the entry.
        ``agent_signature``: the agent's signature over
        :func:`ledger._forecasts.forecast_message`, checked against its registered key.
        Refused (LedgerStateError) once the run is sealed (:meth:`seal_run`) or when the
        commitment is already recorded; InputError for a bad name, figure or commitment."""
        return self.self_forecasts.commit(
            predictor, run_id, figure, commitment, agent_signature=agent_signature, held=held
        )

    def seal_run(self, run_id: str) -> Entry:
        """Seal run ``run_id`` (its ``run-start`` entry): called by its execution before it
        writes the run's first trial; no forecast of the run is taken after it. Idempotent:
        a sealed run's seal is returned as it is."""
        return self.self_forecasts.seal(run_id)

    def sealed(self, run_id: str) -> bool:
        """Whether run ``run_id`` is sealed."""
        return self.self_forecasts.sealed(run_id)

    def reveal_forecast(
        self,
        forecast_id: str,
        body: Mapping[str, Any],
        salt: str,
        *,
        outcome: float | None,
        previous: tuple[float, Sequence[float] | None, float] | None,
        note: str | None = None,
    ) -> ForecastState:
        """Reveal forecast ``forecast_id`` (once; the caller checks that its run has ended):
        ``body`` ``{"forecast": …, "reason": …}`` and ``salt`` (hex) must open the commitment
        and hold a valid forecast, else it is recorded ``rejected``, unscored. ``outcome`` is
        the run's value of the figure (None: ``void``, ``note`` saying why); ``previous`` =
        (value, ci, level) of the predictor's previous run, for the naive forecast
        (:func:`mindledger.forecasts.naive_like`; None: no naive forecast). Scored by the
        form's rule: the forecast's loss and the naive one's."""
        return self.self_forecasts.reveal(
            forecast_id, body, salt, outcome=outcome, previous=previous, note=note
        )

    def held_forecast(self, forecast_id: str) -> tuple[dict[str, Any], str] | None:
        """The body and salt (hex) of a forecast the service holds; None for any other."""
        return self.self_forecasts.held(forecast_id)

    def forecast(self, forecast_id: str) -> ForecastState:
        """One forecast's state (NotFoundError if there is none)."""
        return self.self_forecasts.forecast(forecast_id)

    def forecasts(
        self, predictor: str | None = None, run_id: str | None = None
    ) -> list[ForecastState]:
        """Every forecast (of ``predictor``, for ``run_id``), in commit order."""
        return read_forecasts(self.engine, predictor=predictor, run_id=run_id)

    # -- the query proxy's record -----------------------------------------------------------

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
        return self.proxy.record_call(
            caller,
            target,
            request=request,
            query_hash=query_hash,
            status=status,
            prediction=prediction,
            answer=answer,
            response=response,
        )

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
        return self.proxy.record_refusal(
            caller, target, reason, request=request, query_hash=query_hash, prediction=prediction
        )

    def calls(self, caller: str | None = None) -> list[CallTally]:
        """The query proxy's record per (caller, target): calls forwarded, calls that carried
        a prediction, refusals by reason, and the obligations (the one owed, if any; how many
        were opened and met). Whether an owed one is abandoned is a question for
        :func:`ledger.calls.summarise`, as of the ledger's last entry (:meth:`head`)."""
        return self.proxy.calls(caller)

    # -- the entries ------------------------------------------------------------------------

    def iter_entries(self) -> Iterator[Entry]:
        """Every entry in ``seq`` order, streamed (one consistent snapshot)."""
        return self.table.iter_entries()

    def entries(self) -> list[Entry]:
        return list(self.table.iter_entries())

    def head(self) -> Entry | None:
        return self.table.head()

    def count(self, kind: str) -> int:
        """How many entries of ``kind`` (``commit``, ``reveal``, …) the ledger holds."""
        return self.table.count(kind)

    def ledger_id(self) -> str | None:
        """The hash of entry 1, which names this ledger (None while it is empty)."""
        with self.table.reading() as cur:
            return self.identity.ledger_id(cur)

    # -- verification and export ------------------------------------------------------------

    def verification(
        self, *, full: bool = False, heads: Sequence[tuple[TreeHead, str]] = ()
    ) -> Verification:
        """Verify the stored ledger (see :func:`~ledger.chain.verify_entries`), and beyond the
        entries: that the stored Merkle tree matches them, that this data directory witnessed
        no other ledger, that the service key here is the ledger's current key, and that every
        tree head the service published (the heads file) and every head given as ``heads``
        ((head, where it came from) pairs: say, one saved before an attack) is consistent with
        the ledger now."""
        return self.verifier.verification(full=full, heads=heads)

    def verify(
        self, *, full: bool = False, heads: Sequence[tuple[TreeHead, str]] = ()
    ) -> list[Failure]:
        """What is wrong with the stored ledger, first bad entry first; empty when intact."""
        return self.verifier.verification(full=full, heads=heads).failures

    def export(self, path: Path) -> int:
        """Write every entry, one canonical JSON object a line, then a trailer signed by the
        service naming the head, so a third party can verify it offline with the public key
        (:func:`verify_export`). Returns the number of entries."""
        return write_export(
            path, self.iter_entries(), ledger_id=self.ledger_id, key=self.key, clock=self._now
        )

    # -- the Merkle tree: heads and proofs --------------------------------------------------

    def root(self, size: int | None = None) -> bytes | None:
        """The Merkle root of entries 1…``size`` (default: all) from the stored tree; None
        when the stored tree lacks the nodes."""
        return self.tree.root(size)

    def tree_head(self, *, publish: bool = True) -> TreeHead | None:
        """A signed tree head of the ledger as it is now (None while it is empty). A head is
        signed only when the ledger grew since the last one this process signed; with
        ``publish``, each newly signed head is appended to the heads file."""
        return self.tree_heads.tree_head(publish=publish)

    def inclusion_proof(self, seq: int, size: int | None = None) -> dict[str, Any]:
        """The RFC 6962 audit path of entry ``seq`` in the tree of the first ``size`` entries
        (default: all), from O(log n) stored nodes: ``{seq, entry, size, root, proof,
        nodes_read}`` (hashes as ``sha256:<hex>``)."""
        return self.tree.inclusion_proof(seq, size)

    def consistency_proof(self, old: int, new: int | None = None) -> dict[str, Any]:
        """The RFC 6962 consistency proof that the first ``new`` entries (default: all) extend
        the first ``old``, from O(log n) stored nodes (never the entries): ``{old, new,
        old_root, new_root, proof, nodes_read}``."""
        return self.tree.consistency_proof(old, new)

    def prove(self, subject: str) -> dict[str, Any]:
        """Inclusion proofs of a prediction's entries (``subject`` a prediction id) or of one
        entry (``subject`` its seq), against a freshly signed tree head: a bundle anyone can
        check offline (:func:`ledger.tree.check_proof`)."""
        return self.tree_heads.prove(subject)

    # -- the service key --------------------------------------------------------------------

    def rotate_key(self, new_key: Ed25519PrivateKey) -> Entry:
        """Change the service key: append a ``key`` entry, signed by the current key, naming
        the new one and carrying the new key's signature over the change (proof of
        possession); from then on entries and heads are signed with ``new_key``. The caller
        stores the new key (:func:`ledger.keys.rotate_service_key` does it safely)."""
        entries, _ = self.writer.append(self.identity.key_change(new_key))
        self.identity.adopt(new_key)
        return entries[-1]


def open_ledger(
    home: Path,
    db_url: str,
    *,
    clock: Clock = utc_now,
    reveal_timeout: float = 86400.0,
) -> Ledger:
    """The ledger of the data directory ``home`` over the database ``db_url`` (migrated): the
    service key of ``home`` (created if missing) and its head witness and heads file. The
    harness opens it through ``harness.config.workspace.Workspace``, from the settings."""
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
