"""Tampering with a stored ledger through SQL, on SQLite and PostgreSQL: verify names the first
bad entry and what is wrong, every time; an untouched ledger verifies; the service refuses to
build on a tampered head or a cut-off tail."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy.engine import Engine

from ledger.chain import Entry, entry_hash
from ledger.db import open_engine
from ledger.errors import LedgerIntegrityError, LedgerKeyError
from ledger.predictions import Ledger
from ledger.protocol import provenance
from ledger.scoring import score_prediction
from mindledger.canonical import canonical_json

OP = provenance("operator", "test-request")
"""An operator's provenance for answers the tests record by hand."""

KEY = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)


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


def build(led: Ledger) -> dict[str, str]:
    """Fourteen entries: scored, rejected, observed, scored and open predictions."""
    c = led.client("piper")
    p1 = c.commit("dusk", "q1", {"7": 0.6, "3": 0.4})  # 2 (1 is the open entry)
    led.observe(p1.id, "7", OP)  # 3
    led.observe(p1.id, "3", OP)  # 4
    p1.reveal()  # 5
    p2 = c.commit("dusk", "q2", {"a": 0.5, "b": 0.5})  # 6
    led.observe(p2.id, "a", OP)  # 7
    assert led.reveal(p2.id, {**p2.body, "top1": "b"}, p2.salt).status == "rejected"  # 8
    p3 = c.commit("wren", "q1", {"7": 1.0})  # 9
    led.observe(p3.id, "3", OP)  # 10
    p4 = c.commit("dusk", "q3", {"x": 0.9, "y": 0.1})  # 11
    led.observe(p4.id, "x", OP)  # 12
    p4.reveal()  # 13
    p5 = c.commit("dusk", "q4", {"x": 1.0})  # 14
    assert led.verify() == []
    assert led.verify(full=True) == []
    return {"p1": p1.id, "p2": p2.id, "p3": p3.id, "p4": p4.id, "p5": p5.id}


def unguard(conn: sa.Connection) -> None:
    """Drop the append-only triggers, as someone with the rights to would before tampering."""
    for table in ("ledger_entries", "ledger_tree"):
        if conn.dialect.name == "sqlite":
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_update"))
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
        else:
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_change ON {table}"))
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}"))


def sql(engine: Engine, *statements: str, **params: object) -> None:
    with engine.begin() as conn:
        unguard(conn)
        for s in statements:
            conn.execute(sa.text(s), params)


def row(led: Ledger, seq: int) -> Entry:
    return next(e for e in led.entries() if e.seq == seq)


def insert(engine: Engine, e: Entry) -> None:
    sql(
        engine,
        "INSERT INTO ledger_entries (seq, subject, kind, payload_json, time, prev_hash, "
        "prev_signature, hash, signature) VALUES (:seq, :subject, :kind, :payload_json, :time, "
        ":prev_hash, :prev_signature, :hash, :signature)",
        seq=e.seq,
        subject=e.subject,
        kind=e.kind,
        payload_json=e.payload_json,
        time=e.time,
        prev_hash=e.prev_hash,
        prev_signature=e.prev_signature,
        hash=e.hash,
        signature=e.signature,
    )


def forged(
    seq: int, prev: Entry, kind: str, subject: str, payload: object, sig: str, time: str = ""
) -> Entry:
    """An entry as someone without the key would write it: a correct hash, a stolen signature."""
    e = Entry(
        seq,
        subject,
        kind,
        canonical_json(payload).decode(),
        time or prev.time,
        prev.hash,
        prev.signature,
        "",
        sig,
    )
    return Entry(
        seq,
        subject,
        kind,
        e.payload_json,
        e.time,
        e.prev_hash,
        e.prev_signature,
        entry_hash(e),
        sig,
    )


def t_change_content(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, 'UPDATE ledger_entries SET payload_json = \'{"answer":"3"}\' WHERE seq = 3')


def t_change_time(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "UPDATE ledger_entries SET time = '2025-01-01T00:00:00+00:00' WHERE seq = 7")


def t_move_observation(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "UPDATE ledger_entries SET subject = :s WHERE seq = 10", s=ids["p1"])


def t_change_kind(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "UPDATE ledger_entries SET kind = 'reveal' WHERE seq = 8")


def t_change_hash(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "UPDATE ledger_entries SET hash = :h WHERE seq = 9", h="sha256:" + "ab" * 32)


