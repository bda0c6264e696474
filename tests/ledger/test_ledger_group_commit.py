"""Group commit and one answer recorded against several predictions: entries from concurrent
threads share transactions yet stay one verifying chain; a refused request in a group adds
nothing and leaves the others' entries; observe_many is all or nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ledger import open_ledger
from ledger._commit_reveal import check_taking_answers
from ledger.client import record_answer, record_answers
from ledger.errors import LedgerStateError
from ledger.predictions import Ledger
from ledger.protocol import provenance
from mindledger.errors import InputError, NotFoundError

OP = provenance("operator", "test-request")


def _ledger(tmp_path: Path) -> Ledger:
    return open_ledger(tmp_path / "home", f"sqlite:///{tmp_path / 'l.db'}")


def _count_groups(led: Ledger) -> list[int]:
    """From now on, the number of requests in each of ``led``'s transactions."""
    groups: list[int] = []
    real = led.writer.append_group

    def counted(builds):  # type: ignore[no-untyped-def]
        groups.append(len(builds))
        return real(builds)

    led.writer.append_group = counted  # type: ignore[method-assign]
    return groups


def test_concurrent_threads_share_transactions_and_leave_one_chain(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    groups = _count_groups(led)
    start = threading.Barrier(8)

    def writer(me: int) -> None:
        client = led.client(f"agent{me}")
        start.wait()
        for i in range(5):
            with client.predict("target", f"q{me}-{i}", {"a": 0.7, "b": 0.3}) as p:
                p.record("a", OP)

    threads = [threading.Thread(target=writer, args=(me,)) for me in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert led.count("commit") == led.count("observe") == led.count("reveal") == 40
    assert sum(groups) == 3 * 40 and len(groups) < 3 * 40  # some transactions were shared
    assert [e.seq for e in led.entries()] == list(range(1, 122))
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_a_refused_request_in_a_group_adds_nothing(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    p = led.client("a").commit("t", "q", {"x": 1.0})

    def observe(pid: str):  # type: ignore[no-untyped-def]
        def build(cur, now):  # type: ignore[no-untyped-def]
            check_taking_answers(cur, [pid], now)
            return [("observe", pid, {"answer": "x", "provenance": OP})], None

        return build

    results = led.writer.append_group([observe(p.id), observe("sha256:" + "0" * 64), observe(p.id)])
    assert isinstance(results[1], NotFoundError)
    first, third = results[0], results[2]
    assert not isinstance(first, BaseException) and not isinstance(third, BaseException)
    assert [e.seq for e in first[0]] == [3] and [e.seq for e in third[0]] == [4]
    assert led.prediction(p.id).observed == ["x", "x"]
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_one_answer_against_every_prediction_of_a_target(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    preds = [led.client(n).predict("t", "q", {"x": 0.6, "y": 0.4}) for n in ("a", "b", "c")]
    record_answer(preds, "x", OP)  # commits first, then one observe entry per prediction
    record_answer(preds, "y", OP)
    entries = led.entries()
    assert [e.kind for e in entries] == ["open", *["commit"] * 3, *["observe"] * 6]
    assert [e.subject for e in entries[4:7]] == [p.id for p in preds]
    assert all(p.answers == ["x", "y"] for p in preds)
    assert all(led.prediction(p.id).observed == ["x", "y"] for p in preds)
    preds[0].reveal()
    # all or nothing: one prediction revealed refuses the answer for every one
    with pytest.raises(LedgerStateError, match="refused after the reveal"):
        record_answer(preds, "x", OP)
    assert led.count("observe") == 6 and preds[1].answers == ["x", "y"]
    with pytest.raises(NotFoundError):
        led.observe_many([preds[1].id, "sha256:" + "1" * 64], "x", OP)
    assert led.count("observe") == 6
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_several_answers_against_every_prediction_in_one_transaction(tmp_path: Path) -> None:
    led = _ledger(tmp_path)
    preds = [led.client(n).predict("t", "q", {"x": 0.6, "y": 0.4}) for n in ("a", "b")]
    for p in preds:
        p.commit()
    groups = _count_groups(led)
    sources = [provenance("matrix", f"req-{k}", target="t") for k in range(3)]
    record_answers(preds, list(zip(["x", "y", "x"], sources, strict=True)))
    assert groups == [1]  # one request, one transaction
    observed = [e for e in led.entries() if e.kind == "observe"]
    # answer-major: each answer against every prediction, in the order given
    assert [(e.subject, e.payload["answer"]) for e in observed] == [
        (preds[0].id, "x"), (preds[1].id, "x"), (preds[0].id, "y"), (preds[1].id, "y"),
        (preds[0].id, "x"), (preds[1].id, "x"),
    ]
    assert [e.payload["provenance"]["request"] for e in observed[::2]] == [
        "req-0", "req-1", "req-2"]
    assert all(p.answers == ["x", "y", "x"] for p in preds)
    assert all(led.prediction(p.id).observed == ["x", "y", "x"] for p in preds)
    # a malformed pair or provenance is refused before anything is written
    with pytest.raises(InputError, match=r"answers\[1\]"):
        led.observe_answers([preds[0].id], [("x", OP), "y"])  # type: ignore[list-item]
    with pytest.raises(InputError, match="provenance"):
        led.observe_answers([preds[0].id], [("x", OP), ("y", {"by": "nobody"})])
    # all or nothing: a revealed prediction refuses every answer for every prediction
    preds[0].reveal()
    with pytest.raises(LedgerStateError, match="refused after the reveal"):
        record_answers(preds, [("y", OP), ("y", OP)])
    assert led.count("observe") == 6 and preds[1].answers == ["x", "y", "x"]
    assert led.verify() == []
    led.close()
    led.engine.dispose()
