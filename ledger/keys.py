"""Ed25519 keys: the service key that signs every ledger entry, and agents' public keys.

The service key lives in the data directory as ``keys/ledger-ed25519.pem`` (PKCS #8 PEM,
unencrypted, mode 0600 in a 0700 directory) next to ``keys/ledger-ed25519.pub`` (the public key
as 64 hex digits, for third parties). It is created on first use. A key file that others can
read is refused, as ssh does.

Signatures are domain-separated: every signed message starts with a tag naming what it is
(``mindledger-entry/1:``, ``mindledger-export/1:``, ``mindledger-commit/1:``), so a signature
over one kind of message can never be replayed as another.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.errors import LedgerKeyError

__all__ = [
    "COMMIT_TAG",
    "ENTRY_TAG",
    "EXPORT_TAG",
    "KEY_FILE",
    "KEY_TAG",
    "NEXT_KEY_FILE",
    "PUBLIC_KEY_FILE",
    "TREE_HEAD_TAG",
    "WITNESS_KEY_FILE",
    "WITNESS_PUBLIC_KEY_FILE",
    "generate_key",
    "load_or_create_service_key",
    "load_or_create_witness_key",
    "load_private_key",
    "parse_public_key",
    "public_key_hex",
    "rotate_service_key",
    "sign",
    "verify_signature",
]

ENTRY_TAG = b"mindledger-entry/1:"
"""Prefix of the message the service signs for a ledger entry (followed by the entry hash)."""
EXPORT_TAG = b"mindledger-export/1:"
"""Prefix of the message the service signs for an export trailer (then its canonical JSON)."""
COMMIT_TAG = b"mindledger-commit/1:"
"""Prefix of the message an agent signs for a commit (then the commit's canonical JSON)."""
KEY_TAG = b"mindledger-key/1:"
"""Prefix of the message a new service key signs to prove possession when it replaces the old
one (then the canonical JSON of the ``key`` entry's ledger, prev_hash, previous and new key)."""
TREE_HEAD_TAG = b"mindledger-tree-head/1:"
"""Prefix of the message the service signs for a signed tree head (then its canonical JSON)."""

KEY_FILE = Path("keys") / "ledger-ed25519.pem"
"""The service's private key, relative to the data directory."""
PUBLIC_KEY_FILE = Path("keys") / "ledger-ed25519.pub"
"""The service's public key (hex), relative to the data directory."""
WITNESS_KEY_FILE = Path("keys") / "witness-ed25519.pem"
"""The key this daemon cosigns other ledgers' tree heads with, as their witness."""
WITNESS_PUBLIC_KEY_FILE = Path("keys") / "witness-ed25519.pub"
"""The witness's public key (hex): what a witnessed ledger's operator configures."""


def generate_key() -> Ed25519PrivateKey:
    """A fresh Ed25519 private key."""
    return Ed25519PrivateKey.generate()


def public_key_hex(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The raw 32-byte public key as 64 lowercase hex digits."""
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return pub.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw).hex()


def _pem(key: Ed25519PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def load_private_key(path: Path, *, check_mode: bool = True) -> Ed25519PrivateKey:
    """Read an Ed25519 private key from a PEM file; refuse one that others may read."""
    try:
        st = path.stat()
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerKeyError(f"cannot read key file {path}: {exc.strerror}") from None
    if check_mode and os.name == "posix" and st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise LedgerKeyError(
            f"key file {path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"run: chmod 600 {path}"
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise LedgerKeyError(f"key file {path} is not an unencrypted PEM key: {exc}") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise LedgerKeyError(f"key file {path} holds a {type(key).__name__}, not an Ed25519 key")
    return key


def load_or_create_service_key(home: Path) -> Ed25519PrivateKey:
    """The service key in ``home``, created (owner-only) if there is none yet.

    Safe when several processes start at once: the key is written to a temporary file and
    linked into place, so a loser of the race reads the winner's complete key.
    """
    return _load_or_create(home, KEY_FILE, PUBLIC_KEY_FILE)


def load_or_create_witness_key(home: Path) -> Ed25519PrivateKey:
    """The witness key in ``home`` (:data:`WITNESS_KEY_FILE`: what this daemon cosigns other
    ledgers' heads with, never the service key), created as the service key is."""
    return _load_or_create(home, WITNESS_KEY_FILE, WITNESS_PUBLIC_KEY_FILE)


def _load_or_create(home: Path, key_file: Path, public_file: Path) -> Ed25519PrivateKey:
    path = home / key_file
    if path.exists():
        return load_private_key(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path.parent, 0o700)
    key = generate_key()
    # unique per call, not only per process: two threads may create the key at once
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    _write_private(tmp, key)
    try:
        os.link(tmp, path)
    except FileExistsError:
        os.unlink(tmp)
        return load_private_key(path)
    os.unlink(tmp)
    pub = home / public_file
    pub_tmp = pub.with_name(f".{pub.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    pub_tmp.write_text(public_key_hex(key) + "\n", encoding="ascii")
    os.replace(pub_tmp, pub)
    return key


NEXT_KEY_FILE = Path("keys") / "ledger-ed25519.next.pem"
"""Where a key change stages the new key until the ledger has recorded the change."""


def _write_private(path: Path, key: Ed25519PrivateKey) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, _pem(key))
        os.fsync(fd)
    finally:
        os.close(fd)


def rotate_service_key(home: Path, change: Callable[[Ed25519PrivateKey], object]) -> str:
    """Replace the service key of data directory ``home`` with a new one: the new key is
    written to :data:`NEXT_KEY_FILE` first, ``change(new_key)`` records the change (the
    ledger's ``key`` entry, signed by the old key), and only then does the new key take the
    old one's place. A crash before ``change`` leaves the old key in force; after it, the
    ledger refuses the old key and the message names the staged file. Returns the new public
    key (hex)."""
    current = home / KEY_FILE
    staged = home / NEXT_KEY_FILE
    staged.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    new = generate_key()
    _write_private(staged, new)
    change(new)
    os.replace(staged, current)
    pub = home / PUBLIC_KEY_FILE
    pub_tmp = pub.with_name(f".{pub.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp")
    pub_tmp.write_text(public_key_hex(new) + "\n", encoding="ascii")
    os.replace(pub_tmp, pub)
    return public_key_hex(new)


def parse_public_key(text: str) -> Ed25519PublicKey:
    """An Ed25519 public key from 64 hex digits, a PEM public key, or a file holding either."""
    raw = text.strip()
    candidate = Path(raw).expanduser()
    if len(raw) < 4096 and not _is_hex(raw) and "BEGIN" not in raw:
        try:
            raw = candidate.read_text(encoding="ascii").strip()
        except OSError as exc:
            raise LedgerKeyError(
                f"public key {text!r} is neither 64 hex digits nor a readable file: {exc.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise LedgerKeyError(f"public key file {text!r} is not text") from None
    if _is_hex(raw) and len(raw) == 64:
        return Ed25519PublicKey.from_public_bytes(bytes.fromhex(raw))
    if "BEGIN" in raw:
        try:
            key = serialization.load_pem_public_key(raw.encode("ascii"))
        except ValueError as exc:
            raise LedgerKeyError(f"not a PEM public key: {exc}") from None
        if isinstance(key, Ed25519PublicKey):
            return key
        raise LedgerKeyError(f"public key is a {type(key).__name__}, not an Ed25519 key")
    raise LedgerKeyError("a public key is 64 hex digits (or a PEM file); got something else")


def _is_hex(s: str) -> bool:
    return bool(s) and all(c in "0123456789abcdefABCDEF" for c in s)


def sign(key: Ed25519PrivateKey, tag: bytes, message: bytes) -> str:
    """Hex Ed25519 signature over ``tag + message``."""
    return key.sign(tag + message).hex()


def verify_signature(pub: Ed25519PublicKey, tag: bytes, message: bytes, signature: str) -> bool:
    """Whether ``signature`` (hex) is ``pub``'s signature over ``tag + message``."""
    try:
        sig = bytes.fromhex(signature)
    except (ValueError, TypeError):
        return False
    if len(sig) != 64:
        return False
    try:
        pub.verify(sig, tag + message)
    except InvalidSignature:
        return False
    return True
