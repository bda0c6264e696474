"""The head witness: the newest ledger head this machine has seen, kept outside the database.

A hash chain shows that nothing *inside* it changed, but a ledger whose last entries were
deleted is still a valid chain, just a shorter one. So after every append the service records
the new head (seq, hash, signature) in a small file in the data directory,
``ledger-witness/<ledger id>.json``; :func:`~ledger.chain.verify_entries` then reports entries
missing from the end, and the service refuses to append to a ledger shorter than its witness.

The file only moves forward (``flock`` serialises writers on this machine, and a lower seq
never replaces a higher one). It is written after the database commit and not fsynced, so after
a crash it may lag behind the database, never lead it. It guards against someone who can change
the database but not this directory; whoever holds the data directory also holds the signing
key, and only copies of the head kept elsewhere (an export, a published head) bind them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from ledger.chain import Entry, Witness
from ledger.db import private_dir
from mindledger.canonical import canonical_json

__all__ = ["HeadWitness"]

_RECORD = 1024
"""Bytes written per record (padded), so a shorter record never needs a truncate."""


class HeadWitness:
    """The witness files in one directory, one per ledger (named by the ledger's id).

    A file holds one canonical JSON line and a checksum line; it is rewritten in place under
    an exclusive ``flock`` (no rename: on ext4 replacing a file by rename flushes it, which
    would cost as much as the database commit). A torn write fails its checksum and reads as
    no witness at all, which weakens the check once but can never raise a false alarm.
    """

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self._fds: dict[str, tuple[int, int]] = {}
        self._written: dict[str, tuple[int, bytes]] = {}
        """Per ledger: the seq and the file's bytes after this process's last write, so that
        the next write need not parse the file when nobody else wrote it since."""
        # flock excludes other processes, not other threads sharing our descriptor
        self._thread_lock = threading.Lock()

    def path(self, ledger_id: str) -> Path:
        return self.directory / f"{ledger_id.removeprefix('sha256:')[:32]}.json"

    def _fd(self, ledger_id: str) -> int:
        """An open descriptor of the ledger's witness file, one per process (an inherited
        descriptor would share its lock with the parent)."""
        pid = os.getpid()
        cached = self._fds.get(ledger_id)
        if cached is not None and cached[0] == pid:
            return cached[1]
        private_dir(self.directory)
        fd = os.open(self.path(ledger_id), os.O_RDWR | os.O_CREAT, 0o600)
        self._fds[ledger_id] = (pid, fd)
        return fd

    @staticmethod
    def _decode(raw: bytes) -> dict[str, Any] | None:
        lines = raw.split(b"\n")
        if len(lines) < 2 or hashlib.sha256(lines[0]).hexdigest()[:32].encode() != lines[1]:
            return None
        try:
            data = json.loads(lines[0])
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    def _read_fd(self, fd: int) -> dict[str, Any] | None:
        return self._decode(os.pread(fd, 8192, 0))

    def _read_path(self, path: Path) -> dict[str, Any] | None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return self._read_fd(fd)
        finally:
            os.close(fd)

    def read(self, ledger_id: str) -> Witness | None:
        """The recorded head of the ledger ``ledger_id``, or None if none is recorded (an
        unreadable file counts as none: whoever can damage it could as well delete it)."""
        path = self.path(ledger_id)
        cached = self._fds.get(ledger_id)
        if (cached is None or cached[0] != os.getpid()) and not path.exists():
            return None
        with self._thread_lock:
            fd = self._fd(ledger_id)
            fcntl.flock(fd, fcntl.LOCK_SH)
            try:
                data = self._read_fd(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        if data is None:
            return None
        seq, digest = data.get("seq"), data.get("hash")
        if data.get("ledger") != ledger_id or type(seq) is not int or not isinstance(digest, str):
            return None
        return Witness(seq, digest, source=f"the head witness {path}")

    def recorded(self) -> list[tuple[str, Witness]]:
        """Every ledger witnessed in this directory, with its recorded head. A data directory
        holds one ledger: a witness of another ledger id means the ledger was replaced."""
        out: list[tuple[str, Witness]] = []
        if not self.directory.is_dir():
            return out
        for path in sorted(self.directory.glob("*.json")):
            data = self._read_path(path)
            if data and isinstance(data.get("ledger"), str):
                w = self.read(data["ledger"])
                if w is not None:
                    out.append((data["ledger"], w))
        return out

    def for_database(self, db: str) -> list[tuple[str, Witness]]:
        """Witnesses of ledgers recorded for database ``db`` (to notice a ledger emptied of
        every entry, which leaves no ledger id to look up)."""
        out: list[tuple[str, Witness]] = []
        if not self.directory.is_dir():
            return out
        for path in sorted(self.directory.glob("*.json")):
            data = self._read_path(path)
            if data and data.get("db") == db and isinstance(data.get("ledger"), str):
                w = self.read(data["ledger"])
                if w is not None:
                    out.append((data["ledger"], w))
        return out

    def wrote_last(self, ledger_id: str, seq: int) -> bool:
        """Whether the witness still holds exactly the record of entry ``seq`` that this process
        wrote (nobody wrote it since): then it cannot disagree with a head at ``seq``."""
        ours = self._written.get(ledger_id)
        if ours is None or ours[0] != seq:
            return False
        with self._thread_lock:
            return os.pread(self._fd(ledger_id), 8192, 0) == ours[1]

    def advance(self, ledger_id: str, head: Entry, db: str) -> None:
        """Record ``head`` unless a later head is already recorded."""
        with self._thread_lock:
            self._advance(ledger_id, head, db)

    def _advance(self, ledger_id: str, head: Entry, db: str) -> None:
        fd = self._fd(ledger_id)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            ours = self._written.get(ledger_id)
            raw = os.pread(fd, 8192, 0)
            if ours is None or raw != ours[1] or ours[0] >= head.seq:
                # not the record we wrote last (another process's, or none yet): read it
                current = self._decode(raw)
                if current and type(current.get("seq")) is int and current["seq"] >= head.seq:
                    return
            body = canonical_json(
                {
                    "ledger": ledger_id,
                    "db": db,
                    "seq": head.seq,
                    "hash": head.hash,
                    "signature": head.signature,
                    "time": head.time,
                }
            )
            data = body + b"\n" + hashlib.sha256(body).hexdigest()[:32].encode() + b"\n"
            # pad to a fixed length: the file never shrinks, so no truncate is needed
            record = data.ljust(max(len(data), _RECORD), b" ")
            os.pwrite(fd, record, 0)
            self._written[ledger_id] = (head.seq, record + raw[len(record) :])
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        for pid, fd in self._fds.values():
            if pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fds.clear()
