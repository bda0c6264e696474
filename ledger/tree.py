"""Signed tree heads and the heads file: the ledger audited like a transparency log (RFC 6962).

Leaf ``i`` of the ledger's Merkle tree (:mod:`ledger.merkle`) is entry ``i + 1``; its leaf data
is the 32 raw bytes of the entry's hash (the SHA-256 of its canonical form), so
``leaf_hash = SHA-256(0x00 || entry hash)``.

**A signed tree head** (a contract, vectors in ``docs/ledger.md``) is the JSON object ::

    {"tree_head": {"ledger": …, "size": n, "root": "sha256:…", "head": "sha256:…",
                   "time": "…", "public_key": "…", "v": 1},
     "signature": "…"}

``ledger`` is the ledger's id (the hash of entry 1), ``root`` the Merkle root of entries
1…n, ``head`` the hash of entry n, ``public_key`` the service key that signed it, and
``signature`` that key's Ed25519 signature over ``mindledger-tree-head/1:`` + the canonical JSON
of the ``tree_head`` object. Whoever keeps a head can later ask for a consistency proof that the
ledger now extends it — even someone holding the service's key and disk cannot rewrite what a
kept head covers without that proof failing.

**The heads file** (``<data dir>/ledger-heads.jsonl``) receives every head the service signs,
one per line, in order: an operator ships it off the machine (a cron job, a log shipper), and
``mindledger ledger verify`` checks every head in it against the ledger.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.chain import Failure, Verification
from ledger.db import private_dir
from ledger.errors import LedgerKeyError
from ledger.keys import TREE_HEAD_TAG, parse_public_key, public_key_hex, sign, verify_signature
from ledger.protocol import is_digest
from mindledger.canonical import canonical_json
from mindledger.errors import InputError
from mindledger.jsonin import parse_json, read_json_file

__all__ = [
    "HEADS_FILE",
    "HeadsFile",
    "TreeHead",
    "check_head",
    "check_proof",
    "digest_bytes",
    "digest_text",
    "sign_tree_head",
]

HEADS_FILE = "ledger-heads.jsonl"
"""The heads file, relative to the data directory."""
TREE_HEAD_VERSION = 1


def digest_bytes(digest: str) -> bytes:
    """The 32 raw bytes of a ``sha256:<hex>`` digest."""
    return bytes.fromhex(digest[7:])


def digest_text(raw: bytes) -> str:
    """``sha256:<hex>`` of 32 raw bytes."""
    return "sha256:" + raw.hex()


@dataclass(frozen=True)
class TreeHead:
    """A signed tree head (see the module docstring)."""

    ledger: str
    size: int
    root: str
    head: str | None
    time: str
    public_key: str
    signature: str

    def body(self) -> dict[str, Any]:
        """The signed object."""
        return {
            "ledger": self.ledger,
            "size": self.size,
            "root": self.root,
            "head": self.head,
            "time": self.time,
            "public_key": self.public_key,
            "v": TREE_HEAD_VERSION,
        }

    def to_dict(self) -> dict[str, Any]:
        return {"tree_head": self.body(), "signature": self.signature}

    def signature_ok(self) -> bool:
        """Whether ``signature`` is ``public_key``'s signature over the head."""
        try:
            pub = parse_public_key(self.public_key)
        except LedgerKeyError:
            return False
        return verify_signature(pub, TREE_HEAD_TAG, canonical_json(self.body()), self.signature)

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "tree head") -> TreeHead:
        """Read a head back, checking its form (InputError naming the field)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("tree_head"), Mapping):
            raise InputError('expected {"tree_head": {…}, "signature": …}', where=where)
        body = data["tree_head"]
        size = body.get("size")
        if type(size) is not int or size < 0:
            raise InputError("expected a size ≥ 0", where=f"{where}.size")
        for key in ("ledger", "root"):
            if not is_digest(body.get(key)):
                raise InputError("expected sha256: and 64 hex digits", where=f"{where}.{key}")
        head = body.get("head")
        if head is not None and not is_digest(head):
            raise InputError("expected sha256: and 64 hex digits", where=f"{where}.head")
        for key in ("time", "public_key"):
            if not isinstance(body.get(key), str):
                raise InputError("expected a string", where=f"{where}.{key}")
        if body.get("v") != TREE_HEAD_VERSION:
            raise InputError(f"expected version {TREE_HEAD_VERSION}", where=f"{where}.v")
        if not isinstance(data.get("signature"), str):
            raise InputError("expected the signature as hex", where=f"{where}.signature")
        return cls(
            ledger=body["ledger"],
            size=size,
            root=body["root"],
            head=head,
            time=body["time"],
            public_key=body["public_key"],
            signature=data["signature"],
        )

    @classmethod
    def load(cls, path: Path) -> TreeHead:
        """A head saved in a file (``mindledger ledger head > head.json``)."""
        return cls.from_dict(read_json_file(path), where=str(path))


def check_head(result: Verification, head: TreeHead, source: str) -> list[Failure]:
    """What a saved tree head says is wrong with a verified ledger: the head is not validly
    signed; it is of another ledger (the ledger was emptied and started again, or rewritten
    from entry 1); it was signed by a key this ledger never had (rewritten under a new key);
    the ledger is shorter than it (entries cut off); or the ledger's first ``head.size``
    entries no longer have its root (history rewritten). ``result`` must carry the root at
    ``head.size`` (``verify_entries(…, sizes=…)``)."""
    what = f"{source} (entry {head.size}, signed {head.time})"
    if not head.signature_ok():
        return [Failure(1, "invalid-entry", f"{what} is not validly signed by its key")]
    if result.ledger_id != head.ledger:
        now = "is empty" if result.ledger_id is None else f"is {result.ledger_id}"
        return [
            Failure(
                1,
                "ledger-replaced",
                f"{what} is of ledger {head.ledger}, but the ledger here {now}: it was "
                "replaced (emptied and started again, or rewritten from its first entry)",
            )
        ]
    if head.public_key not in result.keys:
        return [
            Failure(
                1,
                "ledger-replaced",
                f"{what} was signed by key {head.public_key}, which this ledger never had: it "
                "was rewritten under a new key",
            )
        ]
    if head.size > result.head_seq:
        first = result.head_seq + 1
        return [
            Failure(
                first,
                "entry-missing",
                f"entries {first} to {head.size} are missing: {what} covered them",
            )
        ]
    if head.size and result.roots.get(head.size) != digest_bytes(head.root):
        return [
            Failure(
                head.size,
                "content-changed",
                f"{what} has Merkle root {head.root} over entries 1 to {head.size}; they no "
                "longer hash to it: history was rewritten",
            )
        ]
    return []


def check_proof(bundle: Any, public_key: str | None = None) -> list[str]:
    """What is wrong with an inclusion-proof bundle (``mindledger ledger prove``): the signed
    tree head, and for each entry its content, its hash, and its audit path to the head's
    root. With ``public_key`` the head must be signed by that key. Empty when it proves every
    entry it lists is in the ledger the head describes."""
    from ledger.chain import Entry, entry_hash
    from ledger.merkle import leaf_hash, verify_inclusion

    try:
        head = TreeHead.from_dict(bundle.get("tree_head") if isinstance(bundle, dict) else None)
    except InputError as exc:
        return [str(exc)]
    problems = []
    if not head.signature_ok():
        problems.append("the tree head's signature does not verify")
    if public_key is not None and head.public_key != public_key:
        problems.append(f"the tree head was signed by {head.public_key}, not {public_key}")
    proofs = bundle.get("proofs")
    if not isinstance(proofs, list) or not proofs:
        return [*problems, "the bundle proves no entries"]
    for n, item in enumerate(proofs):
        try:
            e = Entry.from_export(item["entry"])
            path = [digest_bytes(h) for h in item["proof"]]
            if entry_hash(e) != e.hash:
                problems.append(f"entry {e.seq}: its content does not hash to {e.hash}")
                continue
            if not verify_inclusion(
                leaf_hash(digest_bytes(e.hash)), e.seq - 1, head.size, path,
                digest_bytes(head.root),
            ):
                problems.append(f"entry {e.seq}: its audit path does not lead to the root")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"proof {n + 1} is malformed: {exc!r}")
    return problems


def sign_tree_head(
    key: Ed25519PrivateKey, *, ledger: str, size: int, root: bytes, head: str | None, time: str
) -> TreeHead:
    """Sign a tree head with ``key``."""
    unsigned = TreeHead(ledger, size, digest_text(root), head, time, public_key_hex(key), "")
    signature = sign(key, TREE_HEAD_TAG, canonical_json(unsigned.body()))
    return TreeHead(ledger, size, unsigned.root, head, time, unsigned.public_key, signature)


class HeadsFile:
    """The append-only file of every head the service signed (one canonical JSON line each).
    Appends take an exclusive ``flock`` and are fsynced: a head that was handed out is on
    disk."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def append(self, head: TreeHead) -> None:
        private_dir(self.path.parent)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, canonical_json(head.to_dict()) + b"\n")
            os.fsync(fd)
        finally:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def read(self) -> Iterator[tuple[int, TreeHead | str]]:
        """(line number, head) for every line; a line that is not a head yields the reason
        instead (a torn last line after a crash reads as such, and says so)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for n, line in enumerate(data.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                yield n, TreeHead.from_dict(parse_json(line), where=f"{self.path}:{n}")
            except InputError as exc:
                yield n, f"line {n} of {self.path} is not a tree head: {exc}"

    def latest(self) -> TreeHead | None:
        last: TreeHead | None = None
        for _, head in self.read():
            if isinstance(head, TreeHead) and (last is None or head.size >= last.size):
                last = head
        return last
