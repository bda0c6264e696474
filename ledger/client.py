"""The Python client: commit before asking, let mindledger ask the target, reveal and score.

::

    from ledger import open_ledger

    client = open_ledger(home, db_url).client("piper")
    with client.predict("dusk", "Pick a number from 1 to 10", {"7": 0.6, "3": 0.4},
                        via=ask_dusk) as p:
        answer = p.ask()     # mindledger calls ask_dusk(query) and records what dusk said
    print(p.scores)          # log score, Brier, top-1 match, …

Entering the block commits (the salt and the prediction stay in this process); :meth:`ask`
queries the target through the adapter given as ``via`` (any callable taking the query and
returning the target's answer) and records the answer with its provenance — the predictor never
hands mindledger an answer of its own; leaving the block reveals and scores. If the block raises
before any answer was recorded, nothing is revealed and the prediction will expire, counted
against the predictor like any unrevealed prediction.

This client writes to the ledger in-process, so it is an operator's tool (whoever can run it
can open the database). An agent under test goes through the daemon instead
(:mod:`harness.daemon.client`): its calls pass the query proxy, which asks the target itself.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger._receipts import CommitReceipt, LedgerService, RevealResult
from ledger.errors import LedgerStateError, RevealRejected
from ledger.keys import COMMIT_TAG, public_key_hex, sign
from ledger.protocol import (
    commit_fields,
    commit_message,
    commitment,
    new_salt,
    prediction_body,
    prediction_id,
    provenance,
    response_hash,
)

__all__ = ["LedgerClient", "Prediction", "PredictionBlock", "record_answer", "record_answers"]


@runtime_checkable
class _ObservesMany(Protocol):
    """A ledger that records answers against several predictions in one transaction."""

    def observe_answers(
        self,
        predictions: Sequence[str],
        answers: Sequence[tuple[str, Mapping[str, Any]]],
    ) -> object: ...


class LedgerClient:
    """A predictor's handle on the ledger. With ``agent_key``, every commit is signed by the
    agent too (register the key once with :meth:`register_key`)."""

    def __init__(
        self,
        ledger: LedgerService,
        predictor: str,
        *,
        agent_key: Ed25519PrivateKey | None = None,
    ):
        self.ledger = ledger
        self.predictor = predictor
        self.agent_key = agent_key

    def register_key(self) -> None:
        """Register this agent's public key in the ledger."""
        if self.agent_key is None:
            raise LedgerStateError("this client has no agent key to register")
        self.ledger.register_agent(self.predictor, public_key_hex(self.agent_key))

    def predict(
        self,
        target: str,
        query: str,
        distribution: Mapping[str, float],
        *,
        top1: str | None = None,
        rationale: str | None = None,
        own_answer: str | None = None,
        item: str | None = None,
        condition: Any = None,
        via: Callable[[str], Any] | None = None,
    ) -> Prediction:
        """A prediction of ``target``'s answer to ``query``, to use in a ``with`` block (or
        call :meth:`Prediction.commit`, :meth:`~Prediction.ask`, :meth:`~Prediction.reveal`
        yourself). ``via`` is the adapter that asks the target: called with the query, it
        returns the target's answer. Checks the distribution now; commits nothing yet."""
        body = prediction_body(
            predictor=self.predictor,
            target=target,
            query=query,
            distribution=distribution,
            top1=top1,
            rationale=rationale,
            own_answer=own_answer,
            item=item,
            condition=condition,
        )
        return Prediction(self, body, via)

    def commit(
        self, target: str, query: str, distribution: Mapping[str, float], **kw: Any
    ) -> Prediction:
        """Build a prediction and commit it at once."""
        p = self.predict(target, query, distribution, **kw)
        p.commit()
        return p


class PredictionBlock(ABC):
    """A prediction as a ``with`` block: entering commits, leaving reveals once the target was
    asked; a block left without asking raises, and the prediction stays committed, to expire.
    Subclasses say how to commit and reveal, whether the target was asked, and which errors a
    reveal attempted while another exception propagates may swallow."""

    id: str
    tolerated: tuple[type[BaseException], ...] = (RevealRejected,)

    @abstractmethod
    def commit(self) -> Any:
        """Commit the prediction (once)."""

    @abstractmethod
    def reveal(self) -> Any:
        """Reveal and score it."""

    @property
    @abstractmethod
    def asked(self) -> bool:
        """Whether the target has answered within the block."""

    def __enter__(self) -> Any:
        self.commit()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.asked:
            if exc is None:
                self.reveal()
            else:
                try:
                    self.reveal()
                except self.tolerated:
                    pass
            return
        if exc is None:
            raise LedgerStateError(
                f"no answer was recorded for prediction {self.id} in the block (call "
                "p.ask()); it stays committed and will expire",
                prediction=self.id,
                state="committed",
            )


