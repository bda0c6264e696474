"""Witnessed heads, end to end: two daemons on 127.0.0.1, one the other's witness. The log's
daemon sends each head it signs; the witness cosigns it after checking the consistency proof.
Then the log's owner (who holds its key and disk) truncates, wipes, re-keys or re-signs the
ledger and deletes the local witness data, the heads file and the kept cosignatures: plain
``ledger verify`` passes, ``ledger verify --witness URL`` fails. An honest ledger that grew
passes."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.config.settings import load_settings
from harness.daemon import BackgroundServer, build_daemon
from ledger.cosign import CosignedHead
from ledger.db import open_engine
from ledger.keys import KEY_FILE, PUBLIC_KEY_FILE, load_or_create_service_key, public_key_hex
from ledger.predictions import Ledger
from ledger.protocol import provenance
from ledger.tree import TreeHead
from tests.cli import run_main

LOG = "lab.example/piper"
OP = provenance("operator", "test-request")


@dataclass
class Pair:
    """A witness daemon (serving) and a log's data directory that it witnesses."""

    witness_url: str
    witness_home: Path
    witness_config: Path
    witness_key: str
    log_home: Path
    log_config: Path
    capsys: pytest.CaptureFixture[str]

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.log_home / 'mindledger.db'}"

    def log_cli(self, *args: str) -> tuple[int, str, str]:
        return _cli(self.capsys, self.log_config, self.log_home, *args)

    def witness_cli(self, *args: str) -> tuple[int, str, str]:
        return _cli(self.capsys, self.witness_config, self.witness_home, *args)

    def cosigned(self) -> CosignedHead | None:
        r = httpx.get(f"{self.witness_url}/witness/heads", params={"log": LOG}, timeout=10)
        return CosignedHead.from_dict(r.json()) if r.status_code == 200 else None

    def ledger(self, key: Ed25519PrivateKey | None = None) -> Ledger:
        """The log's ledger as its owner opens it in-process (witness dir and heads file in
        the data directory, as the service has them)."""
        return Ledger(
            open_engine(self.db_url),
            key or load_or_create_service_key(self.log_home),
            witness_dir=self.log_home / "ledger-witness",
            heads_file=self.log_home / "ledger-heads.jsonl",
        )


def _cli(
    capsys: pytest.CaptureFixture[str], config: Path, home: Path, *args: str
) -> tuple[int, str, str]:
    """``mindledger --config CONFIG ARGS`` in data directory ``home`` (over MINDLEDGER_HOME)."""
    return run_main(capsys, "--config", str(config), "-o", f"home={home}", *args)


