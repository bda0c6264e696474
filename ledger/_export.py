"""The ledger exported to a file, and the file verified offline.

An export is every entry, one canonical JSON object a line, then a trailer signed by the
service naming the head and the Merkle root (``{"trailer": {…}, "signature": …}``), so a third
party can verify it with nothing but a public key the ledger had, and a file cut short is
caught.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.chain import PROBLEMS, Entry, Failure, Verification, Witness, verify_entries
from ledger.clock import Clock
from ledger.errors import LedgerKeyError
from ledger.keys import EXPORT_TAG, parse_public_key, public_key_hex, sign, verify_signature
from ledger.merkle import CompactRange, leaf_hash
from ledger.tree import TreeHead, check_head, digest_bytes, digest_text
from mindledger.canonical import canonical_json
from mindledger.errors import InputError
from mindledger.jsonin import parse_json

__all__ = ["EXPORT_FORMAT", "verify_export", "write_export"]

EXPORT_FORMAT = "mindledger-export/1"
"""The ``format`` of an export's signed trailer."""


def write_export(
    path: Path,
    entries: Iterable[Entry],
    *,
    ledger_id: Callable[[], str | None],
    key: Ed25519PrivateKey,
    clock: Clock,
) -> int:
    """Write ``entries`` (in ``seq`` order) and a trailer signed with ``key`` to ``path``
    (whole or not at all: through a ``.part`` file), naming the ledger ``ledger_id()`` and
    the time ``clock()`` once the entries are written. Returns the number of entries."""
    count = 0
    last: Entry | None = None
    tree = CompactRange()
    tmp = Path(path).with_name(Path(path).name + ".part")
    with open(tmp, "wb") as f:
        for e in entries:
            f.write(canonical_json(e.to_export()) + b"\n")
            tree.append(leaf_hash(digest_bytes(e.hash)))
            count += 1
            last = e
        trailer = {
            "format": EXPORT_FORMAT,
            "ledger": ledger_id(),
            "public_key": public_key_hex(key),
            "entries": count,
            "head_seq": 0 if last is None else last.seq,
            "head_hash": None if last is None else last.hash,
            "root": digest_text(tree.root()),
            "exported_at": clock(),
        }
        signature = sign(key, EXPORT_TAG, canonical_json(trailer))
        f.write(canonical_json({"trailer": trailer, "signature": signature}) + b"\n")
    tmp.replace(path)
    return count


class _Trailer:
    """What a signed trailer vouches for: the head (as a witness), the Merkle root and the
    key that signed it (all None when it is missing or does not verify)."""

    def __init__(self) -> None:
        self.witness: Witness | None = None
        self.root: str | None = None
        self.signed_by: str | None = None


def _read_lines(
    lines: list[bytes], failures: list[Failure]
) -> tuple[list[Entry], dict[str, Any] | None]:
    """The entries and the trailer object of an export's non-blank ``lines``, adding to
    ``failures`` a line that is not JSON, not an entry, or a trailer before the end."""
    trailer: dict[str, Any] | None = None
    entries: list[Entry] = []
    for n, line in enumerate(lines, start=1):
        try:
            obj = parse_json(line)
        except InputError as exc:
            failures.append(
                Failure(len(entries) + 1, "invalid-entry", f"line {n} of the export: {exc}")
            )
            continue
        if isinstance(obj, dict) and "trailer" in obj:
            if n != len(lines):
                failures.append(
                    Failure(len(entries) + 1, "invalid-entry", f"a trailer at line {n}, not last")
                )
            trailer = obj
            continue
        try:
            entries.append(Entry.from_export(obj))
        except (KeyError, TypeError, ValueError):
            failures.append(
                Failure(len(entries) + 1, "invalid-entry", f"line {n} is not a ledger entry")
            )
    return entries, trailer


def _check_trailer(
    trailer: dict[str, Any] | None,
    entries: list[Entry],
    pub: Ed25519PublicKey,
    failures: list[Failure],
) -> _Trailer:
    """What the ``trailer`` object vouches for, adding to ``failures`` a missing trailer or
    one whose signature does not verify (by the key it names, else ``pub``)."""
    out = _Trailer()
    head = entries[-1].seq if entries and type(entries[-1].seq) is int else 0
    if trailer is None:
        failures.append(
            Failure(
                head + 1,
                "entry-missing",
                "the export has no signed trailer: it may have been cut short",
            )
        )
        return out
    body = trailer.get("trailer")
    sig = trailer.get("signature")
    signer = body.get("public_key") if isinstance(body, dict) else None
    try:
        by = parse_public_key(signer) if isinstance(signer, str) else pub
    except LedgerKeyError:
        by = pub
    if (
        not isinstance(body, dict)
        or not isinstance(sig, str)
        or not verify_signature(by, EXPORT_TAG, canonical_json(body), sig)
    ):
        failures.append(
            Failure(head + 1, "signature-invalid", "the export's trailer signature is invalid")
        )
    elif body.get("head_hash") is not None:
        out.witness = Witness(int(body["head_seq"]), str(body["head_hash"]), "the signed trailer")
        out.root = body.get("root") if isinstance(body.get("root"), str) else None
        out.signed_by = str(signer)
    return out


def verify_export(
    path: Path,
    public_key: str,
    *,
    full: bool = False,
    heads: Sequence[tuple[TreeHead, str]] = (),
) -> Verification:
    """Verify an export offline with nothing but a service public key the ledger had (hex,
    PEM, or a file holding either). The signed trailer names the head and the Merkle root, so
    a file cut short is caught; each saved tree head in ``heads`` must be consistent with the
    exported ledger (see :func:`~ledger.tree.check_head`)."""
    pub = parse_public_key(public_key)
    lines: list[bytes] = Path(path).read_bytes().splitlines()
    lines = [ln for ln in lines if ln.strip()]
    failures: list[Failure] = []
    entries, trailer = _read_lines(lines, failures)
    signed = _check_trailer(trailer, entries, pub, failures)
    witness = signed.witness
    result = verify_entries(
        lambda: entries, pub, full=full, witness=witness, sizes={h.size for h, _ in heads}
    )
    if signed.signed_by is not None and signed.signed_by not in result.keys:
        failures.append(
            Failure(
                1,
                "ledger-replaced",
                f"the trailer was signed by {signed.signed_by}, a key the exported ledger "
                "never had",
            )
        )
    if (
        signed.root is not None
        and witness is not None
        and result.head_seq == witness.seq
        and result.root is not None
        and signed.root != digest_text(result.root)
    ):
        failures.append(
            Failure(
                result.head_seq,
                "content-changed",
                f"the entries' Merkle root is not the {signed.root} the signed trailer names",
            )
        )
    for saved, source in heads:
        failures.extend(check_head(result, saved, source))
    if failures:
        result.failures = sorted(
            [*result.failures, *failures], key=lambda f: (f.seq, PROBLEMS.index(f.problem))
        )
    return result
