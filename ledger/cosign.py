"""Witnessed tree heads: another party cosigns each signed tree head after checking that it
extends the last one it cosigned, so a ledger rewritten on its own machine cannot show a head
its witnesses have seen grow from theirs (as Certificate Transparency's witnesses do).

**The cosigned statement** (a contract, vectors in ``docs/ledger.md``) is a C2SP
tlog-cosignature/v1 (Ed25519) over the checkpoint body of the head: the witness signs ::

    cosignature/v1
    time <T>
    <log>
    <size>
    <base64 of the 32-byte Merkle root>

(each line ending in a newline) with its own Ed25519 key, where ``log`` is the name under which
the witness's operator registered the ledger (the checkpoint's origin), ``T`` the time of the
cosignature in POSIX seconds, and ``size`` and the root those of the ledger's signed tree head
(:mod:`ledger.tree`). It says: as of ``T``, this is the largest tree of ``log`` the witness has
seen grow, by consistency proofs, from every head it cosigned before. The same 64 bytes make a
C2SP note signature line (:meth:`Cosignature.note_line`).

**A cosigned head** is the JSON object ::

    {"cosignature": {"key": "<witness public key, hex>", "signature": "<hex>", "time": T},
     "log": "<log>", "tree_head": {"tree_head": {…}, "signature": "…"}, "v": 1}

``tree_head`` is the ledger's own signed tree head, whose size and root the cosignature covers.

**The witness's record** (:class:`WitnessStore`, ``<data dir>/witness-logs/``): one file per
registered log holding its public key and the latest head cosigned for it, replaced atomically
(written, fsynced, renamed) under an exclusive lock, so the check against the last head and the
new record are one step and a cosignature is handed out only once its record is on disk.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.db import private_dir
from ledger.errors import LedgerKeyError
from ledger.keys import parse_public_key, public_key_hex
from ledger.merkle import EMPTY_ROOT, verify_consistency
from ledger.tree import TreeHead, digest_bytes
from mindledger.canonical import canonical_json
from mindledger.errors import InputError, StorageError, UserError
from mindledger.jsonin import parse_json

__all__ = [
    "COSIGNED_VERSION",
    "LOG_NAME",
    "MAX_PROOF",
    "WITNESS_DIR",
    "Cosignature",
    "CosignedHead",
    "LogRecord",
    "WitnessRecordError",
    "WitnessRefusal",
    "WitnessStore",
    "check_log_name",
    "checkpoint_body",
    "cosign",
    "cosigned_message",
]

WITNESS_DIR = "witness-logs"
"""The witness's records, relative to its data directory."""
COSIGNED_VERSION = 1
MAX_PROOF = 64
"""Most hashes a consistency proof may hold (a tree of 2**63 leaves needs 63)."""
LOG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+-]{0,199}")
"""A log's name: a checkpoint origin such as ``lab.example/piper`` (no spaces, no newline)."""


def check_log_name(name: str, where: str = "log") -> str:
    """``name`` if it is a valid log name, else InputError naming ``where``."""
    if not isinstance(name, str) or not LOG_NAME.fullmatch(name):
        raise InputError(
            "expected a log name of 1 to 200 letters, digits and . _ : / + - (starting with "
            "a letter or digit), e.g. lab.example/piper",
            where=where,
        )
    return name


def checkpoint_body(log: str, size: int, root: str) -> bytes:
    """The C2SP tlog-checkpoint body of a head: origin, size and base64 root, one a line."""
    return f"{log}\n{size}\n{base64.b64encode(digest_bytes(root)).decode()}\n".encode()


def cosigned_message(log: str, size: int, root: str, time: int) -> bytes:
    """The bytes a witness signs (C2SP tlog-cosignature/v1, Ed25519)."""
    return b"cosignature/v1\ntime %d\n" % time + checkpoint_body(log, size, root)


@dataclass(frozen=True)
class Cosignature:
    """A witness's signature over a head: its public key (hex), the time (POSIX seconds) and
    the Ed25519 signature (hex) over :func:`cosigned_message`."""

    key: str
    time: int
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "signature": self.signature, "time": self.time}

    def verifies(self, log: str, size: int, root: str) -> bool:
        """Whether this is ``key``'s cosignature of ``log`` at ``size`` with ``root``."""
        try:
            pub = parse_public_key(self.key)
            sig = bytes.fromhex(self.signature)
        except (LedgerKeyError, ValueError):
            return False
        if len(sig) != 64:
            return False
        try:
            pub.verify(sig, cosigned_message(log, size, root, self.time))
        except InvalidSignature:
            return False
        return True

    def note_line(self, name: str) -> str:
        """The C2SP note signature line of this cosignature for a witness called ``name``:
        ``— name base64(key ID ‖ time as 8 bytes big-endian ‖ signature)``, with key ID the
        first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x04 ‖ public key)."""
        pub = bytes.fromhex(self.key)
        key_id = hashlib.sha256(name.encode() + b"\n\x04" + pub).digest()[:4]
        blob = key_id + self.time.to_bytes(8, "big") + bytes.fromhex(self.signature)
        return f"\u2014 {name} {base64.b64encode(blob).decode()}\n"


