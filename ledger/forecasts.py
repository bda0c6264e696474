"""Self-forecasts in the ledger (issue 29): an agent's forecast of a figure of its own profile
for a run, committed before the run's first trial and revealed (and scored) after it ends.

The protocol (the entries are described in :mod:`ledger._forecasts`):

1. **Commit** — a ``forecast`` entry (subject: the forecast's id, ``f`` + 20 hex digits of the
   commitment) binds a commitment to a predictor, a run and a figure of the predictor's own
   profile. The commitment is :func:`ledger.protocol.commitment` of ``{"forecast": …,
   "reason": …}`` (:func:`mindledger.forecasts.forecast_body`) with a 32-byte salt. *Held*
   forecasts are sent in clear: the service draws the salt, and keeps the body and the salt in
   ``held_forecasts`` (written in the transaction of the entry) to reveal them itself.
2. **Seal** — a ``run-start`` entry (subject ``run:<run id>``), appended by the run's execution
   before it writes the run's first trial. No commit for the run is taken after it, and the
   verifier checks that none follows it: "committed before the first trial", from the ledger
   alone.
3. **Reveal** — a ``forecast-reveal`` entry with the forecast, its reason and salt, the run's
   value of the figure (the *outcome*, None when the run has none: ``void``) and the naive
   forecast's inputs; the ledger checks the commitment (``rejected`` when it does not open)
   and scores the forecast and the naive one by the form's proper rule. One per forecast.

:class:`Forecasts` is the :class:`~ledger.predictions.Ledger`'s part for them;
:func:`read_forecasts` reads them from a database without the service key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.engine import Engine

from ledger._forecasts import (
    RUN_ID_PATTERN,
    check_body,
    check_previous,
    check_run_id,
    forecast_id,
    opens,
    reveal_payload,
    seal_subject,
    signature_ok,
)
from ledger._table import COLUMNS, Cursor, EntryTable, Spec, row_entry
from ledger._writer import Writer
from ledger.chain import Entry
from ledger.errors import AgentSignatureError, LedgerStateError
from ledger.protocol import is_digest
from mindledger.canonical import canonical_json
from mindledger.errors import InputError, NotFoundError
from mindledger.forecasts import figure, forecast_body, parse_forecast
from mindledger.names import check_agent_name

__all__ = ["RUN_ID_PATTERN", "ForecastState", "Forecasts", "read_forecasts"]

ForecastStatus = Literal["committed", "scored", "void", "rejected"]


@dataclass
class ForecastState:
    """One forecast, the fold of its ledger entries (``forecast`` then at most one
    ``forecast-reveal``)."""

    id: str
    """``f`` + the first 20 hex digits of the commitment."""
    predictor: str
    """The agent whose figure it forecasts (forecasts are of oneself)."""
    run_id: str
    figure: str
    """A name :func:`mindledger.forecasts.figure` accepts."""
    commitment: str
    committed_at: str
    seq: int
    """The commit entry's sequence number."""
    status: ForecastStatus = "committed"
    """``committed`` until revealed; ``scored`` (the reveal matched and the figure exists);
    ``void`` (it matched, but the run has no value of the figure: ``note`` says why);
    ``rejected`` (the reveal did not match the commitment)."""
    held: bool = False
    """The service holds the forecast and its salt and reveals it when the run ends (a
    forecast sent in clear); False when the agent reveals it itself."""
    forecast: dict[str, Any] | None = None
    """The revealed forecast (JSON form, :func:`mindledger.forecasts.parse_forecast`)."""
    reason: str | None = None
    revealed_at: str | None = None
    outcome: float | None = None
    """The run's value of the figure."""
    naive: dict[str, Any] | None = None
    """The naive forecast in the forecast's form (None when there is no previous value)."""
    rule: Literal["quantile_score", "log_score"] | None = None
    loss: float | None = None
    naive_loss: float | None = None
    note: str | None = None

    @classmethod
    def from_commit(
        cls, fid: str, payload: Mapping[str, Any], time: str, seq: int
    ) -> ForecastState:
        return cls(
            id=fid,
            predictor=payload["predictor"],
            run_id=payload["run"],
            figure=payload["figure"],
            commitment=payload["commitment"],
            committed_at=time,
            seq=seq,
            held=bool(payload.get("held")),
        )

    def apply_reveal(self, payload: Mapping[str, Any], time: str) -> None:
        """Fold in its ``forecast-reveal`` entry."""
        self.status = payload["status"]
        self.forecast = payload["forecast"] if isinstance(payload["forecast"], dict) else None
        self.reason = payload["reason"] if isinstance(payload["reason"], str) else None
        self.revealed_at = time
        self.outcome = payload["outcome"]
        self.naive = payload["naive"]
        self.rule = payload["rule"]
        self.loss = payload["loss"]
        self.naive_loss = payload["naive_loss"]
        self.note = payload["note"]