def t_change_key_of_open(led: Ledger, ids: dict[str, str]) -> None:
    e = row(led, 1)
    payload = {**json.loads(e.payload_json), "public_key": "11" * 32}
    sql(
        led.engine,
        "UPDATE ledger_entries SET payload_json = :p WHERE seq = 1",
        p=canonical_json(payload).decode(),
    )


def t_change_prev_link(led: Ledger, ids: dict[str, str]) -> None:
    sql(
        led.engine,
        "UPDATE ledger_entries SET prev_signature = :s WHERE seq = 11",
        s=row(led, 3).signature,
    )


def t_swap_payloads(led: Ledger, ids: dict[str, str]) -> None:
    """Exchange the answers recorded by two observations."""
    a, b = row(led, 3).payload_json, row(led, 4).payload_json
    sql(
        led.engine,
        "UPDATE ledger_entries SET payload_json = :p WHERE seq = 3",
        "UPDATE ledger_entries SET payload_json = :q WHERE seq = 4",
        p=b,
        q=a,
    )


def t_delete(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "DELETE FROM ledger_entries WHERE seq = 7")


def t_delete_and_renumber(led: Ledger, ids: dict[str, str]) -> None:
    sql(
        led.engine,
        "DELETE FROM ledger_entries WHERE seq = 7",
        "UPDATE ledger_entries SET seq = -seq WHERE seq > 7",
        "UPDATE ledger_entries SET seq = -seq - 1 WHERE seq < 0",
    )


def _swap(led: Ledger, a: int, b: int) -> None:
    sql(
        led.engine,
        "UPDATE ledger_entries SET seq = -1 WHERE seq = :a",
        "UPDATE ledger_entries SET seq = :a WHERE seq = :b",
        "UPDATE ledger_entries SET seq = :b WHERE seq = -1",
        a=a,
        b=b,
    )


def t_swap_neighbours(led: Ledger, ids: dict[str, str]) -> None:
    _swap(led, 3, 4)


def t_swap_far(led: Ledger, ids: dict[str, str]) -> None:
    _swap(led, 6, 11)


def _flip(sig: str) -> str:
    return ("0" if sig[0] != "0" else "1") + sig[1:]


def t_corrupt_signature(led: Ledger, ids: dict[str, str]) -> None:
    sql(
        led.engine,
        "UPDATE ledger_entries SET signature = :s WHERE seq = 6",
        s=_flip(row(led, 6).signature),
    )


def t_borrow_signature(led: Ledger, ids: dict[str, str]) -> None:
    sql(
        led.engine,
        "UPDATE ledger_entries SET signature = :s WHERE seq = 6",
        s=row(led, 5).signature,
    )


def t_corrupt_head_signature(led: Ledger, ids: dict[str, str]) -> None:
    sql(
        led.engine,
        "UPDATE ledger_entries SET signature = :s WHERE seq = 14",
        s=_flip(row(led, 14).signature),
    )


def t_forge_reveal(led: Ledger, ids: dict[str, str]) -> None:
    """Rewrite p1's reveal to a better distribution, with a correct (re-derived) hash."""
    e = row(led, 5)
    payload = json.loads(e.payload_json)
    payload["revealed"]["distribution"] = {"7": 0.5, "3": 0.5}
    payload["scores"] = score_prediction({"7": 0.5, "3": 0.5}, "7", ["7", "3"])
    new = forged(5, row(led, 4), "reveal", e.subject, payload, e.signature, e.time)
    sql(
        led.engine,
        "UPDATE ledger_entries SET payload_json = :p, hash = :h WHERE seq = 5",
        p=new.payload_json,
        h=new.hash,
    )


def t_forge_reveal_at_end(led: Ledger, ids: dict[str, str]) -> None:
    """Reveal p3 (still open) by appending an entry nobody signed."""
    e9 = json.loads(row(led, 9).payload_json)
    revealed = {
        "v": 1,
        "predictor": "piper",
        "target": "wren",
        "query": "q1",
        "item": None,
        "condition": None,
        "distribution": {"3": 1.0},
        "top1": "3",
        "rationale": None,
        "own_answer": None,
    }
    payload = {
        "revealed": revealed,
        "salt": "00" * 32,
        "scores": score_prediction({"3": 1.0}, "3", ["3"]),
    }
    assert e9["commitment"]
    insert(
        led.engine, forged(15, row(led, 14), "reveal", ids["p3"], payload, row(led, 14).signature)
    )


