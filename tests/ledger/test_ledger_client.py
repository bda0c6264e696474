"""The Python client and the ledger's protocol rules: commit before the query, observe, reveal,
reject, expire, agent keys, penalties in every aggregate, export and offline verification."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger import (
    Ledger,
    LedgerIntegrityError,
    LedgerKeyError,
    LedgerStateError,
    RevealRejected,
    load_or_create_service_key,
    open_engine,
    open_ledger,
    penalty_log_score,
    public_key_hex,
    verify_export,
)
from ledger.errors import AgentSignatureError
from ledger.keys import KEY_FILE, PUBLIC_KEY_FILE
from ledger.protocol import provenance, response_hash
from mindledger.errors import InputError, NotFoundError

OP = provenance("operator", "test-request")
"""An operator's provenance for answers the tests record by hand."""

KEY = Ed25519PrivateKey.from_private_bytes(b"\x05" * 32)


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.t = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)

    def __call__(self) -> str:
        return self.t.isoformat(timespec="microseconds")

    def advance(self, seconds: float) -> None:
        self.t += dt.timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(db_url: str, tmp_path: Path, clock: FakeClock) -> Iterator[Callable[..., Ledger]]:
    engine = open_engine(db_url)
    made: list[Ledger] = []

    def make_ledger(key: Ed25519PrivateKey = KEY, timeout: float = 3600.0) -> Ledger:
        led = Ledger(
            engine, key, clock=clock, reveal_timeout=timeout, witness_dir=tmp_path / "witness"
        )
        made.append(led)
        return led

    yield make_ledger
    for led in made:
        led.close()
    engine.dispose()


def test_predict_block_commits_before_the_query_and_scores_after(
    make: Callable[..., Ledger],
) -> None:
    led = make()
    client = led.client("piper")
    seen: list[str] = []

    def ask_dusk(query: str) -> str:
        # the commitment is in the ledger before the target is asked
        seen.append(led.prediction(p.id).state)
        assert query == "Pick a number from 1 to 10"
        return "7"

    with client.predict(
        "dusk", "Pick a number from 1 to 10", {"7": 0.6, "3": 0.4}, via=ask_dusk
    ) as p:
        assert p.scores is None
        answer = p.ask()
        again = p.ask(times=2)
    assert answer == "7" and again == ["7", "7"]
    assert seen == ["committed", "observed", "observed"]
    assert p.scores is not None and p.scores["top1_match"] == 1.0
    assert p.scores["log_score"] == pytest.approx(math.log(0.6))
    state = led.prediction(p.id)
    assert state.state == "scored" and state.observed == ["7", "7", "7"]
    # every answer names who asked the target, the request, and the raw response's hash
    assert [s["by"] for s in state.provenance] == ["client"] * 3
    assert len({s["request"] for s in state.provenance}) == 3
    assert state.provenance[0]["response"] == response_hash("7")
    assert "ask_dusk" in state.provenance[0]["adapter"]
    kinds = [e.kind for e in led.entries()]
    assert kinds == ["open", "commit", "observe", "observe", "observe", "reveal"]
    assert led.verify() == []


def test_a_prediction_without_an_adapter_cannot_ask(make: Callable[..., Ledger]) -> None:
    led = make()
    p = led.client("piper").commit("dusk", "q", {"a": 1.0})
    with pytest.raises(LedgerStateError, match="via="):
        p.ask()
    assert led.prediction(p.id).observed == []


def test_observations_need_provenance_and_come_before_the_deadline(
    make: Callable[..., Ledger], clock: FakeClock
) -> None:
    led = make(timeout=60)
    p = led.client("piper").commit("dusk", "q", {"a": 1.0})
    before = len(led.entries())
    for bad in ({}, {"by": "predictor", "request": "r"}, {"by": "operator"}, "operator"):
        with pytest.raises(InputError) as info:
            led.observe(p.id, "a", bad)  # type: ignore[arg-type]
        assert info.value.where == "provenance"
    led.observe(p.id, "a", OP)
    clock.advance(61)
    with pytest.raises(LedgerStateError, match="deadline") as late:
        led.observe(p.id, "a", OP)
    assert late.value.state == "expired"
    assert len(led.entries()) == before + 1
    assert led.verify() == []


