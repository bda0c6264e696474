"""The Python client: commit before asking, record the answer, reveal and score after.

::

    from ledger import open_ledger

    ledger = open_ledger(home).client("piper")
    with ledger.predict("dusk", "Pick a number from 1 to 10", {"7": 0.6, "3": 0.4}) as p:
        answer = p.ask(ask_dusk, "Pick a number from 1 to 10")   # or: p.observe(answer)
    print(p.scores)          # log score, Brier, top-1 match, …

Entering the block commits (the salt and the prediction stay in this process); every answer
recorded in the block is an observation; leaving the block reveals and scores. If the block
raises before any answer was recorded, nothing is revealed and the prediction will expire,
counted against the predictor like any unrevealed prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.keys import COMMIT_TAG, public_key_hex, sign
from ledger.ledger_errors import LedgerStateError, RevealRejected
from ledger.predictions import CommitReceipt, Ledger, RevealResult
from ledger.protocol import commit_message, commitment, new_salt, prediction_body, prediction_id

__all__ = ["LedgerClient", "Prediction"]


class LedgerClient:
    """A predictor's handle on the ledger. With ``agent_key``, every commit is signed by the
    agent too (register the key once with :meth:`register_key`)."""

    def __init__(
        self, ledger: Ledger, predictor: str, *, agent_key: Ed25519PrivateKey | None = None
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
    ) -> Prediction:
        """A prediction of ``target``'s answer to ``query``, to use in a ``with`` block (or
        call :meth:`Prediction.commit`, :meth:`~Prediction.observe`, :meth:`~Prediction.reveal`
        yourself). Checks the distribution now; commits nothing yet."""
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
        return Prediction(self, body)

    def commit(
        self, target: str, query: str, distribution: Mapping[str, float], **kw: Any
    ) -> Prediction:
        """Build a prediction and commit it at once."""
        p = self.predict(target, query, distribution, **kw)
        p.commit()
        return p


class Prediction:
    """One prediction's life on the client side: it holds the prediction and its salt."""

    def __init__(self, client: LedgerClient, body: dict[str, Any]):
        self.client = client
        self.body = body
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
            signature = None
            if self.client.agent_key is not None:
                fields = {
                    "predictor": b["predictor"],
                    "target": b["target"],
                    "query": b["query"],
                    "item": b["item"],
                    "condition": b["condition"],
                    "commitment": self.commitment,
                }
                signature = sign(self.client.agent_key, COMMIT_TAG, commit_message(fields))
            self.receipt = self.client.ledger.commit(
                b["predictor"],
                b["target"],
                b["query"],
                self.commitment,
                item=b["item"],
                condition=b["condition"],
                agent_signature=signature,
            )
        return self.receipt

    def observe(self, answer: str) -> None:
        """Record one answer of the target."""
        self.commit()
        self.client.ledger.observe(self.id, answer)
        self.answers.append(answer)

    def ask(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn(*args, **kwargs)`` (the query to the target) and record what it returns
        (as ``str``) as an answer."""
        answer = fn(*args, **kwargs)
        self.observe(answer if isinstance(answer, str) else str(answer))
        return answer

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

    def __enter__(self) -> Prediction:
        self.commit()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.answers:
            if exc is None:
                self.reveal()
            else:
                try:
                    self.reveal()
                except RevealRejected:
                    pass
            return
        if exc is None:
            raise LedgerStateError(
                f"no answer was recorded for prediction {self.id} in the block (call "
                "p.observe(answer) or p.ask(fn, …)); it stays committed and will expire",
                prediction=self.id,
                state="committed",
            )