def t_insert_forged_at_end(led: Ledger, ids: dict[str, str]) -> None:
    insert(led.engine, forged(15, row(led, 14), "observe", ids["p5"], {"answer": "x"}, "00" * 64))


def t_insert_forged_in_middle(led: Ledger, ids: dict[str, str]) -> None:
    e6, e7 = row(led, 6), row(led, 7)
    fake = forged(7, e6, "observe", ids["p2"], {"answer": "b"}, e7.signature)
    sql(
        led.engine,
        "UPDATE ledger_entries SET seq = -seq WHERE seq >= 7",
        "UPDATE ledger_entries SET seq = -seq + 1 WHERE seq < 0",
        "UPDATE ledger_entries SET prev_hash = :h, prev_signature = :s WHERE seq = 8",
        h=fake.hash,
        s=fake.signature,
    )
    insert(led.engine, fake)


def t_truncate_tail(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "DELETE FROM ledger_entries WHERE seq > 12")


def t_truncate_everything(led: Ledger, ids: dict[str, str]) -> None:
    sql(led.engine, "DELETE FROM ledger_entries")


CASES: list[tuple[Callable[[Ledger, dict[str, str]], None], int, str]] = [
    (t_change_content, 3, "content-changed"),
    (t_change_time, 7, "content-changed"),
    (t_move_observation, 10, "content-changed"),
    (t_change_kind, 8, "content-changed"),
    (t_change_hash, 9, "content-changed"),
    (t_change_key_of_open, 1, "content-changed"),
    (t_change_prev_link, 11, "content-changed"),
    (t_swap_payloads, 3, "content-changed"),
    (t_delete, 7, "entry-missing"),
    (t_delete_and_renumber, 7, "entry-missing"),
    (t_swap_neighbours, 3, "order-changed"),
    (t_swap_far, 6, "order-changed"),
    (t_corrupt_signature, 6, "signature-invalid"),
    (t_borrow_signature, 6, "signature-invalid"),
    (t_corrupt_head_signature, 14, "signature-invalid"),
    (t_forge_reveal, 5, "reveal-mismatch"),
    (t_forge_reveal_at_end, 15, "reveal-mismatch"),
    (t_insert_forged_at_end, 15, "signature-invalid"),
    (t_insert_forged_in_middle, 7, "signature-invalid"),
    (t_truncate_tail, 13, "entry-missing"),
    (t_truncate_everything, 1, "entry-missing"),
]


@pytest.mark.parametrize(
    ("tamper", "first_bad", "problem"), CASES, ids=[c[0].__name__[2:] for c in CASES]
)
def test_verify_names_the_first_bad_entry(
    ledger: Ledger,
    tamper: Callable[[Ledger, dict[str, str]], None],
    first_bad: int,
    problem: str,
) -> None:
    ids = build(ledger)
    tamper(ledger, ids)
    for full in (False, True):
        v = ledger.verification(full=full)
        assert not v.ok
        first = v.first_bad()
        assert first[0].seq == first_bad, [str(f) for f in v.failures]
        assert problem in {f.problem for f in first}, [str(f) for f in first]
        assert str(first_bad) in v.summary()


def test_the_database_refuses_updates_and_deletes(ledger: Ledger) -> None:
    build(ledger)
    statements = [
        "UPDATE ledger_entries SET kind = 'x' WHERE seq = 3",
        "DELETE FROM ledger_entries WHERE seq = 14",
    ]
    if ledger.engine.dialect.name == "postgresql":
        statements.append("TRUNCATE ledger_entries")
    for statement in statements:
        with (
            pytest.raises(sa.exc.DatabaseError, match="append-only"),
            ledger.engine.begin() as conn,
        ):
            conn.execute(sa.text(statement))
    assert ledger.verify() == []


def test_untouched_ledger_verifies_and_reports(ledger: Ledger) -> None:
    build(ledger)
    v = ledger.verification()
    assert v.ok and v.entries == 14 and v.head_seq == 14
    assert v.states == {"scored": 2, "rejected": 1, "observed": 1, "committed": 1}
    assert v.summary().startswith("ok: 14 entries")