def test_observe_and_reveal_are_refused_out_of_order(make: Callable[..., Ledger]) -> None:
    led = make()
    with pytest.raises(NotFoundError, match="pnope"):
        led.observe("pnope", "x", OP)
    p = led.client("piper").commit("dusk", "q", {"x": 1.0})
    n = len(led.entries())
    with pytest.raises(LedgerStateError, match="no answer"):
        p.reveal()  # nothing observed yet: refused, and nothing recorded
    assert len(led.entries()) == n
    p.record("x", OP)
    p.reveal()
    with pytest.raises(LedgerStateError, match="refused after the reveal"):
        led.observe(p.id, "y", OP)
    with pytest.raises(LedgerStateError, match="already scored"):
        led.reveal(p.id, p.body, p.salt)
    with pytest.raises(InputError, match="answer"):
        led.observe(p.id, 7, OP)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="commitment"):
        led.commit("piper", "dusk", "q", "sha256:nothex")
    with pytest.raises(LedgerStateError, match="already recorded"):
        led.commit("piper", "dusk", "q", p.commitment)
    assert led.verify() == []


def test_a_reveal_that_does_not_match_is_rejected_recorded_and_counted(
    make: Callable[..., Ledger],
) -> None:
    led = make()
    c = led.client("piper")
    p = c.commit("dusk", "q", {"x": 0.9, "y": 0.1})
    p.record("x", OP)
    # a better-looking prediction after the fact, or the right one with a wrong salt
    result = led.reveal(p.id, {**p.body, "distribution": {"x": 1.0}}, p.salt)
    assert result.status == "rejected" and "do not hash" in (result.reason or "")
    assert result.scores["penalty"] is True
    assert led.entries()[-1].kind == "reject"
    with pytest.raises(LedgerStateError, match="already rejected"):
        led.reveal(p.id, p.body, p.salt)  # no second try
    q = c.commit("dusk", "q2", {"x": 1.0})
    q.record("x", OP)
    assert led.reveal(q.id, q.body, os.urandom(32)).status == "rejected"
    summary = led.summary("piper")
    assert summary["states"] == {"rejected": 2}
    assert summary["penalised"] == 2
    assert summary["top1_accuracy"]["value"] == 0.0
    assert summary["log_score"]["value"] == pytest.approx(penalty_log_score(1))
    assert led.verify() == []


def test_late_reveals_expire_and_the_client_says_so(
    make: Callable[..., Ledger], clock: FakeClock
) -> None:
    led = make(timeout=60)
    p = led.client("piper").commit("dusk", "q", {"x": 1.0})
    p.record("x", OP)
    clock.advance(61)
    with pytest.raises(RevealRejected, match="expired"):
        p.reveal()
    assert p.result is not None and p.result.status == "expired"
    assert led.entries()[-1].kind == "expire"
    assert led.verify() == []


def test_nobody_improves_an_aggregate_by_not_revealing(
    make: Callable[..., Ledger], clock: FakeClock
) -> None:
    """Three predictors make the same bad prediction (all mass on the wrong answer). One
    reveals it, one withholds the reveal, one reveals a better one it never committed: the
    last two never score better than the first, on any aggregate."""
    led = make(timeout=60)
    for who in ("honest", "withholder", "liar"):
        c = led.client(who)
        for i in range(3):
            p = c.commit("dusk", f"q{i}", {"wrong": 1.0})
            p.record("right", OP)
            p.record("right", OP)
            if who == "honest":
                p.reveal()
            elif who == "liar":
                led.reveal(
                    p.id, {**p.body, "distribution": {"right": 1.0}, "top1": "right"}, p.salt
                )
    clock.advance(61)
    # before any expire entry exists, overdue predictions already count as expired
    before = led.summary("withholder")
    assert before["states"] == {"expired": 3}
    assert led.expire_overdue() and led.expire_overdue() == []
    after = led.summary("withholder")
    assert after["log_score"] == before["log_score"]
    honest = led.summary("honest")
    for who in ("withholder", "liar"):
        other = led.summary(who)
        assert other["log_score"]["value"] <= honest["log_score"]["value"]
        assert other["brier"]["value"] >= honest["brier"]["value"]
        assert other["top1_accuracy"]["value"] <= honest["top1_accuracy"]["value"]
        assert other["ece"]["value"] >= honest["ece"]["value"]
        assert other["n"] == honest["n"] == 3
    assert led.verify() == []