class Prediction(PredictionBlock):
    """One prediction's life on the client side: it holds the prediction and its salt."""

    def __init__(
        self, client: LedgerClient, body: dict[str, Any], via: Callable[[str], Any] | None = None
    ):
        self.client = client
        self.body = body
        self.via = via
        self.salt = new_salt()
        self.commitment = commitment(body, self.salt)
        self.id = prediction_id(self.commitment)
        self.receipt: CommitReceipt | None = None
        self.result: RevealResult | None = None
        self.answers: list[str] = []

    @property
    def scores(self) -> dict[str, Any] | None:
        """The scores once revealed (None before)."""
        return None if self.result is None else self.result.scores

    def commit(self) -> CommitReceipt:
        """Commit (once)."""
        if self.receipt is None:
            b = self.body
            fields = commit_fields(b, self.commitment)
            signature = None
            if self.client.agent_key is not None:
                signature = sign(self.client.agent_key, COMMIT_TAG, commit_message(fields))
            self.receipt = self.client.ledger.commit(
                b["predictor"],
                b["target"],
                b["query"],
                self.commitment,
                item=b["item"],
                condition=b["condition"],
                agent_signature=signature,
                query_hash=fields["query_hash"],
            )
        return self.receipt

    def ask(self, times: int = 1) -> Any:
        """Ask the target (through ``via``) ``times`` times and record each answer with its
        provenance; returns the answer (a list of them when ``times`` > 1)."""
        if self.via is None:
            raise LedgerStateError(
                f"prediction {self.id} has no adapter to ask {self.body['target']!r} with: "
                "pass via=<a callable that asks the target> to predict()",
                prediction=self.id,
            )
        adapter = getattr(self.via, "__qualname__", type(self.via).__qualname__)
        answers = []
        for _ in range(times):
            reply = self.via(self.body["query"])
            text = reply if isinstance(reply, str) else str(reply)
            self.record(
                text,
                provenance(
                    "client",
                    f"client-{uuid.uuid4().hex}",
                    response_hash(text),
                    adapter=str(adapter)[:200],
                ),
            )
            answers.append(reply)
        return answers[0] if times == 1 else answers

    def record(self, answer: str, source: Mapping[str, Any]) -> None:
        """Record one answer of the target that the calling component obtained itself, with
        its provenance (:func:`~ledger.protocol.provenance`): for the components that ask
        targets (the matrix, the runner) and for operators."""
        self.commit()
        self.client.ledger.observe(self.id, answer, source)
        self.answers.append(answer)

    def reveal(self) -> RevealResult:
        """Reveal and score; raises RevealRejected if the ledger recorded it as rejected or
        expired."""
        if self.result is None:
            self.result = self.client.ledger.reveal(self.id, self.body, self.salt)
        if not self.result.accepted:
            raise RevealRejected(
                f"prediction {self.id} was {self.result.status}: {self.result.reason}",
                self.result,
            )
        return self.result

    @property
    def asked(self) -> bool:
        return bool(self.answers)


def record_answer(predictions: Sequence[Prediction], answer: str, source: Mapping[str, Any]) -> None:
    """Record one answer of a target against every prediction in ``predictions`` (predictions
    of that target's answer to the same query, by any predictors, on one ledger), with its
    provenance: as :meth:`Prediction.record` for each, but in one transaction when the
    ledger can (:meth:`~ledger.predictions.Ledger.observe_answers`). Each is committed first."""
    record_answers(predictions, [(answer, source)])


def record_answers(
    predictions: Sequence[Prediction], answers: Sequence[tuple[str, Mapping[str, Any]]]
) -> None:
    """Record several answers of a target (each with its provenance, in order) against every
    prediction in ``predictions``, as :func:`record_answer` does for one: in one transaction
    when the ledger can. Each prediction is committed first."""
    if not predictions or not answers:
        return
    ledger = predictions[0].client.ledger
    if any(p.client.ledger is not ledger for p in predictions):
        raise LedgerStateError("record_answer: the predictions are not all on one ledger")
    for p in predictions:
        p.commit()
    if isinstance(ledger, _ObservesMany):
        ledger.observe_answers([p.id for p in predictions], list(answers))
    else:
        for answer, source in answers:
            for p in predictions:
                ledger.observe(p.id, answer, source)
    for answer, _ in answers:
        for p in predictions:
            p.answers.append(answer)