def cosign(key: Ed25519PrivateKey, log: str, head: TreeHead, time: int) -> Cosignature:
    """``key``'s cosignature of ``head`` as log ``log`` at ``time`` (POSIX seconds)."""
    signature = key.sign(cosigned_message(log, head.size, head.root, time)).hex()
    return Cosignature(public_key_hex(key), time, signature)


@dataclass(frozen=True)
class CosignedHead:
    """A signed tree head with a witness's cosignature (see the module docstring)."""

    log: str
    tree_head: TreeHead
    cosignature: Cosignature

    def to_dict(self) -> dict[str, Any]:
        return {
            "cosignature": self.cosignature.to_dict(),
            "log": self.log,
            "tree_head": self.tree_head.to_dict(),
            "v": COSIGNED_VERSION,
        }

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "cosigned head") -> CosignedHead:
        """Read a cosigned head back, checking its form (InputError naming the field)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("cosignature"), Mapping):
            raise InputError(
                'expected {"cosignature": {…}, "log": …, "tree_head": {…}, "v": 1}', where=where
            )
        if data.get("v") != COSIGNED_VERSION:
            raise InputError(f"expected version {COSIGNED_VERSION}", where=f"{where}.v")
        log = check_log_name(data.get("log"), f"{where}.log")  # type: ignore[arg-type]
        head = TreeHead.from_dict(data.get("tree_head"), where=f"{where}.tree_head")
        co = data["cosignature"]
        time = co.get("time")
        if type(time) is not int or not 0 <= time < 2**63:
            raise InputError("expected POSIX seconds", where=f"{where}.cosignature.time")
        for key in ("key", "signature"):
            if not isinstance(co.get(key), str):
                raise InputError("expected hex", where=f"{where}.cosignature.{key}")
        return cls(log, head, Cosignature(co["key"], time, co["signature"]))

    def problems(self, witness_key: str, log: str | None = None) -> list[str]:
        """What is wrong with this cosigned head for a witness whose public key is
        ``witness_key`` (hex) and, given ``log``, for that log: empty when the witness
        cosigned it and the ledger signed the head it covers."""
        out = []
        if log is not None and self.log != log:
            out.append(f"it is a head of log {self.log!r}, not {log!r}")
        if self.cosignature.key != witness_key:
            out.append(
                f"it was cosigned by key {self.cosignature.key}, not the witness's {witness_key}"
            )
        elif not self.cosignature.verifies(self.log, self.tree_head.size, self.tree_head.root):
            out.append("its cosignature does not verify with the witness's key")
        if not self.tree_head.signature_ok():
            out.append("the tree head it covers is not validly signed by its key")
        return out


# -- the witness's side ------------------------------------------------------------------------


class WitnessRefusal(UserError):
    """The witness refuses to cosign a head. ``code`` says why (``unknown_log``,
    ``bad_signature``, ``bad_request``, ``old_size_mismatch``, ``smaller_tree``,
    ``inconsistent``); ``size`` is the size of the latest head it cosigned for the log."""

    def __init__(self, code: str, message: str, *, size: int | None = None):
        super().__init__(message)
        self.code = code
        self.size = size


@dataclass(frozen=True)
class LogRecord:
    """A log a witness's operator registered: its name, public key and the latest head the
    witness cosigned for it."""

    log: str
    public_key: str
    added: str
    cosigned: CosignedHead | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "cosigned": None if self.cosigned is None else self.cosigned.to_dict(),
            "log": self.log,
            "public_key": self.public_key,
            "v": COSIGNED_VERSION,
        }


class WitnessStore:
    """The logs a witness cosigns for, one file each in ``directory`` (named by the hash of the
    log's name), with the latest head it cosigned for each."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)

    def path(self, log: str) -> Path:
        return self.directory / f"{hashlib.sha256(log.encode()).hexdigest()[:32]}.json"

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        private_dir(self.directory)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self, path: Path) -> LogRecord | None:
        try:
            data = parse_json(path.read_bytes(), source=str(path))
        except FileNotFoundError:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("public_key"), str):
            raise WitnessRecordError(f"{path} is not a witnessed log's record")
        cosigned = data.get("cosigned")
        try:
            return LogRecord(
                check_log_name(data.get("log"), str(path)),  # type: ignore[arg-type]
                data["public_key"],
                str(data.get("added", "")),
                None if cosigned is None else CosignedHead.from_dict(cosigned, where=str(path)),
            )
        except InputError as exc:
            raise WitnessRecordError(f"{path} is not a witnessed log's record: {exc}") from None

    def _write(self, record: LogRecord) -> None:
        path = self.path(record.log)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, canonical_json(record.to_dict()) + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        dfd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def record(self, log: str) -> LogRecord | None:
        """The registered log ``log``, or None."""
        return self._read(self.path(log))

    def logs(self) -> list[LogRecord]:
        """Every registered log, by name."""
        if not self.directory.is_dir():
            return []
        found = [self._read(p) for p in sorted(self.directory.glob("*.json"))]
        return sorted((r for r in found if r is not None), key=lambda r: r.log)

    def add_log(self, log: str, public_key: str, *, now: str) -> tuple[LogRecord, bool]:
        """Register log ``log`` with its public key (hex or a key file); a log already
        registered keeps the heads cosigned for it and takes the new key (after the ledger
        rotated its key). Returns the record and whether the log is new."""
        check_log_name(log)
        key = public_key_hex(parse_public_key(public_key))
        with self._lock():
            old = self.record(log)
            record = LogRecord(
                log, key, now if old is None else old.added, None if old is None else old.cosigned
            )
            self._write(record)
        return record, old is None

    def cosign(
        self,
        log: str,
        head: TreeHead,
        old: int,
        proof: Sequence[str],
        *,
        key: Ed25519PrivateKey,
        time: int,
    ) -> CosignedHead:
        """Cosign ``head`` for ``log`` if it is signed by the log's registered key and the
        consistency proof ``proof`` (hashes as ``sha256:<hex>``) shows it extends the latest
        head cosigned for the log, of size ``old`` (0 when none was); record it; return it.
        Raises :class:`WitnessRefusal` otherwise: it never cosigns a smaller tree, another
        root at the same size, or a head that does not extend the last one."""
        if len(proof) > MAX_PROOF:
            raise WitnessRefusal(
                "bad_request", f"a consistency proof has at most {MAX_PROOF} hashes"
            )
        try:
            hashes = [digest_bytes(h) for h in proof]
        except (TypeError, ValueError):
            raise WitnessRefusal("bad_request", "expected proof hashes as sha256:<hex>") from None
        with self._lock():
            record = self.record(log)
            if record is None:
                raise WitnessRefusal(
                    "unknown_log",
                    f"this witness does not witness a log named {log!r} (its operator "
                    "registers one with `mindledger witness add-log NAME PUBLIC_KEY`)",
                )
            if head.public_key != record.public_key or not head.signature_ok():
                raise WitnessRefusal(
                    "bad_signature",
                    f"the head is not validly signed by {log!r}'s registered key "
                    f"{record.public_key}",
                )
            last = record.cosigned
            last_size = 0 if last is None else last.tree_head.size
            if head.size < last_size:
                raise WitnessRefusal(
                    "smaller_tree",
                    f"this witness cosigned {log!r} at {last_size} entries: it never cosigns a "
                    f"smaller tree ({head.size})",
                    size=last_size,
                )
            if old > head.size:
                raise WitnessRefusal("bad_request", f"old size {old} is larger than the head's")
            if old != last_size:
                raise WitnessRefusal(
                    "old_size_mismatch",
                    f"the latest head this witness cosigned for {log!r} has {last_size} "
                    f"entries, not {old}: send a consistency proof from {last_size}",
                    size=last_size,
                )
            old_root = EMPTY_ROOT if last is None else digest_bytes(last.tree_head.root)
            if (last is not None and head.ledger != last.tree_head.ledger) or not (
                verify_consistency(old, head.size, old_root, digest_bytes(head.root), hashes)
            ):
                raise WitnessRefusal(
                    "inconsistent",
                    f"the head ({head.size} entries, root {head.root}) is not a consistent "
                    f"extension of the head this witness cosigned for {log!r} ({last_size} "
                    "entries): the log's history was rewritten",
                    size=last_size,
                )
            cosigned = CosignedHead(log, head, cosign(key, log, head, time))
            self._write(LogRecord(log, record.public_key, record.added, cosigned))
        return cosigned


class WitnessRecordError(StorageError):
    """A witness's record of a log cannot be read: the witness acts on it no more (a 503)."""