_KINDS = "kind IN ('forecast', 'forecast-reveal')"


def _fold(rows: Sequence[Any]) -> dict[str, ForecastState]:
    """The forecasts of rows ``(seq, subject, kind, payload_json, time)`` in seq order."""
    states: dict[str, ForecastState] = {}
    for seq, subject, kind, payload_json, time in rows:
        payload = json.loads(payload_json)
        if kind == "forecast":
            states.setdefault(subject, ForecastState.from_commit(subject, payload, time, seq))
        elif subject in states and states[subject].revealed_at is None:
            states[subject].apply_reveal(payload, time)
    return states


def _read(cur: Cursor, fid: str) -> ForecastState:
    rows = cur.all(
        f"SELECT seq, subject, kind, payload_json, time FROM ledger_entries WHERE subject = ? "
        f"AND {_KINDS} ORDER BY seq",
        (fid,),
    )
    state = _fold(rows).get(fid)
    if state is None:
        raise NotFoundError(f"no forecast with id {fid!r}")
    return state


def _seal_of(cur: Cursor, run_id: str) -> Entry | None:
    row = cur.one(
        f"SELECT {COLUMNS} FROM ledger_entries WHERE subject = ? AND kind = 'run-start' "
        "ORDER BY seq LIMIT 1",
        (seal_subject(run_id),),
    )
    return None if row is None else row_entry(row)


def read_forecasts(
    engine: Engine, *, predictor: str | None = None, run_id: str | None = None
) -> list[ForecastState]:
    """Every forecast in the ledger of ``engine`` (of ``predictor``, for ``run_id``), in commit
    order, each the fold of its entries. Needs no key: it reads, and verifies nothing."""
    with EntryTable(engine).reading() as cur:
        rows = cur.all(
            f"SELECT seq, subject, kind, payload_json, time FROM ledger_entries WHERE {_KINDS} "
            "ORDER BY seq"
        )
    return [
        s
        for s in _fold(rows).values()
        if (predictor is None or s.predictor == predictor)
        and (run_id is None or s.run_id == run_id)
    ]


def _agent_key(cur: Cursor, predictor: str) -> str | None:
    row = cur.one(
        "SELECT payload_json FROM ledger_entries WHERE subject = ? AND kind = 'register' "
        "ORDER BY seq DESC LIMIT 1",
        (f"agent:{predictor}",),
    )
    return None if row is None else str(json.loads(row[0])["public_key"])