@pytest.mark.parametrize(
    "tamper",
    [t_truncate_tail, t_corrupt_head_signature, t_insert_forged_at_end, t_truncate_everything],
)
def test_service_refuses_to_build_on_a_tampered_head(
    ledger: Ledger, tamper: Callable[[Ledger, dict[str, str]], None]
) -> None:
    ids = build(ledger)
    tamper(ledger, ids)
    # a fresh service process (nothing cached) must notice too
    fresh = Ledger(ledger.engine, KEY, clock=FakeClock(), witness_dir=ledger.witness.directory)  # type: ignore[union-attr]
    for led in (ledger, fresh):
        with pytest.raises(LedgerIntegrityError):
            led.client("piper").commit("dusk", "after", {"a": 1.0})
    fresh.close()


def test_without_a_witness_a_cut_tail_is_invisible_but_an_export_catches_it(
    db_url: str, tmp_path: Path
) -> None:
    """Honest limit: the database alone cannot show that its last entries were deleted by
    someone who also deletes their Merkle tree nodes; the head witness (default), a saved tree
    head or an earlier export can."""
    engine = open_engine(db_url)
    led = Ledger(engine, KEY, clock=FakeClock(), witness_dir=None)
    build(led)
    led.export(tmp_path / "before.jsonl")
    t_truncate_tail(led, {})
    # the tree still records entry 13: the cut shows
    problems = led.verify()
    assert [(f.seq, f.problem) for f in problems] == [(13, "entry-missing")]
    # ... unless its leaves are cut too (the nodes covering entries 13 and 14 only)
    sql(led.engine, "DELETE FROM ledger_tree WHERE (level = 0 AND idx >= 12) OR "
        "(level = 1 AND idx >= 6)")
    assert led.verify() == []  # a shorter chain is still a valid chain
    from ledger.predictions import verify_export

    # the old export still verifies and proves entries 13 and 14 existed
    assert verify_export(tmp_path / "before.jsonl", led.public_key_hex).ok
    led.export(tmp_path / "after.jsonl")
    head = json.loads((tmp_path / "before.jsonl").read_text().splitlines()[-1])["trailer"]
    assert head["head_seq"] == 14
    assert (
        json.loads((tmp_path / "after.jsonl").read_text().splitlines()[-1])["trailer"]["head_seq"]
        == 12
    )
    engine.dispose()


# -- a tree head saved before the attack: the transparency-log guarantee -------------------------


def _bare(engine: Engine, key: Ed25519PrivateKey = KEY) -> Ledger:
    """A ledger with no witness and no heads file: only a head kept elsewhere protects it."""
    return Ledger(engine, key, clock=FakeClock(), witness_dir=None)


@pytest.mark.parametrize(
    ("tamper", "first_bad", "problem"), CASES, ids=[c[0].__name__[2:] for c in CASES]
)
def test_a_head_saved_before_catches_every_tamper(
    db_url: str,
    tamper: Callable[[Ledger, dict[str, str]], None],
    first_bad: int,
    problem: str,
) -> None:
    engine = open_engine(db_url)
    led = _bare(engine)
    ids = build(led)
    saved = led.tree_head(publish=False)
    assert saved is not None and saved.size == 14 and saved.signature_ok()
    assert led.verify(heads=[(saved, "the saved head")]) == []
    tamper(led, ids)
    v = _bare(engine).verification(heads=[(saved, "the saved head")])
    assert not v.ok, problem
    engine.dispose()


def _attack_replace_everything(
    engine: Engine, home: Path, key: Ed25519PrivateKey, url: str
) -> None:
    """Delete every entry and tree node, clean the data directory, and open a new ledger
    through a differently spelled URL of the same database."""
    sql(engine, "DELETE FROM ledger_entries", "DELETE FROM ledger_tree")
    for path in (home / "witness").glob("*.json"):
        path.unlink()
    (home / "heads.jsonl").unlink(missing_ok=True)
    other = open_engine(url)
    led = Ledger(other, key, clock=FakeClock(), witness_dir=home / "witness",
                 heads_file=home / "heads.jsonl")
    led.client("piper").commit("dusk", "q1", {"7": 1.0})
    led.close()
    other.dispose()


def _respelled(url: str) -> str:
    if url.startswith("sqlite:///"):
        return "sqlite:///" + str(Path(url.removeprefix("sqlite:///")).parent / "." / "test.db")
    return url.replace("postgresql://", "postgres://", 1)


