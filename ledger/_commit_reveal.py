"""The commit-reveal protocol over the ledger: commit, observe, reveal, expire, and the states.

Each operation checks its input, then hands the :class:`~ledger._writer.Writer` a build that
reads the prediction's entries inside the write transaction and returns the entry to append, so
two writers can never both close the same prediction. A prediction's state is the fold of its
entries (:class:`~ledger.protocol.PredictionState`); nothing is ever updated in place.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ledger._receipts import CommitReceipt, RevealResult
from ledger._table import Cursor, EntryTable, Spec
from ledger._writer import Writer
from ledger.chain import Entry
from ledger.clock import Clock
from ledger.errors import AgentSignatureError, LedgerStateError
from ledger.keys import COMMIT_TAG, parse_public_key, public_key_hex, verify_signature
from ledger.protocol import (
    PredictionState,
    check_provenance,
    check_reveal,
    commit_message,
    is_digest,
    parse_time,
    prediction_id,
    query_messages,
)
from ledger.protocol import query_hash as hash_query
from ledger.scoring import ScoreRecord, aggregate, penalty_scores, score_prediction
from mindledger.canonical import canonical_json
from mindledger.errors import InputError, NotFoundError
from mindledger.names import check_agent_name

__all__ = ["CommitReveal", "read_state"]

_CLOSED_BY = {"reveal": "scored", "reject": "rejected", "expire": "expired"}
"""The state an entry of each closing kind leaves a prediction in."""


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise InputError("expected a non-empty string", where=where)
    return value


def _no_such(pid: str) -> NotFoundError:
    return NotFoundError(f"no prediction with id {pid!r} (see `mindledger ledger show`)")


def read_state(cur: Cursor, pid: str) -> PredictionState:
    """The current state of prediction ``pid``: the fold of its entries (NotFoundError if
    there is none)."""
    rows = cur.all(
        "SELECT seq, kind, payload_json, time FROM ledger_entries WHERE subject = ? ORDER BY seq",
        (pid,),
    )
    if not rows or rows[0][1] != "commit":
        raise _no_such(pid)
    seq, _, payload_json, time = rows[0]
    state = PredictionState.from_commit(pid, json.loads(payload_json), time, seq)
    for _, kind, payload_json, time in rows[1:]:
        state.apply(kind, json.loads(payload_json), time)
    return state


def check_open(state: PredictionState, now: str) -> None:
    """Refuse an answer to a prediction that is final or past its deadline at ``now``."""
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


def check_taking_answers(cur: Cursor, ids: Sequence[str], now: str) -> None:
    """Refuse, as :func:`check_open` does, an answer to any of ``ids`` (in order): one
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
            raise _no_such(pid)
        check_open(state, now)


def _agent_key(cur: Cursor, pid: str, predictor: str) -> str | None:
    """The public key ``predictor`` registered last (None: none), refusing a commitment
    already recorded as prediction ``pid``."""
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
    return agent_key


def _check_agent_signature(agent_key: str | None, payload: dict[str, Any]) -> None:
    """Refuse a commit signed by an agent with no registered key, or one by an agent with a
    registered key that it does not carry a valid signature of."""
    predictor, agent_signature = payload["predictor"], payload["agent_signature"]
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


def _check_commitment(commitment: Any) -> None:
    if (
        not isinstance(commitment, str)
        or not commitment.startswith("sha256:")
        or len(commitment) != 71
        or any(c not in "0123456789abcdef" for c in commitment[7:])
    ):
        raise InputError("expected sha256: and 64 lowercase hex digits", where="commitment")


def _check_json(value: Any, where: str, what: str) -> None:
    try:
        canonical_json(value)
    except (TypeError, ValueError):
        raise InputError(what, where=where) from None