class Forecasts:
    """Self-forecasts in the ledger of ``table``, appended through ``writer`` (see the
    module's docstring; :class:`~ledger.predictions.Ledger` documents each method)."""

    def __init__(self, table: EntryTable, writer: Writer):
        self.table = table
        self.writer = writer

    def commit(
        self,
        predictor: str,
        run_id: str,
        figure_name: str,
        commitment: str,
        *,
        agent_signature: str | None = None,
        held: tuple[Mapping[str, Any], str] | None = None,
    ) -> ForecastState:
        check_agent_name(predictor, where="predictor")
        check_run_id(run_id)
        figure(figure_name)
        if not is_digest(commitment):
            raise InputError("expected sha256: and 64 lowercase hex digits", where="commitment")
        if agent_signature is not None and not isinstance(agent_signature, str):
            raise InputError("expected hex", where="agent_signature")
        held_row: tuple[str, str] | None = None
        if held is not None:
            body, salt_hex = check_body(held[0], "forecast"), held[1]
            forecast_body(parse_forecast(body["forecast"]), body["reason"])
            wrong = opens(commitment, body, salt_hex)
            if wrong is not None:
                raise InputError(f"the held forecast: {wrong}", where="commitment")
            held_row = (canonical_json(body).decode("utf-8"), salt_hex)
        fid = forecast_id(commitment)
        payload = {
            "predictor": predictor,
            "run": run_id,
            "figure": figure_name,
            "commitment": commitment,
            "agent_signature": agent_signature,
            "held": held is not None,
        }

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            seal = _seal_of(cur, run_id)
            if seal is not None:
                raise LedgerStateError(
                    f"run {run_id} is sealed (entry {seal.seq}, {seal.time}): its trials may "
                    "have begun, so forecasts of it are closed",
                    state="sealed",
                )
            if cur.one(
                "SELECT 1 FROM ledger_entries WHERE subject = ? AND kind = 'forecast'", (fid,)
            ):
                raise LedgerStateError(
                    f"this commitment is already recorded as forecast {fid} (a new forecast "
                    "needs a new salt)",
                    prediction=fid,
                    state="committed",
                )
            if agent_signature is not None:
                key = _agent_key(cur, predictor)
                if key is None or not signature_ok(key, payload):
                    raise AgentSignatureError(
                        "agent_signature: "
                        + (
                            f"no public key is registered for {predictor!r}"
                            if key is None
                            else "does not verify with the agent's registered key"
                        ),
                        state="unregistered" if key is None else "signature_required",
                    )
            if held_row is not None:
                cur.run(
                    "INSERT INTO held_forecasts (id, body_json, salt_hex) VALUES (?, ?, ?)",
                    (fid, *held_row),
                )
            return [("forecast", fid, payload)], None

        entries, _ = self.writer.append(build)
        e = entries[-1]
        return ForecastState.from_commit(fid, payload, e.time, e.seq)

    def seal(self, run_id: str) -> Entry:
        check_run_id(run_id)
        with self.table.reading() as cur:
            seal = _seal_of(cur, run_id)
        if seal is not None:
            return seal

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            existing = _seal_of(cur, run_id)
            if existing is not None:
                return [], existing
            return [("run-start", seal_subject(run_id), {"run": run_id})], None

        entries, existing = self.writer.append(build)
        return entries[-1] if entries else existing

    def sealed(self, run_id: str) -> bool:
        with self.table.reading() as cur:
            return _seal_of(cur, run_id) is not None

    def reveal(
        self,
        fid: str,
        body: Mapping[str, Any],
        salt: str,
        *,
        outcome: float | None,
        previous: tuple[float, Sequence[float] | None, float] | None,
        note: str | None = None,
    ) -> ForecastState:
        opened = check_body(body)
        if not isinstance(salt, str):
            raise InputError("expected hex", where="salt")
        naive_from = check_previous(previous)
        if outcome is not None and (
            isinstance(outcome, bool)
            or not isinstance(outcome, int | float)
            or outcome != outcome
            or outcome in (float("inf"), float("-inf"))
        ):
            raise InputError("expected a finite number or None", where="outcome")
        if note is not None and not isinstance(note, str):
            raise InputError("expected text", where="note")
        if outcome is None and not note:
            raise InputError("say why the run has no value of the figure", where="note")
        value = None if outcome is None else float(outcome)

        def build(cur: Cursor, now: str) -> tuple[list[Spec], Any]:
            state = _read(cur, fid)
            if state.revealed_at is not None:
                raise LedgerStateError(
                    f"forecast {fid} is already revealed ({state.status})",
                    prediction=fid,
                    state=state.status,
                )
            payload = reveal_payload(state.commitment, opened, salt, value, naive_from, note)
            state.apply_reveal(payload, now)
            return [("forecast-reveal", fid, payload)], state

        _, state = self.writer.append(build)
        return state  # type: ignore[no-any-return]

    def held(self, fid: str) -> tuple[dict[str, Any], str] | None:
        with self.table.reading() as cur:
            row = cur.one("SELECT body_json, salt_hex FROM held_forecasts WHERE id = ?", (fid,))
        return None if row is None else (json.loads(row[0]), str(row[1]))

    def forecast(self, fid: str) -> ForecastState:
        with self.table.reading() as cur:
            return _read(cur, fid)
