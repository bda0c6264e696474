"""Cosigned tree heads: the documented vector (docs/ledger.md), and the witness's record, which
cosigns only a registered log's heads, each only if it extends the last one it cosigned."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.cosign import (
    CosignedHead,
    WitnessRefusal,
    WitnessStore,
    check_log_name,
    cosign,
    cosigned_message,
)
from ledger.keys import public_key_hex
from ledger.merkle import leaf_hash, reference_proof, reference_root
from ledger.tree import TreeHead, digest_text, sign_tree_head
from mindledger.errors import InputError

# the vector of docs/ledger.md: the tree head of the two vector entries there (its log key's
# seed is 0x00…0x1f), cosigned by the witness key whose seed is 0x20…0x3f
LOG_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
WITNESS_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32, 64)))
WITNESS_PUBLIC = "29acbae141bccaf0b22e1a94d34d0bc7361e526d0bfe12c89794bc9322966dd7"
OPEN_HASH = "sha256:79e0f5f599f162840590cb9cdff9de4cfa24e44312d23471e652f17db68349a8"
COMMIT_HASH = "sha256:caf4965e0073af9504e13661e41ce1ba2a072b57bd479a449f294ae4d8714e69"
TREE_ROOT = "sha256:8a68bd58560aa38ca6c936d9e7f0da59e50aac39007872a404bdb590795850a7"
T = "2026-01-01T00:00:00.000000+00:00"
LOG = "lab.example/piper"
TIME = 1767225600  # 2026-01-01T00:00:00Z
SIGNED = (
    b"cosignature/v1\n"
    b"time 1767225600\n"
    b"lab.example/piper\n"
    b"2\n"
    b"imi9WFYKo4ymyTbZ5/DaWeUKrDkAeHKkBL21kHlYUKc=\n"
)
COSIGNATURE = (
    "da03f93e65708cbe30009a070bf95cb6cefeb51614c62d37ad73892957fffa15"
    "c3391ee38ed04f5af8fe18c3369b510817e2b53128966001a8ed2e1f31e86604"
)
NOTE_LINE = (
    "\u2014 witness.example/w1 IDJKvgAAAABpVbkA2gP5PmVwjL4wAJoHC/lcts7+tRYUxi03rXOJKVf/+hXDOR7j"
    "jtBPWvj+GMM2m1EIF+K1MSiWYAGo7S4fMehmBA==\n"
)


def vector_head() -> TreeHead:
    leaves = [leaf_hash(bytes.fromhex(h[7:])) for h in (OPEN_HASH, COMMIT_HASH)]
    return sign_tree_head(
        LOG_KEY, ledger=OPEN_HASH, size=2, root=reference_root(leaves), head=COMMIT_HASH, time=T
    )


def test_the_cosignature_vector() -> None:
    head = vector_head()
    assert head.root == TREE_ROOT
    assert public_key_hex(WITNESS_KEY) == WITNESS_PUBLIC
    # the signed bytes: C2SP tlog-cosignature/v1 over the checkpoint body (base64 root)
    assert base64.b64decode("imi9WFYKo4ymyTbZ5/DaWeUKrDkAeHKkBL21kHlYUKc=").hex() == TREE_ROOT[7:]
    assert cosigned_message(LOG, 2, TREE_ROOT, TIME) == SIGNED
    c = cosign(WITNESS_KEY, LOG, head, TIME)
    assert (c.key, c.time, c.signature) == (WITNESS_PUBLIC, TIME, COSIGNATURE)
    WITNESS_KEY.public_key().verify(bytes.fromhex(COSIGNATURE), SIGNED)  # raises if not
    # the same signature as a C2SP note signature line: key ID ‖ 8-byte time ‖ signature
    assert c.note_line("witness.example/w1") == NOTE_LINE
    blob = base64.b64decode(NOTE_LINE.split()[-1])
    key_id = hashlib.sha256(b"witness.example/w1\n\x04" + bytes.fromhex(WITNESS_PUBLIC)).digest()
    assert blob[:4] == key_id[:4] and blob[4:12] == TIME.to_bytes(8, "big")
    assert blob[12:].hex() == COSIGNATURE
    # the cosigned head's JSON round-trips and verifies with the witness's key only
    cosigned = CosignedHead(LOG, head, c)
    again = CosignedHead.from_dict(json.loads(json.dumps(cosigned.to_dict())))
    assert again == cosigned and again.problems(WITNESS_PUBLIC, LOG) == []
    assert again.problems(public_key_hex(LOG_KEY), LOG) != []
    assert again.problems(WITNESS_PUBLIC, "lab.example/other") != []
    for forged in (
        {**cosigned.to_dict(), "log": "lab.example/other"},
        {**cosigned.to_dict(), "cosignature": {**c.to_dict(), "time": TIME + 1}},
        {**cosigned.to_dict(), "tree_head": {**head.to_dict(), "signature": "00" * 64}},
    ):
        assert CosignedHead.from_dict(forged).problems(WITNESS_PUBLIC) != [], forged


def test_log_names_are_checkpoint_origins() -> None:
    for good in ("lab.example/piper", "a", "x:1/y_z+w-v"):
        assert check_log_name(good) == good
    for bad in ("", " a", "a b", "a\nb", "/a", "a" * 201, "é"):
        with pytest.raises(InputError):
            check_log_name(bad)


# -- the witness's record ------------------------------------------------------------------------


class Log:
    """A log of ``n`` made-up entries, whose signed heads and proofs come from the RFC's
    reference definitions (not from the code under test)."""

    def __init__(self, key: Ed25519PrivateKey = LOG_KEY, salt: bytes = b""):
        self.key = key
        self.salt = salt

    def leaves(self, n: int) -> list[bytes]:
        return [leaf_hash(hashlib.sha256(self.salt + b"%d" % i).digest()) for i in range(n)]

    def head(self, n: int) -> TreeHead:
        root = reference_root(self.leaves(n))
        ledger = "sha256:" + hashlib.sha256(self.salt + b"0").hexdigest()
        return sign_tree_head(self.key, ledger=ledger, size=n, root=root, head=None, time=T)

    def proof(self, old: int, new: int) -> list[str]:
        return [digest_text(h) for h in reference_proof(old, self.leaves(new))]


def _refused(code: str, call: object) -> WitnessRefusal:
    assert isinstance(call, WitnessRefusal), call
    assert call.code == code, (call.code, str(call))
    return call


def _try(store: WitnessStore, head: TreeHead, old: int, proof: list[str]) -> object:
    try:
        return store.cosign(LOG, head, old, proof, key=WITNESS_KEY, time=TIME)
    except WitnessRefusal as exc:
        return exc


def test_a_witness_cosigns_only_heads_that_extend_the_last(tmp_path: Path) -> None:
    store = WitnessStore(tmp_path / "witness-logs")
    log = Log()
    # nobody registered the log: refused, nothing written
    _refused("unknown_log", _try(store, log.head(3), 0, []))
    assert store.logs() == []
    store.add_log(LOG, public_key_hex(LOG_KEY), now=T)
    # signed by another key, or not validly signed: refused
    _refused("bad_signature", _try(store, Log(Ed25519PrivateKey.generate()).head(3), 0, []))
    bad = log.head(3)
    _refused(
        "bad_signature", _try(store, TreeHead(**{**bad.__dict__, "signature": "00" * 64}), 0, [])
    )
    # the first head: from size 0, no proof
    first = _try(store, log.head(3), 0, [])
    assert isinstance(first, CosignedHead) and first.problems(WITNESS_PUBLIC, LOG) == []
    # grows with a consistency proof from the size it cosigned last
    _refused("old_size_mismatch", _try(store, log.head(7), 0, log.proof(0, 7)))
    assert _refused("old_size_mismatch", _try(store, log.head(7), 2, log.proof(2, 7))).size == 3
    _refused("inconsistent", _try(store, log.head(7), 3, log.proof(2, 7)))  # a wrong proof
    grown = _try(store, log.head(7), 3, log.proof(3, 7))
    assert isinstance(grown, CosignedHead) and grown.tree_head.size == 7
    # never a smaller tree, another root at the same size, or a rewritten history
    assert _refused("smaller_tree", _try(store, log.head(5), 3, log.proof(3, 5))).size == 7
    forked = Log(salt=b"fork")
    _refused("inconsistent", _try(store, forked.head(7), 7, []))
    _refused("inconsistent", _try(store, forked.head(9), 7, forked.proof(7, 9)))
    # the same head again is cosigned again (a retry), and a later one still grows from 7
    assert isinstance(_try(store, log.head(7), 7, []), CosignedHead)
    assert isinstance(_try(store, log.head(12), 7, log.proof(7, 12)), CosignedHead)
    # the record survives a restart (a new store over the same directory)
    again = WitnessStore(tmp_path / "witness-logs").record(LOG)
    assert again is not None and again.cosigned is not None
    assert again.cosigned.tree_head == log.head(12)
    # registering the log's new key keeps its history: a head under the new key must still
    # extend it
    new_key = Ed25519PrivateKey.generate()
    _, created = store.add_log(LOG, public_key_hex(new_key), now=T)
    assert not created
    rekeyed = Log(new_key)
    _refused("bad_signature", _try(store, log.head(13), 12, log.proof(12, 13)))
    assert isinstance(_try(store, rekeyed.head(13), 12, rekeyed.proof(12, 13)), CosignedHead)


def test_proof_hashes_are_checked_before_anything_is_read(tmp_path: Path) -> None:
    store = WitnessStore(tmp_path)
    store.add_log(LOG, public_key_hex(LOG_KEY), now=T)
    _refused("bad_request", _try(store, Log().head(3), 0, ["sha256:zz"]))
    _refused("bad_request", _try(store, Log().head(3), 0, ["sha256:" + "00" * 32] * 65))
    _refused("bad_request", _try(store, Log().head(3), 4, []))


def test_docs_give_the_vector_checked_here() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "ledger.md").read_text(encoding="utf-8")
    signed = SIGNED.decode().replace("\n", "\\n")
    assert f"signed      {signed}\n" in docs
    assert f"signature   {COSIGNATURE}\n" in docs
    assert f"note line   {NOTE_LINE}" in docs
    assert WITNESS_PUBLIC in docs and str(TIME) in docs