class CommitReveal:
    """Predictions in the ledger of ``table``, appended through ``writer``; ``clock`` says
    when it is now, and a prediction expires ``reveal_timeout`` seconds after its commit."""

    def __init__(self, table: EntryTable, writer: Writer, clock: Clock, reveal_timeout: float):
        if reveal_timeout <= 0:
            raise InputError("must be a positive number of seconds", where="reveal_timeout")
        self.table = table
        self.writer = writer
        self.clock = clock
        self.reveal_timeout = reveal_timeout

    def deadline(self, now: str) -> str:
        """The deadline of a prediction committed at ``now``."""
        t = parse_time(now) + dt.timedelta(seconds=self.reveal_timeout)
        return t.isoformat(timespec="microseconds")

    # -- writing --------------------------------------------------------------------------

    def register_agent(self, predictor: str, public_key: str) -> Entry:
        """Register ``predictor``'s Ed25519 public key (hex): from now on its commits must
        carry its signature over :func:`~ledger.protocol.commit_message`."""
        check_agent_name(predictor, where="predictor")
        key_hex = public_key_hex(parse_public_key(public_key))
        payload = {"predictor": predictor, "public_key": key_hex}
        entries, _ = self.writer.append(
            lambda cur, now: ([("register", f"agent:{predictor}", payload)], None)
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
        """Record a commitment (see :meth:`ledger.predictions.Ledger.commit`)."""
        check_agent_name(predictor, where="predictor")
        check_agent_name(target, where="target")
        _text(query, "query")
        _text(item, "item", optional=True)
        if query_hash is None:
            query_hash = hash_query(query_messages(query))
        elif not is_digest(query_hash):
            raise InputError("expected sha256: and 64 lowercase hex digits", where="query_hash")
        _check_commitment(commitment)
        _check_json(condition, "condition", "must be JSON")
        pid = prediction_id(commitment)

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            agent_key = _agent_key(cur, pid, predictor)
            payload = {
                "predictor": predictor,
                "target": target,
                "query": query,
                "item": item,
                "condition": condition,
                "commitment": commitment,
                "deadline": self.deadline(now),
                "agent_signature": agent_signature,
                "query_hash": query_hash,
            }
            _check_agent_signature(agent_key, payload)
            return [("commit", pid, payload)], payload["deadline"]

        entries, deadline = self.writer.append(build)
        e = entries[-1]
        return CommitReceipt(pid, commitment, e.seq, e.hash, deadline, e.time)

    def observe_answers(
        self,
        predictions: Sequence[str],
        answers: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> list[Entry]:
        """Record several answers of the target (each with its provenance) against every
        prediction in ``predictions``, in one transaction: for each answer in turn, an
        ``observe`` entry per prediction. All or nothing: refused (nothing recorded) if any
        prediction is refused."""
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

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            check_taking_answers(cur, ids, now)
            return [
                ("observe", pid, {"answer": answer, "provenance": source})
                for answer, source in recorded
                for pid in ids
            ], None

        entries, _ = self.writer.append(build)
        return entries

    def reveal(
        self, prediction: str, revealed: Mapping[str, Any], salt: bytes | str
    ) -> RevealResult:
        """Open the commitment with the prediction and salt, and score it against the observed
        answers. A reveal that does not match (or comes after the deadline) is recorded as
        ``rejected`` (``expired``) with the worst-case score, and the result says so."""
        salt_hex = salt.hex() if isinstance(salt, bytes | bytearray) else salt
        if not isinstance(salt_hex, str):
            raise InputError("expected hex", where="salt")
        _check_json(revealed, "prediction", "the prediction must be JSON")

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            state = read_state(cur, prediction)
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

        entries, (status, scores, reason) = self.writer.append(build)
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

            def build(cur: Cursor, now: str, pid: str = state.id) -> tuple[list[Spec], Any]:
                current = read_state(cur, pid)
                if not current.overdue(now):
                    return [], None
                return [("expire", pid, {"scores": penalty_scores(current.observed)})], None

            if self.writer.append(build)[0]:
                expired.append(state.id)
        return expired

    # -- reading --------------------------------------------------------------------------

    def prediction(self, prediction: str) -> PredictionState:
        """The current state of one prediction (NotFoundError if there is none)."""
        with self.table.reading() as cur:
            return read_state(cur, prediction)

    def predictions(
        self, predictor: str | None = None, target: str | None = None
    ) -> list[PredictionState]:
        """Every prediction (optionally of one predictor and/or target), in commit order."""
        states: dict[str, PredictionState] = {}
        with self.table.reading() as cur:
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
