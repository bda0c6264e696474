"""Self-forecasts in the ledger (issue 29): commit, seal, reveal and their scores; what is
refused; and the verifier catching every tampering with them."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.chain import Entry, make_entry, verify_entries
from ledger.db import open_engine
from ledger.errors import LedgerStateError
from ledger.forecasts import read_forecasts
from ledger.predictions import Ledger
from ledger.protocol import commitment
from mindledger.errors import InputError, NotFoundError

KEY = Ed25519PrivateKey.from_private_bytes(b"\x05" * 32)

Q = {"form": "quantiles", "levels": [0.1, 0.5, 0.9], "values": [0.2, 0.5, 0.8]}
B = {"form": "bins", "edges": [0.0, 0.5, 1.0], "probs": [0.3, 0.7]}


class FakeClock:
    def __init__(self) -> None:
        self.t = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        self.t += dt.timedelta(milliseconds=1)
        return self.t.isoformat(timespec="microseconds")


@pytest.fixture
def ledger(db_url: str, tmp_path: Path) -> Iterator[Ledger]:
    engine = open_engine(db_url)
    led = Ledger(engine, KEY, clock=FakeClock(), witness_dir=tmp_path / "witness")
    yield led
    led.close()
    engine.dispose()


def sealed_body(forecast: dict[str, Any], reason: str | None = None) -> tuple[dict[str, Any], str]:
    """A body and a fresh salt (hex), and (see commit_of) the commitment they make."""
    return {"forecast": forecast, "reason": reason}, os.urandom(32).hex()


def commit_of(body: dict[str, Any], salt: str) -> str:
    return commitment(body, bytes.fromhex(salt))


def committed(
    led: Ledger, run: str, forecast: dict[str, Any], *, figure: str = "false_belief_accuracy"
) -> tuple[str, dict[str, Any], str]:
    body, salt = sealed_body(forecast, "the solver fails at depth 3")
    state = led.commit_forecast("piper", run, figure, commit_of(body, salt))
    return state.id, body, salt


# -- the protocol -------------------------------------------------------------------------------


def test_quantiles_round_trip_scored_with_hand_computed_losses(ledger: Ledger) -> None:
    fid, body, salt = committed(ledger, "r1", Q)
    state = ledger.forecast(fid)
    assert (state.status, state.predictor, state.run_id, state.held) == (
        "committed",
        "piper",
        "r1",
        False,
    )
    assert fid == "f" + state.commitment[7:27]
    ledger.seal_run("r1")
    out = ledger.reveal_forecast(fid, body, salt, outcome=0.6, previous=(0.5, None, 0.95))
    # pinball losses at 0.6: 0.1·0.4 + 0.5·0.1 + (0.9−1)·(0.6−0.8) = 0.11; ×2/3
    assert out.status == "scored" and out.rule == "quantile_score"
    assert out.loss == pytest.approx(2 / 3 * 0.11)
    # the naive forecast is a point mass at 0.5 (no interval): 0.1·0.1 + 0.5·0.1 + 0.9·0.1
    assert out.naive == {"form": "quantiles", "levels": Q["levels"], "values": [0.5, 0.5, 0.5]}
    assert out.naive_loss == pytest.approx(2 / 3 * 0.15)
    assert out.outcome == 0.6 and out.forecast == Q and out.reason == body["reason"]
    assert ledger.forecast(fid) == out
    assert ledger.verify() == [] and ledger.verify(full=True) == []


def test_bins_round_trip_scored_with_the_log_score(ledger: Ledger) -> None:
    fid, body, salt = committed(ledger, "r1", B, figure="change:d50")
    out = ledger.reveal_forecast(fid, body, salt, outcome=0.6, previous=(0.2, None, 0.95))
    assert out.status == "scored" and out.rule == "log_score"
    assert out.loss == pytest.approx(-math.log(0.7))
    # the naive point mass sits in the first bin: the outcome's bin has p = 0, floored at 1e-4
    assert out.naive == {"form": "bins", "edges": B["edges"], "probs": [1.0, 0.0]}
    assert out.naive_loss == pytest.approx(4 * math.log(10))
    assert ledger.verify(full=True) == []


def test_no_previous_run_no_naive_forecast(ledger: Ledger) -> None:
    fid, body, salt = committed(ledger, "r1", Q)
    out = ledger.reveal_forecast(fid, body, salt, outcome=0.5, previous=None)
    assert out.status == "scored" and out.naive is None and out.naive_loss is None
    assert out.loss == pytest.approx(2 / 3 * (0.1 * 0.3 + 0 + 0.1 * 0.3))


def test_held_forecast_kept_with_its_salt_and_revealed_by_the_service(ledger: Ledger) -> None:
    body, salt = sealed_body(B, None)
    state = ledger.commit_forecast("piper", "r1", "d50", commit_of(body, salt), held=(body, salt))
    assert state.held
    assert ledger.held_forecast(state.id) == (body, salt)
    assert ledger.held_forecast("f" + "0" * 20) is None
    held_body, held_salt = ledger.held_forecast(state.id) or ({}, "")
    out = ledger.reveal_forecast(state.id, held_body, held_salt, outcome=0.2, previous=None)
    assert out.status == "scored" and out.held
    assert out.loss == pytest.approx(-math.log(0.3))
    assert ledger.verify(full=True) == []


def test_a_held_forecast_that_does_not_open_its_commitment_is_refused(ledger: Ledger) -> None:
    body, salt = sealed_body(B)
    wrong = commit_of({"forecast": Q, "reason": None}, salt)
    with pytest.raises(InputError, match="commitment"):
        ledger.commit_forecast("piper", "r1", "d50", wrong, held=(body, salt))
    bad = {"forecast": {"form": "bins", "edges": [0, 1], "probs": [0.5]}, "reason": None}
    with pytest.raises(InputError) as exc:
        ledger.commit_forecast("piper", "r1", "d50", commit_of(bad, salt), held=(bad, salt))
    assert exc.value.where == "forecast.probs"
    assert ledger.forecasts() == [] and ledger.count("forecast") == 0


def test_bad_input_is_refused_naming_the_field(ledger: Ledger) -> None:
    body, salt = sealed_body(Q)
    c = commit_of(body, salt)
    for args, where in [
        (("pi per", "r1", "d50", c), "predictor"),
        (("piper", "", "d50", c), "run"),
        (("piper", "r1", "d51", c), "figure"),
        (("piper", "r1", "d50", "sha256:xyz"), "commitment"),
    ]:
        with pytest.raises(InputError) as exc:
            ledger.commit_forecast(*args)
        assert exc.value.where == where
    assert ledger.count("forecast") == 0


def test_the_same_commitment_twice_is_refused(ledger: Ledger) -> None:
    body, salt = sealed_body(Q)
    ledger.commit_forecast("piper", "r1", "d50", commit_of(body, salt))
    with pytest.raises(LedgerStateError, match="already recorded"):
        ledger.commit_forecast("piper", "r2", "d50", commit_of(body, salt))


def test_a_commit_after_the_seal_is_refused_and_the_seal_is_idempotent(ledger: Ledger) -> None:
    committed(ledger, "r1", Q)
    assert not ledger.sealed("r1")
    seal = ledger.seal_run("r1")
    assert (seal.kind, seal.subject, seal.payload) == ("run-start", "run:r1", {"run": "r1"})
    assert ledger.sealed("r1") and not ledger.sealed("r2")
    assert ledger.seal_run("r1") == seal  # idempotent: no second entry
    assert ledger.count("run-start") == 1
    with pytest.raises(LedgerStateError, match="sealed"):
        committed(ledger, "r1", B)
    committed(ledger, "r2", B)  # another run is still open
    assert [s.run_id for s in ledger.forecasts()] == ["r1", "r2"]
    assert ledger.verify(full=True) == []


def test_a_reveal_that_does_not_open_the_commitment_is_rejected_unscored(ledger: Ledger) -> None:
    fid, body, salt = committed(ledger, "r1", Q)
    other = {**body, "reason": "something else"}
    out = ledger.reveal_forecast(fid, other, salt, outcome=0.6, previous=(0.5, None, 0.95))
    assert out.status == "rejected"
    assert (out.loss, out.naive_loss, out.rule, out.naive) == (None, None, None, None)
    assert out.note is not None and "do not hash to the commitment" in out.note
    with pytest.raises(LedgerStateError, match="already revealed"):
        ledger.reveal_forecast(fid, body, salt, outcome=0.6, previous=None)
    assert ledger.verify(full=True) == []


def test_void_reveal_says_why_and_a_second_reveal_is_refused(ledger: Ledger) -> None:
    fid, body, salt = committed(ledger, "r1", Q, figure="ablation_credit:solver")
    with pytest.raises(InputError) as exc:
        ledger.reveal_forecast(fid, body, salt, outcome=None, previous=None)
    assert exc.value.where == "note"
    out = ledger.reveal_forecast(
        fid, body, salt, outcome=None, previous=None, note="the run did not ablate solver"
    )
    assert (out.status, out.note, out.loss) == ("void", "the run did not ablate solver", None)
    with pytest.raises(LedgerStateError, match="already revealed"):
        ledger.reveal_forecast(fid, body, salt, outcome=0.1, previous=None)
    assert ledger.count("forecast-reveal") == 1
    with pytest.raises(NotFoundError):
        ledger.reveal_forecast("f" + "1" * 20, body, salt, outcome=0.1, previous=None)
    assert ledger.verify(full=True) == []


def test_read_forecasts_filters_and_needs_no_key(ledger: Ledger) -> None:
    a, _, _ = committed(ledger, "r1", Q)
    b, body, salt = committed(ledger, "r2", B)
    body2, salt2 = sealed_body(Q)
    ledger.commit_forecast("wren", "r2", "S", commit_of(body2, salt2))
    ledger.reveal_forecast(b, body, salt, outcome=0.9, previous=None)
    got = read_forecasts(ledger.engine, predictor="piper")
    assert [(s.id, s.status) for s in got] == [(a, "committed"), (b, "scored")]
    assert [s.predictor for s in read_forecasts(ledger.engine, run_id="r2")] == ["piper", "wren"]
    assert ledger.forecasts(predictor="wren", run_id="r1") == []


def test_commit_and_seal_racing_exactly_one_order_wins(db_url: str, tmp_path: Path) -> None:
    """Two ledgers on the same database (separate writers, contending for its write lock):
    a commit and the seal of the same run, started together; the commit either lands before
    the seal or is refused, never after it."""
    engines = [open_engine(db_url) for _ in range(2)]
    a = Ledger(engines[0], KEY, witness_dir=None)
    b = Ledger(engines[1], KEY, witness_dir=None)
    a.seal_run("warm-up")
    outcomes: list[str] = []
    for i in range(12):
        run = f"race{i}"
        body, salt = sealed_body(Q)
        c = commit_of(body, salt)
        barrier = threading.Barrier(2)
        result: dict[str, Any] = {}

        def commit(
            run: str = run,
            c: str = c,
            result: dict[str, Any] = result,
            barrier: threading.Barrier = barrier,
        ) -> None:
            barrier.wait()
            try:
                result["commit"] = a.commit_forecast("piper", run, "d50", c).seq
            except LedgerStateError:
                result["commit"] = None

        def seal(
            run: str = run, result: dict[str, Any] = result, barrier: threading.Barrier = barrier
        ) -> None:
            barrier.wait()
            result["seal"] = b.seal_run(run).seq

        threads = [threading.Thread(target=commit), threading.Thread(target=seal)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if result["commit"] is None:
            outcomes.append("refused")
            assert a.forecasts(run_id=run) == []
        else:
            outcomes.append("before")
            assert result["commit"] < result["seal"]
    assert len(outcomes) == 12
    assert a.verify(full=True) == []
    for led, engine in zip((a, b), engines, strict=True):
        led.close()
        engine.dispose()


# -- tampering ----------------------------------------------------------------------------------


def _forecast_ledger(led: Ledger) -> dict[str, str]:
    """open 1; forecast f1 (r1) 2; forecast f2 (r1) 3; seal r1 4; reveal f1 scored 5;
    reveal f2 rejected 6."""
    f1, body1, salt1 = committed(led, "r1", Q)
    f2, body2, salt2 = committed(led, "r1", B)
    led.seal_run("r1")
    led.reveal_forecast(f1, body1, salt1, outcome=0.6, previous=(0.5, [0.4, 0.6], 0.95))
    led.reveal_forecast(f2, {**body2, "reason": "other"}, salt2, outcome=0.6, previous=None)
    assert led.verify(full=True) == []
    return {"f1": f1, "f2": f2}


def _resigned(entries: list[Entry], changes: dict[int, Entry]) -> list[Entry]:
    """``entries`` with those at ``changes``' seqs replaced, and the chain re-linked and
    re-signed with the service key from there: only the semantics can catch it."""
    out: list[Entry] = []
    for e in entries:
        e = changes.get(e.seq, e)
        prev_hash = out[-1].hash if out else e.prev_hash
        prev_sig = out[-1].signature if out else e.prev_signature
        out.append(
            make_entry(
                KEY,
                seq=e.seq,
                prev_hash=prev_hash,
                prev_signature=prev_sig,
                time=e.time,
                kind=e.kind,
                subject=e.subject,
                payload=json.loads(e.payload_json),
            )
        )
    return out


def _with_payload(e: Entry, **change: Any) -> Entry:
    payload = {**json.loads(e.payload_json), **change}
    return e._replace(payload_json=json.dumps(payload))


def _appended(entries: list[Entry], kind: str, subject: str, payload: Any) -> list[Entry]:
    last = entries[-1]
    extra = Entry(last.seq + 1, subject, kind, json.dumps(payload), last.time, "", "", "", "")
    return _resigned([*entries, extra], {})


Tamper = Callable[[list[Entry], dict[str, str]], list[Entry]]

TAMPERS: dict[str, tuple[Tamper, str]] = {
    "forecast committed after its run's seal": (
        lambda es, ids: _resigned(es, {2: es[3]._replace(seq=2), 4: es[1]._replace(seq=4)}),
        "after the run's seal",
    ),
    "a forecast's subject is not its id": (
        lambda es, ids: _resigned(es, {2: es[1]._replace(subject="f" + "0" * 20)}),
        "subject must be its id",
    ),
    "a forecast's figure is unknown": (
        lambda es, ids: _resigned(es, {2: _with_payload(es[1], figure="iq")}),
        "no valid figure",
    ),
    "a reveal's loss changed": (
        lambda es, ids: _resigned(es, {5: _with_payload(es[4], loss=0.001)}),
        "loss",
    ),
    "a reveal's naive loss changed": (
        lambda es, ids: _resigned(es, {5: _with_payload(es[4], naive_loss=9.0)}),
        "naive_loss",
    ),
    "a reveal's outcome changed": (
        lambda es, ids: _resigned(es, {5: _with_payload(es[4], outcome=0.5)}),
        "do not follow",
    ),
    "a reveal's previous value changed": (
        lambda es, ids: _resigned(es, {5: _with_payload(es[4], previous=[0.9, None, 0.95])}),
        "naive",
    ),
    "a reveal's forecast changed": (
        lambda es, ids: _resigned(
            es, {5: _with_payload(es[4], forecast={**Q, "values": [0.1, 0.5, 0.8]})}
        ),
        "do not hash to the commitment",
    ),
    "a rejected reveal recorded as scored": (
        lambda es, ids: _resigned(es, {6: _with_payload(es[5], status="scored")}),
        "do not hash to the commitment",
    ),
    "a scored reveal recorded as rejected": (
        lambda es, ids: _resigned(
            es, {5: _with_payload(es[4], status="rejected", loss=None, naive=None)}
        ),
        "recorded rejected",
    ),
    "a second reveal": (
        lambda es, ids: _appended(es, "forecast-reveal", ids["f1"], json.loads(es[4].payload_json)),
        "revealed twice",
    ),
    "a second seal": (
        lambda es, ids: _appended(es, "run-start", "run:r1", {"run": "r1"}),
        "sealed twice",
    ),
    "a reveal of a forecast never committed": (
        lambda es, ids: _appended(es, "forecast-reveal", "f" + "2" * 20, es[4].payload),
        "never committed",
    ),
}


@pytest.mark.parametrize("name", list(TAMPERS))
@pytest.mark.parametrize("full", [False, True])
def test_verify_catches_tampering_with_forecasts(
    ledger: Ledger, name: str, full: bool, db_url: str
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("the entries are tampered with in memory: once is enough")
    ids = _forecast_ledger(ledger)
    entries = ledger.entries()
    tamper, message = TAMPERS[name]
    forged = tamper(entries, ids)
    result = verify_entries(lambda: forged, KEY.public_key(), full=full)
    assert not result.ok, name
    assert any(message in f.message for f in result.failures), [str(f) for f in result.failures]
    assert result.failures[0].problem in ("invalid-entry", "reveal-mismatch", "signature-invalid")


def test_ledger_verify_reports_a_forecast_forged_after_the_seal(ledger: Ledger) -> None:
    """Through the stored ledger: a forecast appended after its run's seal, signed with the
    service key (someone holding the key and the database) is reported."""
    _forecast_ledger(ledger)
    entries = ledger.entries()
    body, salt = sealed_body(Q)
    c = commit_of(body, salt)
    payload = {
        "predictor": "piper",
        "run": "r1",
        "figure": "d50",
        "commitment": c,
        "agent_signature": None,
        "held": False,
    }
    forged = _appended(entries, "forecast", "f" + c[7:27], payload)[-1]
    with ledger.engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO ledger_entries (seq, subject, kind, payload_json, time, prev_hash, "
            "prev_signature, hash, signature) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            if ledger.engine.dialect.name == "sqlite"
            else "INSERT INTO ledger_entries (seq, subject, kind, payload_json, time, prev_hash, "
            "prev_signature, hash, signature) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            tuple(forged),
        )
    failures = ledger.verify()
    assert any("after the run's seal" in f.message for f in failures), failures


# -- the run's execution seals it -----------------------------------------------------------------


def test_a_run_is_sealed_before_its_first_trial_and_refuses_commits_after(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.config.settings import load_settings
    from harness.config.workspace import Workspace
    from tests.cli import run_main

    code, _, err = run_main(
        capsys,
        "run",
        "--suite",
        "quick",
        "--reference",
        "oracle",
        "--seed",
        "2",
        "--format",
        "json",
    )
    assert code == 0, err
    with Workspace.open(load_settings()) as ws:
        (run,) = ws.store.list_runs()
        led = ws.ledger
        assert led.sealed(run.id)
        (seal,) = [e for e in led.entries() if e.kind == "run-start"]
        assert seal.subject == f"run:{run.id}"
        with ws.engine.connect() as conn:
            first = conn.exec_driver_sql(
                "SELECT MIN(created_at), COUNT(*) FROM trials WHERE run_id = ?", (run.id,)
            ).one()
        assert first[1] > 0
        assert dt.datetime.fromisoformat(seal.time) <= dt.datetime.fromisoformat(first[0])
        body, salt = sealed_body(Q)
        with pytest.raises(LedgerStateError, match="sealed"):
            led.commit_forecast("ref-oracle", run.id, "d50", commit_of(body, salt))
        assert led.verify(full=True) == []


def test_ledger_show_and_verify_show_the_forecasts(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from harness.config.settings import load_settings
    from harness.config.workspace import Workspace
    from tests.cli import run_main

    with Workspace.open(load_settings()) as ws:
        fid, body, salt = committed(ws.ledger, "r1", Q)
        held_body, held_salt = sealed_body(B)
        held = ws.ledger.commit_forecast(
            "piper", "r1", "S", commit_of(held_body, held_salt), held=(held_body, held_salt)
        )
        ws.ledger.seal_run("r1")
        ws.ledger.reveal_forecast(fid, body, salt, outcome=0.6, previous=(0.5, None, 0.95))

    code, out, err = run_main(capsys, "ledger", "show")
    assert code == 0, err
    assert fid in out and held.id in out and "scored" in out and "committed (held)" in out
    assert "0.073" in out  # the loss, 2/3 · 0.11
    assert "2 self-forecasts: 1 committed, 1 scored" in out

    code, out, err = run_main(capsys, "ledger", "show", "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["predictions"] == []
    assert [(f["id"], f["status"]) for f in shown["forecasts"]] == [
        (fid, "scored"),
        (held.id, "committed"),
    ]

    code, out, err = run_main(capsys, "ledger", "show", "--id", fid, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["loss"] == pytest.approx(2 / 3 * 0.11)

    code, out, err = run_main(capsys, "ledger", "verify")
    assert code == 0, err
    assert "forecasts: 1 committed, 1 scored (1 run sealed)" in out

    code, out, err = run_main(capsys, "ledger", "verify", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["forecasts"] == {
        "states": {"committed": 1, "scored": 1},
        "sealed_runs": 1,
    }


def test_a_committed_forecast_that_is_not_valid_is_rejected_at_its_reveal(
    ledger: Ledger,
) -> None:
    bad = {
        "forecast": {"form": "quantiles", "levels": [0.5, 0.1], "values": [1, 2]},
        "reason": None,
    }
    salt = os.urandom(32).hex()
    state = ledger.commit_forecast("piper", "r1", "d50", commit_of(bad, salt))
    out = ledger.reveal_forecast(state.id, bad, salt, outcome=1.0, previous=None)
    assert out.status == "rejected" and out.loss is None
    assert out.note is not None and "not valid" in out.note
    assert ledger.verify(full=True) == []


def test_an_agent_signature_must_be_the_registered_agents(ledger: Ledger) -> None:
    from ledger._forecasts import forecast_message
    from ledger.errors import AgentSignatureError
    from ledger.keys import COMMIT_TAG, public_key_hex, sign

    agent = Ed25519PrivateKey.from_private_bytes(b"\x09" * 32)
    body, salt = sealed_body(Q)
    c = commit_of(body, salt)
    fields = {"predictor": "piper", "run": "r1", "figure": "d50", "commitment": c}
    sig = sign(agent, COMMIT_TAG, forecast_message(fields))
    with pytest.raises(AgentSignatureError, match="no public key is registered"):
        ledger.commit_forecast("piper", "r1", "d50", c, agent_signature=sig)
    ledger.register_agent("piper", public_key_hex(agent.public_key()))
    with pytest.raises(AgentSignatureError, match="does not verify"):
        ledger.commit_forecast("piper", "r2", "d50", c, agent_signature=sig)
    state = ledger.commit_forecast("piper", "r1", "d50", c, agent_signature=sig)
    assert state.seq > 0
    assert ledger.verify(full=True) == []