def _config(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def pair(tmp_path: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Pair]:
    whome, lhome = tmp_path / "witness", tmp_path / "log"
    wcfg = _config(tmp_path / "witness.toml", f'home = "{whome}"\napi_rate_limit = 100000\n')
    settings = load_settings(wcfg, env={})
    daemon = build_daemon(settings, scheduler=False)
    try:
        with BackgroundServer(daemon.app) as server:
            code, out, _ = _cli(capsys, wcfg, whome, "witness", "key")
            assert code == 0
            wkey = json.loads(out)["public_key"]
            load_or_create_service_key(lhome)
            # the witness's operator registers the log's key (a .pub file here)
            code, out, err = _cli(
                capsys, wcfg, whome, "witness", "add-log", LOG, str(lhome / PUBLIC_KEY_FILE)
            )
            assert code == 0, err
            assert json.loads(out)["registered"] == "new"
            lcfg = _config(
                tmp_path / "log.toml",
                f'home = "{lhome}"\nhead_interval = 0.05\n\n[[witnesses]]\n'
                f'url = "{server.url}"\nkey = "{wkey}"\nlog = "{LOG}"\n',
            )
            yield Pair(server.url, whome, wcfg, wkey, lhome, lcfg, capsys)
    finally:
        daemon.close()


def _grow(led: Ledger, n: int, tag: str = "") -> None:
    c = led.client("piper")
    for i in range(n):
        p = c.commit("dusk", f"q{tag}{i}", {"7": 0.5, "3": 0.5})
        led.observe(p.id, "7", OP)
        p.reveal()


def _wait_cosigned(pair: Pair, size: int) -> CosignedHead:
    """The witness's latest cosigned head once it reaches ``size`` (the log's daemon signs and
    sends a head every 50 ms); fails if it never does."""
    deadline = time.monotonic() + 30
    while True:
        latest = pair.cosigned()
        if latest is not None and latest.tree_head.size >= size:
            return latest
        assert time.monotonic() < deadline, f"the witness never cosigned {size} entries"
        time.sleep(0.05)


def _witnessed_log(pair: Pair) -> CosignedHead:
    """Run the log's daemon while its ledger grows twice; the witness cosigns as it grows."""
    settings = load_settings(pair.log_config, env={})
    daemon = build_daemon(settings, scheduler=False)
    try:
        with BackgroundServer(daemon.app):
            _grow(daemon.ledger, 3)  # 1 open entry + 3 × 3
            first = _wait_cosigned(pair, 10)
            assert first.tree_head.size == 10
            _grow(daemon.ledger, 2, "b")
            latest = _wait_cosigned(pair, 16)
    finally:
        daemon.close()
    assert latest.tree_head.size == 16 and latest.tree_head.ledger == first.tree_head.ledger
    assert latest.problems(pair.witness_key, LOG) == []
    # the log kept the cosignatures it got
    kept = (pair.log_home / "ledger-cosignatures.jsonl").read_text().splitlines()
    assert {
        json.loads(line)["cosigned_head"]["tree_head"]["tree_head"]["size"] for line in kept
    } >= {
        10,
        16,
    }
    return latest


def _clean(home: Path) -> None:
    """What the attacker deletes: every local record of earlier heads."""
    shutil.rmtree(home / "ledger-witness", ignore_errors=True)
    for name in ("ledger-heads.jsonl", "ledger-cosignatures.jsonl"):
        (home / name).unlink(missing_ok=True)


def _sql(url: str, *statements: str) -> None:
    engine = open_engine(url)
    with engine.begin() as conn:
        for table in ("ledger_entries", "ledger_tree"):
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_update"))
            conn.execute(sa.text(f"DROP TRIGGER IF EXISTS {table}_no_delete"))
        for s in statements:
            conn.execute(sa.text(s))
    engine.dispose()


def _rebuild_tree(url: str) -> None:
    """Rebuild the Merkle tree from the entries left, as the migration that made it does."""
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    from ledger.migrations import m0005_ledger_tree

    engine = open_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE ledger_tree"))
        m0005_ledger_tree(Operations(MigrationContext.configure(conn)))
    engine.dispose()


def attack_truncate(pair: Pair) -> None:
    """Cut the last entries off, with the tree nodes that cover them."""
    _sql(
        pair.db_url,
        "DELETE FROM ledger_entries WHERE seq > 11",
        "DELETE FROM ledger_tree WHERE ((idx + 1) << level) > 11",
    )


def attack_wipe(pair: Pair) -> None:
    """Delete every entry and open a new ledger in the same database."""
    _sql(pair.db_url, "DELETE FROM ledger_entries", "DELETE FROM ledger_tree")
    _clean(pair.log_home)
    led = pair.ledger()
    _grow(led, 6, "new")
    led.close()
    led.engine.dispose()


def attack_rekey(pair: Pair) -> None:
    """Write the history the owner prefers under a key of their own, and install that key."""
    _sql(pair.db_url, "DELETE FROM ledger_entries", "DELETE FROM ledger_tree")
    _clean(pair.log_home)
    evil = Ed25519PrivateKey.from_private_bytes(b"\x66" * 32)
    from cryptography.hazmat.primitives import serialization

    pem = evil.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (pair.log_home / KEY_FILE).write_bytes(pem)
    (pair.log_home / PUBLIC_KEY_FILE).write_text(public_key_hex(evil) + "\n")
    led = pair.ledger(evil)
    _grow(led, 6, "evil")
    led.close()
    led.engine.dispose()


def attack_resign(pair: Pair) -> None:
    """Keep entries 1-4, rewrite everything after them, re-signed with the real key, and
    grow past the size the witness cosigned."""
    _sql(pair.db_url, "DELETE FROM ledger_entries WHERE seq > 4")
    _rebuild_tree(pair.db_url)
    _clean(pair.log_home)
    led = pair.ledger()
    _grow(led, 6, "rewritten")
    led.close()
    led.engine.dispose()


ATTACKS: list[tuple[Callable[[Pair], None], str]] = [
    (attack_truncate, "entries 12 to 16 are missing"),
    (attack_wipe, "it was replaced"),
    (attack_rekey, "it was replaced"),
    (attack_resign, "history was rewritten"),
]


@pytest.mark.parametrize(("attack", "says"), ATTACKS, ids=[a.__name__[7:] for a, _ in ATTACKS])
def test_an_attack_with_the_local_witness_data_deleted_fails_verify_against_the_witness(
    pair: Pair, attack: Callable[[Pair], None], says: str
) -> None:
    _witnessed_log(pair)
    code, _, err = pair.log_cli("ledger", "verify", "--witness", pair.witness_url)
    assert code == 0, err  # before the attack
    attack(pair)
    _clean(pair.log_home)
    code, out, err = pair.log_cli("ledger", "verify")
    assert code == 0, err  # on its own, the ledger verifies: nothing local remembers
    code, out, err = pair.log_cli("ledger", "verify", "--witness", pair.witness_url + "/")
    assert code == 1, out + err
    assert err.startswith("FAILED: first bad entry is"), err
    assert f"the head witness {pair.witness_url} cosigned for log {LOG!r}" in err
    assert says in err, err
    # the same with the witness's exported head, offline
    code, out, _ = pair.witness_cli("witness", "head", LOG)
    assert code == 0
    exported = pair.log_home.parent / "cosigned.json"
    exported.write_text(out)
    code, _, err = pair.log_cli("ledger", "verify", "--witness-head", str(exported))
    assert code == 1 and says in err, err


def test_an_honest_ledger_that_grew_passes_against_the_witness(pair: Pair) -> None:
    cosigned = _witnessed_log(pair)
    led = pair.ledger()
    _grow(led, 4, "later")  # grown since the witness last cosigned
    led.close()
    led.engine.dispose()
    _clean(pair.log_home)
    code, out, err = pair.log_cli("ledger", "verify", "--witness", pair.witness_url)
    assert code == 0, err
    assert f"consistent with the head of {cosigned.tree_head.time} (16 entries)" in err
    assert "28 entries" in out
    # a witness's key that is not the one configured: the cosignature is refused
    code, _, err = pair.log_cli(
        "ledger", "verify", "--witness", pair.witness_url, "--witness-key", "ab" * 32
    )
    assert code == 1 and "not the witness's" in err, err
    # `ledger head` sends the grown head; the witness cosigns it, from its last size (16)
    code, out, err = pair.log_cli("ledger", "head")
    assert code == 0 and f"cosigned by witness {pair.witness_url} (28 entries)" in err, err
    assert pair.cosigned() is not None and pair.cosigned().tree_head.size == 28  # type: ignore[union-attr]


def test_a_witness_that_is_down_is_a_warning_and_gets_the_next_head(
    pair: Pair, tmp_path: Path
) -> None:
    led = pair.ledger()
    _grow(led, 1)
    led.close()
    led.engine.dispose()
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{sock.getsockname()[1]}"
    cfg = pair.log_config.read_text().replace(pair.witness_url, down)
    pair.log_config.write_text(cfg)
    code, out, err = pair.log_cli("ledger", "head")
    assert code == 0, err
    assert TreeHead.from_dict(json.loads(out)).size == 4
    assert f"warning: witness {down} did not cosign the head: could not reach it" in err
    assert pair.cosigned() is None
    code, _, err = pair.log_cli("ledger", "verify", "--witness", down)
    assert code == 1 and f"FAILED: could not reach witness {down}" in err, err
    # back up: the next head goes to it, and it cosigns it
    pair.log_config.write_text(cfg.replace(down, pair.witness_url))
    led = pair.ledger()
    _grow(led, 1, "b")
    led.close()
    led.engine.dispose()
    code, _, err = pair.log_cli("ledger", "head")
    assert code == 0 and "cosigned by witness" in err, err
    assert pair.cosigned() is not None and pair.cosigned().tree_head.size == 7  # type: ignore[union-attr]


def test_the_witness_refuses_unregistered_logs_bad_signatures_and_inconsistent_heads(
    pair: Pair,
) -> None:
    led = pair.ledger()
    _grow(led, 2)
    head = led.tree_head(publish=False)
    assert head is not None
    url = f"{pair.witness_url}/witness/cosign"

    def post(**body: object) -> httpx.Response:
        sent = {"log": LOG, "old": 0, "proof": [], "tree_head": head.to_dict(), **body}
        return httpx.post(url, json=sent, timeout=10)

    # a log nobody registered: 404, nothing recorded
    r = post(log="lab.example/stranger")
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_log"
    # a head signed by another key than the registered one: 403
    other = sign_with(Ed25519PrivateKey.generate(), head)
    r = post(tree_head=other.to_dict())
    assert r.status_code == 403 and r.json()["error"]["code"] == "bad_signature"
    assert pair.cosigned() is None
    # the first head is cosigned; the answer verifies with the witness's key
    r = post()
    assert r.status_code == 200, r.text
    assert CosignedHead.from_dict(r.json()).problems(pair.witness_key, LOG) == []
    # another root at the same size, signed with the log's real key: 409
    forged = sign_with(load_or_create_service_key(pair.log_home), head, root="sha256:" + "11" * 32)
    r = post(old=head.size, tree_head=forged.to_dict())
    assert r.status_code == 409 and r.json()["error"]["code"] == "inconsistent", r.text
    # a stale old size: 409 saying the size the witness cosigned
    _grow(led, 1, "b")
    later = led.tree_head(publish=False)
    assert later is not None
    r = post(old=0, tree_head=later.to_dict())
    assert r.status_code == 409 and r.json()["size"] == head.size
    # a smaller tree than the one cosigned: 409
    r2 = post(old=head.size, tree_head=later.to_dict(),
              proof=led.consistency_proof(head.size, later.size)["proof"])  # fmt: skip
    assert r2.status_code == 200, r2.text
    r = post(old=later.size, tree_head=head.to_dict())
    assert r.status_code == 409 and r.json()["error"]["code"] == "smaller_tree"
    assert pair.cosigned().tree_head == later  # type: ignore[union-attr]
    # malformed and oversized bodies: 400 and 413
    assert post(old=-1).status_code == 400
    assert post(proof="x").status_code == 400
    assert httpx.post(url, content=b"{" * 70_000, timeout=10).status_code == 413
    led.close()
    led.engine.dispose()


def sign_with(key: Ed25519PrivateKey, head: TreeHead, root: str | None = None) -> TreeHead:
    from ledger.tree import digest_bytes, sign_tree_head

    return sign_tree_head(
        key,
        ledger=head.ledger,
        size=head.size,
        root=digest_bytes(root or head.root),
        head=head.head,
        time=head.time,
    )


def test_witnesses_are_declared_in_the_settings_file(tmp_path: Path) -> None:
    from harness.config.witness_config import WitnessConfig
    from mindledger.errors import ConfigError

    key = "ab" * 32
    good = f'[[witnesses]]\nurl = "https://w.example:8765/"\nkey = "{key.upper()}"\nlog = "{LOG}"\n'
    settings = load_settings(_config(tmp_path / "a.toml", good), env={})
    assert settings.witnesses == (WitnessConfig("https://w.example:8765", key, LOG),)
    assert settings.public_dict()["witnesses"] == [
        {"url": "https://w.example:8765", "key": key, "log": LOG}
    ]
    assert load_settings(None, env={}).witnesses == ()
    bad = {
        'witnesses = ["http://w.example"]': "witnesses[0]",
        f'[[witnesses]]\nurl = "ftp://w"\nkey = "{key}"\nlog = "a"': "witnesses[0].url",
        f'[[witnesses]]\nurl = "http://u:p@w"\nkey = "{key}"\nlog = "a"': "witnesses[0].url",
        '[[witnesses]]\nurl = "http://w"\nkey = "abc"\nlog = "a"': "witnesses[0].key",
        f'[[witnesses]]\nurl = "http://w"\nkey = "{key}"\nlog = "a b"': "witnesses[0].log",
        f'[[witnesses]]\nurl = "http://w"\nkey = "{key}"': "witnesses[0].log",
        f'[[witnesses]]\nurl = "http://w"\nkey = "{key}"\nlog = "a"\nname = "x"': "witnesses[0].name",
        f'[[witnesses]]\nurl = "http://w"\nkey = "{key}"\nlog = "a"\n'
        f'[[witnesses]]\nurl = "http://w/"\nkey = "{key}"\nlog = "b"': "witnesses[1].url",
    }
    for text, where in bad.items():
        with pytest.raises(ConfigError) as caught:
            load_settings(_config(tmp_path / "b.toml", text + "\n"), env={})
        assert caught.value.key == where, (text, caught.value.key, str(caught.value))
