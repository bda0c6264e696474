"""The query proxy's record in the ledger: the calls it forwarded and refused.

A ``call`` entry records a call the proxy forwarded (and, when it carried a prediction and the
target answered, an ``observe`` entry records the answer against it in the same transaction); a
``refuse`` entry records a call it refused. Folded per (caller, target) they give the
obligations the proxy keeps (:mod:`ledger.calls`): a sampled call must carry a prediction.
"""

from __future__ import annotations

import json
from typing import Any

from ledger._commit_reveal import read_state
from ledger._table import Cursor, EntryTable, Spec
from ledger._writer import Writer
from ledger.calls import Calls, CallTally, check_call, check_refusal
from ledger.chain import Entry
from ledger.errors import LedgerStateError
from ledger.protocol import QUERY_VERSION, REFUSALS, is_digest, provenance, unlock_refusal
from mindledger.errors import InputError

__all__ = ["ProxyRecord"]


class ProxyRecord:
    """The proxy's calls in the ledger of ``table``, appended through ``writer``."""

    def __init__(self, table: EntryTable, writer: Writer):
        self.table = table
        self.writer = writer

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
        """Record a call the proxy forwarded (see :meth:`ledger.predictions.Ledger.record_call`)."""
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

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            specs: list[Spec] = [("call", f"agent:{caller}", call)]
            if prediction is None:
                return specs, None
            state = read_state(cur, prediction)
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

        entries, _ = self.writer.append(build)
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
        entries, _ = self.writer.append(
            lambda cur, now: ([("refuse", f"agent:{caller}", refusal)], None)
        )
        return entries[-1]

    def calls(self, caller: str | None = None) -> list[CallTally]:
        """The proxy's record per (caller, target) (see
        :meth:`ledger.predictions.Ledger.calls`)."""
        fold = Calls()
        with self.table.reading() as cur:
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