def test_block_without_an_answer_leaves_the_commit_to_expire(make: Callable[..., Ledger]) -> None:
    led = make()
    c = led.client("piper")
    with (
        pytest.raises(LedgerStateError, match="no answer was recorded"),
        c.predict("dusk", "q", {"x": 1.0}) as p,
    ):
        pass
    assert led.prediction(p.id).state == "committed"
    # an error in the block after an answer was recorded still reveals and scores
    with pytest.raises(RuntimeError), c.predict("dusk", "q", {"x": 1.0}) as p2:
        p2.record("x", OP)
        raise RuntimeError("the caller failed afterwards")
    assert led.prediction(p2.id).state == "scored"


def test_summary_skill_uses_population_projection_and_retest(make: Callable[..., Ledger]) -> None:
    led = make()
    piper = led.client("piper")
    # another target answers the same queries: the population-modal baseline
    for i in range(4):
        with led.client("other").predict("wren", f"q{i}", {"b": 1.0}) as p:
            p.record("b", OP)
    for i in range(4):
        with piper.predict("dusk", f"q{i}", {"a": 0.8, "b": 0.2}, own_answer="b") as p:
            for answer in ("a", "a", "b") if i < 3 else ("b", "b", "b"):
                p.record(answer, OP)
    skill = led.summary("piper", "dusk")["skill"]
    # acc = 3/4 ; population "b" and projection "b" both match 1 of 4 → base 1/4 ;
    # ceiling: three queries at 1/3 and one at 1 → 1/2 ; S = (3/4 − 1/4) / (1/2 − 1/4) = 2
    assert skill["base"] == pytest.approx(0.25)
    assert skill["ceiling"]["value"] == pytest.approx(0.5)
    assert skill["value"] == pytest.approx(2.0)


def test_agent_keys_sign_commits(make: Callable[..., Ledger]) -> None:
    led = make()
    agent_key = Ed25519PrivateKey.from_private_bytes(b"\x09" * 32)
    plain = led.client("piper")
    with pytest.raises(AgentSignatureError, match="register"):
        led.commit("piper", "dusk", "q", "sha256:" + "0" * 64, agent_signature="00" * 64)
    signed = led.client("piper", agent_key=agent_key)
    signed.register_key()
    with pytest.raises(AgentSignatureError, match="missing"):
        plain.commit("dusk", "q", {"x": 1.0})
    impostor = led.client("piper", agent_key=Ed25519PrivateKey.from_private_bytes(b"\x0a" * 32))
    with pytest.raises(AgentSignatureError, match="does not verify"):
        impostor.commit("dusk", "q", {"x": 1.0})
    with signed.predict("dusk", "q", {"x": 1.0}) as p:
        p.record("x", OP)
    assert led.prediction(p.id).agent_signed
    assert led.verify(full=True) == []