def test_deleting_everything_and_opening_a_new_ledger_is_caught(
    db_url: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    engine = open_engine(db_url)
    led = Ledger(engine, KEY, clock=FakeClock(), witness_dir=home / "witness",
                 heads_file=home / "heads.jsonl")
    build(led)
    saved = led.tree_head()
    assert saved is not None
    led.close()
    # the witness alone catches it while the data directory keeps it ...
    sql(engine, "DELETE FROM ledger_entries", "DELETE FROM ledger_tree")
    other = open_engine(_respelled(db_url))
    fresh = Ledger(other, KEY, clock=FakeClock(), witness_dir=home / "witness",
                   heads_file=home / "heads.jsonl")
    with pytest.raises(LedgerIntegrityError, match="empty"):
        fresh.client("piper").commit("dusk", "q1", {"7": 1.0})
    fresh.close()
    other.dispose()
    # ... and a head kept elsewhere catches it when the attacker cleans the directory too
    _attack_replace_everything(engine, home, KEY, _respelled(db_url))
    after = Ledger(engine, KEY, clock=FakeClock(), witness_dir=home / "witness",
                   heads_file=home / "heads.jsonl")
    assert after.verify() == []  # on its own, the new ledger is a valid ledger
    v = after.verification(heads=[(saved, "the saved head")])
    assert [f.problem for f in v.first_bad()] == ["ledger-replaced"]
    assert "replaced" in v.summary()
    after.close()
    engine.dispose()


def test_rewriting_the_chain_under_a_new_key_is_caught(db_url: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    engine = open_engine(db_url)
    led = Ledger(engine, KEY, clock=FakeClock(), witness_dir=home / "witness",
                 heads_file=home / "heads.jsonl")
    build(led)
    saved = led.tree_head()
    assert saved is not None
    led.close()
    # the attacker makes a key of their own and writes the history they prefer under it
    evil = Ed25519PrivateKey.from_private_bytes(b"\x66" * 32)
    sql(engine, "DELETE FROM ledger_entries", "DELETE FROM ledger_tree")
    forged = Ledger(engine, evil, clock=FakeClock(), witness_dir=None)
    c = forged.client("piper")
    p1 = c.commit("dusk", "q1", {"7": 0.6, "3": 0.4})
    forged.observe(p1.id, "7", OP)
    p1.reveal()
    assert forged.verify() == []
    forged.close()
    # with the witness still in the data directory, verification says so
    v = Ledger(engine, evil, clock=FakeClock(), witness_dir=home / "witness").verification()
    assert "ledger-replaced" in {f.problem for f in v.failures}
    # with the directory cleaned, a head saved elsewhere does
    for path in (home / "witness").glob("*.json"):
        path.unlink()
    (home / "heads.jsonl").unlink()
    clean = Ledger(engine, evil, clock=FakeClock(), witness_dir=home / "witness")
    assert clean.verify() == []
    v = clean.verification(heads=[(saved, "the saved head")])
    assert [f.problem for f in v.first_bad()] == ["ledger-replaced"]
    clean.close()
    engine.dispose()


def test_rewriting_history_with_the_same_key_is_caught_by_an_earlier_head(
    db_url: str, tmp_path: Path
) -> None:
    """Whoever holds the key and the disk can re-sign a rewritten suffix; a head kept
    elsewhere still proves the first entries it covers were different."""
    engine = open_engine(db_url)
    led = _bare(engine)
    build(led)
    saved = led.tree_head(publish=False)
    assert saved is not None
    # keep entries 1-4, rewrite everything after as the attacker likes, re-signed
    sql(engine, "DELETE FROM ledger_entries WHERE seq > 4", "DELETE FROM ledger_tree")
    from ledger.migrations import m0005_ledger_tree  # the tree, rebuilt from the entries left

    with engine.begin() as conn:
        from alembic.operations import Operations
        from alembic.runtime.migration import MigrationContext

        conn.execute(sa.text("DROP TABLE ledger_tree"))
        m0005_ledger_tree(Operations(MigrationContext.configure(conn)))
    rewritten = _bare(engine)
    p = rewritten.client("piper").commit("dusk", "q2", {"a": 1.0})
    rewritten.observe(p.id, "a", OP)
    p.reveal()
    assert rewritten.verify() == []  # a valid chain, signed with the real key
    v = rewritten.verification(heads=[(saved, "the saved head")])
    assert not v.ok
    assert {f.problem for f in v.failures} & {"content-changed", "entry-missing"}
    engine.dispose()


def test_a_key_change_is_an_entry_signed_by_the_old_key(db_url: str, tmp_path: Path) -> None:
    from ledger.keys import KEY_FILE, load_private_key, rotate_service_key
    from ledger.predictions import verify_export

    home = tmp_path / "home"
    (home / "keys").mkdir(parents=True, mode=0o700)
    engine = open_engine(db_url)
    led = Ledger(engine, KEY, clock=FakeClock(), witness_dir=home / "witness",
                 heads_file=home / "heads.jsonl")
    build(led)
    before = led.tree_head()
    old_hex = led.public_key_hex
    new_hex = rotate_service_key(home, led.rotate_key)
    assert led.public_key_hex == new_hex != old_hex
    new_key = load_private_key(home / KEY_FILE)
    # the service goes on with the new key; a fresh process with it too
    p = led.client("piper").commit("dusk", "q9", {"a": 1.0})
    fresh = Ledger(engine, new_key, clock=FakeClock(), witness_dir=home / "witness",
                   heads_file=home / "heads.jsonl")
    fresh.observe(p.id, "a", OP)
    after = fresh.tree_head()
    assert after is not None and after.public_key == new_hex
    for full in (False, True):
        v = fresh.verification(full=full, heads=[(before, "the head before")])  # type: ignore[list-item]
        assert v.ok, [str(f) for f in v.failures]
        assert v.keys == [old_hex, new_hex]
    # an export verifies with either key the ledger has had
    fresh.export(tmp_path / "x.jsonl")
    for key in (old_hex, new_hex):
        assert verify_export(tmp_path / "x.jsonl", key).ok
    # a key swapped by any other means: refused on append, loud on verify
    swapped = Ed25519PrivateKey.from_private_bytes(b"\x42" * 32)
    rogue = Ledger(engine, swapped, clock=FakeClock(), witness_dir=home / "witness")
    with pytest.raises(LedgerKeyError, match="rotate-key"):
        rogue.client("piper").commit("dusk", "q10", {"a": 1.0})
    assert "ledger-replaced" in {f.problem for f in rogue.verify()}
    # and the old key can no longer append either
    stale = Ledger(engine, KEY, clock=FakeClock(), witness_dir=home / "witness")
    with pytest.raises(LedgerKeyError):
        stale.client("piper").commit("dusk", "q11", {"a": 1.0})
    for x in (led, fresh, rogue, stale):
        x.close()
    engine.dispose()


def test_a_forged_key_change_fails_verification(db_url: str) -> None:
    """A key entry must carry the new key's proof of possession and be signed by the old key:
    one added by someone without the old key (signed by the new one) is caught."""
    engine = open_engine(db_url)
    led = _bare(engine)
    build(led)
    evil = Ed25519PrivateKey.from_private_bytes(b"\x66" * 32)
    head = row(led, 14)
    from ledger.chain import key_change_message, make_entry
    from ledger.keys import KEY_TAG, public_key_hex, sign

    lid = row(led, 1).hash
    payload = {
        "previous": led.public_key_hex,
        "public_key": public_key_hex(evil),
        "possession": sign(evil, KEY_TAG, key_change_message(
            lid, head.hash, led.public_key_hex, public_key_hex(evil))),
    }
    e = make_entry(evil, seq=15, prev_hash=head.hash, prev_signature=head.signature,
                   time="2026-01-02T00:00:00.000000+00:00", kind="key", subject="ledger",
                   payload=payload)
    insert(engine, e)
    v = _bare(engine, evil).verification()
    assert not v.ok and v.first_bad()[0].seq == 15
    assert "signature-invalid" in {f.problem for f in v.first_bad()}
    engine.dispose()


@pytest.mark.parametrize(
    ("statement", "seq"),
    [
        ("UPDATE ledger_tree SET hash = :h WHERE level = 1 AND idx = 2", 6),
        ("UPDATE ledger_tree SET hash = :h WHERE level = 0 AND idx = 9", 10),
        ("DELETE FROM ledger_tree WHERE level = 1 AND idx = 4", 10),
        ("INSERT INTO ledger_tree (level, idx, hash) VALUES (5, 0, :h)", 32),
    ],
)
def test_a_changed_tree_node_is_caught_by_the_full_check(
    ledger: Ledger, statement: str, seq: int
) -> None:
    """An interior node outside the root's own nodes changes no root, but every proof through
    it; --full re-derives every stored node."""
    build(ledger)
    sql(ledger.engine, statement, h="ab" * 32)
    v = ledger.verification(full=True)
    assert not v.ok
    assert (seq, "content-changed") in {(f.seq, f.problem) for f in v.failures}, [
        str(f) for f in v.failures
    ]
