"""The fold of the query proxy's record into obligations (pure): bound to the sampled query,
met only by a prediction of it, abandoned after a day by the ledger's own clock; and the
refusals recorded before obligations were bound to a query keep their old meaning."""

from __future__ import annotations

import datetime as dt
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.calls import ABANDON_AFTER, Calls, obligation_warnings, summarise
from ledger.db import open_engine
from ledger.predictions import Ledger
from ledger.protocol import query_hash, query_messages, response_hash

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
Q = query_hash(query_messages("hard"))
EASY = query_hash(query_messages("easy"))


def at(delta: dt.timedelta = dt.timedelta(0)) -> str:
    return (T0 + delta).isoformat(timespec="microseconds")


def refusal(reason: str, qh: str, **extra: Any) -> dict[str, Any]:
    return {"caller": "m", "target": "dusk", "request": "r", "query_hash": qh,
            "prediction": None, "reason": reason, **extra}  # fmt: skip


def answered(qh: str, **extra: Any) -> dict[str, Any]:
    return {"caller": "m", "target": "dusk", "request": "r", "query_hash": qh,
            "prediction": "p1", "status": 200, "answered": True,
            "response": response_hash("{}"), **extra}  # fmt: skip


def test_a_bound_obligation_is_met_only_by_its_own_query() -> None:
    fold = Calls()
    assert fold.apply(2, "refuse", refusal("sampled", Q, query_v=2), at()) == []
    assert fold.apply(3, "call", answered(EASY, query_v=2), at()) == []  # the throwaway
    (t,) = fold.by_caller()
    assert t.obligation is not None and t.obligation.query_hash == Q and t.opened == 1
    assert fold.apply(4, "call", answered(Q, query_v=2), at()) == []
    assert (t.obligation, t.opened, t.met) == (None, 1, 1)


def test_an_obligation_recorded_before_binding_is_met_by_any_predicted_call() -> None:
    fold = Calls()
    fold.apply(2, "refuse", refusal("sampled", Q), at())  # no query_v: version 1
    (t,) = fold.by_caller()
    assert t.obligation is not None and t.obligation.query_hash is None
    fold.apply(3, "call", answered(EASY), at())
    assert (t.obligation, t.met) == (None, 1)


def test_an_unpredicted_call_while_owed_is_flagged() -> None:
    fold = Calls()
    fold.apply(2, "refuse", refusal("sampled", Q, query_v=2), at())
    bare = {**answered(Q, query_v=2), "prediction": None, "answered": False}
    (problem,) = fold.apply(3, "call", bare, at())
    assert "without a prediction while 'm' owed one" in problem


def test_an_obligation_is_abandoned_a_day_after_its_sampled_call() -> None:
    fold = Calls()
    fold.apply(2, "refuse", refusal("sampled", Q, query_v=2), at())
    tallies = fold.by_caller()
    day = summarise(tallies, at(ABANDON_AFTER))["m"]
    assert day["obligations"] == {"opened": 1, "met": 0, "pending": 1, "abandoned": 0}
    assert obligation_warnings({"m": day}) == []
    later = summarise(tallies, at(ABANDON_AFTER + dt.timedelta(microseconds=1)))["m"]
    assert later["obligations"] == {"opened": 1, "met": 0, "pending": 0, "abandoned": 1}
    assert later["abandoned_obligations"] == [
        {"target": "dusk", "since": 2, "opened_at": at(), "query_hash": Q}
    ]
    (line,) = obligation_warnings({"m": later})
    assert line.startswith("'m' abandoned 1 obligation:") and "dusk since entry 2" in line
    assert summarise(tallies, None)["m"]["obligations"]["abandoned"] == 0


def test_verify_warns_of_an_abandoned_obligation_and_still_passes(tmp_path: Any) -> None:
    now = [T0]
    led = Ledger(
        open_engine(f"sqlite:///{tmp_path / 'l.db'}"),
        Ed25519PrivateKey.generate(),
        witness_dir=None,
        clock=lambda: now[0].isoformat(timespec="microseconds"),
    )
    led.record_refusal("m", "dusk", "sampled", request="a", query_hash=Q)
    assert led.verification().warnings == []
    now[0] += ABANDON_AFTER + dt.timedelta(seconds=1)
    led.record_refusal("m", "dusk", "obligation", request="b", query_hash=EASY)
    v = led.verification()
    assert v.ok and v.failures == []
    (line,) = v.warnings
    assert "'m' abandoned 1 obligation:" in line and "opened 1, met 0" in line
    assert v.calls["m"]["obligations"]["abandoned"] == 1
    led.engine.dispose()