def test_export_verifies_offline_and_catches_changes(
    make: Callable[..., Ledger], tmp_path: Path
) -> None:
    led = make()
    c = led.client("piper")
    for i in range(3):
        with c.predict("dusk", f"q{i}", {"x": 0.5, "y": 0.5}) as p:
            p.record("x", OP)
    out = tmp_path / "ledger.jsonl"
    assert led.export(out) == 10
    pub_file = tmp_path / "service.pub"
    pub_file.write_text(led.public_key_hex + "\n")
    assert verify_export(out, led.public_key_hex).ok
    assert verify_export(out, str(pub_file), full=True).ok
    lines = out.read_text().splitlines()

    def check(new_lines: list[str], seq: int, problem: str, key: str = led.public_key_hex) -> None:
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(new_lines) + "\n")
        v = verify_export(bad, key)
        assert not v.ok and v.failures[0].seq == seq, [str(f) for f in v.failures]
        assert problem in {f.problem for f in v.first_bad()}

    check(lines[:-1], 11, "entry-missing")  # trailer removed
    check([*lines[:-2], lines[-1]], 10, "entry-missing")  # last entry removed, trailer kept
    changed = json.loads(lines[3])
    changed["payload"]["answer"] = "y"
    check([*lines[:3], json.dumps(changed), *lines[4:]], 4, "content-changed")
    trailer = json.loads(lines[-1])
    trailer["signature"] = "00" * 64
    check([*lines[:-1], json.dumps(trailer)], 11, "signature-invalid")
    other = public_key_hex(Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
    check(lines, 1, "signature-invalid", key=other)


def test_service_key_is_owner_only_created_once_and_checked(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = load_or_create_service_key(home)
    path = home / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert (home / PUBLIC_KEY_FILE).read_text().strip() == public_key_hex(key)
    assert public_key_hex(load_or_create_service_key(home)) == public_key_hex(key)
    path.chmod(0o644)
    with pytest.raises(LedgerKeyError, match="chmod 600"):
        load_or_create_service_key(home)
    path.chmod(0o600)
    # a ledger opened with one key refuses another
    led = open_ledger(home, f"sqlite:///{home / 'mindledger.db'}")
    with led.client("piper").predict("dusk", "q", {"x": 1.0}) as p:
        p.record("x", OP)
    stranger = Ledger(led.engine, Ed25519PrivateKey.from_private_bytes(b"\x02" * 32))
    with pytest.raises(LedgerKeyError, match="opened with public key"):
        stranger.client("piper").commit("dusk", "q", {"x": 1.0})
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_an_emptied_ledger_is_not_silently_restarted(make: Callable[..., Ledger]) -> None:
    led = make()
    led.client("piper").commit("dusk", "q", {"x": 1.0})
    with led.engine.begin() as conn:
        if conn.dialect.name == "sqlite":
            conn.execute(sa.text("DROP TRIGGER ledger_entries_no_delete"))
        else:
            conn.execute(sa.text("DROP TRIGGER ledger_entries_no_change ON ledger_entries"))
        conn.execute(sa.text("DELETE FROM ledger_entries"))
    with pytest.raises(LedgerIntegrityError, match="empty"):
        make().client("piper").commit("dusk", "q", {"x": 1.0})
    assert led.verify()[0].problem == "entry-missing"


def test_a_call_whose_prediction_closed_meanwhile_is_recorded_unanswered(
    make: Callable[..., Ledger], clock: FakeClock
) -> None:
    """The proxy checked the prediction before forwarding; if it closes (its deadline) or is
    used before the target answers, the call is recorded but the answer is not observed."""
    from ledger.protocol import query_hash, query_messages, response_hash

    led = make(timeout=60)
    p = led.client("piper").commit("dusk", "q", {"a": 1.0})
    qh = query_hash(query_messages("q"))
    clock.advance(61)
    entries = led.record_call(
        "piper", "dusk", request="r1", query_hash=qh, status=200, prediction=p.id, answer="a",
        response=response_hash("{}"),
    )  # fmt: skip
    assert [e.kind for e in entries] == ["call"]
    assert entries[0].payload["answered"] is False
    assert led.prediction(p.id).observed == []
    # a prediction about another query is refused outright, nothing recorded
    q = led.client("piper").commit("dusk", "other", {"a": 1.0})
    before = len(led.entries())
    with pytest.raises(LedgerStateError, match="query"):
        led.record_call(
            "piper", "dusk", request="r2", query_hash=qh, status=200, prediction=q.id,
            answer="a", response=response_hash("{}"),
        )  # fmt: skip
    assert len(led.entries()) == before
    assert led.verify() == []
