"""The hash chain: the canonical form of a ledger entry, signing, and verification.

**Canonical form of an entry** (a contract; test vectors in ``docs/ledger.md``). Entry ``seq``
is the JSON object ::

    {"kind": …, "payload": {…}, "prev_hash": …, "prev_signature": …, "seq": …,
     "subject": …, "time": …, "v": 1}

and its hash is ``"sha256:" + hex(sha256(canonical_json(entry)))``. ``prev_hash`` and
``prev_signature`` are the previous entry's ``hash`` and ``signature`` (for entry 1:
:data:`GENESIS_HASH` and ``""``), so every entry's hash covers the whole history before it,
signatures included. ``signature`` is the service's Ed25519 signature over
``b"mindledger-entry/1:" + hash`` (ASCII), in hex.

**Verification** (:func:`verify_entries`) re-derives every hash and checks that ``seq`` runs
1, 2, 3, … without gaps and that every entry links to the one before it; it replays every
prediction (each reveal must open its commitment, scores must follow from the reveal and the
observed answers, no entry may follow a final one) and checks the head against the *head
witness* when one is given. By default it verifies the Ed25519 signature of the **last entry
only**: since each hash covers the previous hash and signature, a valid signature on the head
vouches for every entry before it, and any changed signature breaks the next entry's hash (the
service, for its part, never appends after a head whose hash or signature does not verify).
``full=True`` also verifies every entry's signature and agents' commit signatures and
re-derives every score from its reveal; so does the diagnosis that runs whenever the fast pass
finds anything, to name the first bad entry and everything wrong with it.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.keys import COMMIT_TAG, ENTRY_TAG, parse_public_key, public_key_hex, sign
from ledger.keys import verify_signature as _verify_sig
from ledger.protocol import (
    PredictionState,
    commit_message,
    parse_time,
    prediction_id,
    quick_reveal,
)
from mindledger.canonical import canonical_json

__all__ = [
    "ENTRY_VERSION",
    "GENESIS_HASH",
    "LEDGER_FORMAT",
    "PROBLEMS",
    "Entry",
    "Failure",
    "Fold",
    "Verification",
    "Witness",
    "entry_hash",
    "hash_input",
    "make_entry",
    "verify_entries",
]

GENESIS_HASH = "sha256:" + "0" * 64
"""``prev_hash`` of entry 1."""
LEDGER_FORMAT = "mindledger-ledger/1"
"""The ``format`` named in a ledger's first (``open``) entry."""
ENTRY_VERSION = 1
"""The ``v`` of an entry's canonical form."""

PROBLEMS = (
    "entry-missing",
    "order-changed",
    "content-changed",
    "signature-invalid",
    "reveal-mismatch",
    "invalid-entry",
)
"""What verification can find wrong with an entry, most telling first."""

_dumps: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]
"""JSON string literal with ``ensure_ascii=False``, as ``json.dumps`` writes one."""


class Entry(NamedTuple):
    """One stored entry (a row of ``ledger_entries`` or a line of an export). A tuple, so
    rows become entries cheaply and the verifier can unpack them."""

    seq: int
    subject: str
    kind: str
    payload_json: str
    time: str
    prev_hash: str
    prev_signature: str
    hash: str
    signature: str

    @property
    def payload(self) -> Any:
        return json.loads(self.payload_json)

    def to_export(self) -> dict[str, Any]:
        """The entry as one line of an export (payload as a JSON object)."""
        return {
            "seq": self.seq,
            "subject": self.subject,
            "kind": self.kind,
            "payload": self.payload,
            "time": self.time,
            "prev_hash": self.prev_hash,
            "prev_signature": self.prev_signature,
            "hash": self.hash,
            "signature": self.signature,
        }

    @classmethod
    def from_export(cls, d: Mapping[str, Any]) -> Entry:
        """Read an export line back (the payload is re-serialised canonically)."""
        return cls(
            seq=d["seq"],
            subject=d["subject"],
            kind=d["kind"],
            payload_json=canonical_json(d["payload"]).decode("utf-8"),
            time=d["time"],
            prev_hash=d["prev_hash"],
            prev_signature=d["prev_signature"],
            hash=d["hash"],
            signature=d["signature"],
        )


def hash_input(
    seq: int,
    prev_hash: str,
    prev_signature: str,
    time: str,
    kind: str,
    subject: str,
    payload_json: str,
) -> bytes:
    """The canonical JSON of an entry, built around its already-canonical payload text.

    Equal to ``canonical_json({... "payload": json.loads(payload_json) ...})`` whenever
    ``payload_json`` is canonical (as every stored payload is); a test checks it.
    """
    if type(seq) is not int:
        raise TypeError(f"seq is not an integer: {seq!r}")
    return (
        '{"kind":'
        + _dumps(kind)
        + ',"payload":'
        + payload_json
        + ',"prev_hash":'
        + _dumps(prev_hash)
        + ',"prev_signature":'
        + _dumps(prev_signature)
        + ',"seq":'
        + str(seq)
        + ',"subject":'
        + _dumps(subject)
        + ',"time":'
        + _dumps(time)
        + ',"v":1}'
    ).encode("utf-8")


def entry_hash(e: Entry, seq: int | None = None) -> str:
    """Re-derive an entry's hash from its content (optionally as if it stood at ``seq``)."""
    data = hash_input(
        e.seq if seq is None else seq,
        e.prev_hash,
        e.prev_signature,
        e.time,
        e.kind,
        e.subject,
        e.payload_json,
    )
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_entry(
    key: Ed25519PrivateKey,
    *,
    seq: int,
    prev_hash: str,
    prev_signature: str,
    time: str,
    kind: str,
    subject: str,
    payload: Any,
) -> Entry:
    """Build and sign an entry."""
    payload_json = canonical_json(payload).decode("utf-8")
    data = hash_input(seq, prev_hash, prev_signature, time, kind, subject, payload_json)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    return Entry(
        seq=seq,
        subject=subject,
        kind=kind,
        payload_json=payload_json,
        time=time,
        prev_hash=prev_hash,
        prev_signature=prev_signature,
        hash=digest,
        signature=sign(key, ENTRY_TAG, digest.encode("ascii")),
    )


def signature_ok(pub: Ed25519PublicKey, e: Entry) -> bool:
    """Whether the entry's signature is the service's over its stored hash."""
    if not isinstance(e.hash, str) or not isinstance(e.signature, str):
        return False
    return _verify_sig(pub, ENTRY_TAG, e.hash.encode("utf-8"), e.signature)


@dataclass(frozen=True)
class Failure:
    """What is wrong at one position of the ledger.

    ``seq`` is the entry's position (for a missing entry, the position it should hold);
    ``entry`` the stored hash when an entry is there; ``problem`` one of :data:`PROBLEMS`.
    """

    seq: int
    problem: str
    message: str
    entry: str | None = None
    subject: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "problem": self.problem,
            "message": self.message,
            "entry": self.entry,
            "subject": self.subject,
        }

    def __str__(self) -> str:
        where = f"entry {self.seq}"
        if self.entry:
            where += f" ({self.entry[:19]}…)"
        if self.subject and self.subject.startswith("p"):
            where += f", prediction {self.subject}"
        return f"{where}: {self.problem.replace('-', ' ')}: {self.message}"


@dataclass(frozen=True)
class Witness:
    """A head this machine saw: the ledger had entry ``seq`` with ``hash`` (kept outside the
    database, so cutting off the ledger's tail is caught)."""

    seq: int
    hash: str
    source: str = "the head witness"


@dataclass
class Verification:
    """The outcome of verifying a ledger: failures (empty when intact) and what was checked."""

    failures: list[Failure]
    entries: int = 0
    head_seq: int = 0
    head_hash: str | None = None
    states: dict[str, int] = field(default_factory=dict)
    signatures: str = "head"
    ledger_id: str | None = None

    @property
    def ok(self) -> bool:
        return not self.failures

    def first_bad(self) -> list[Failure]:
        """Every failure at the first bad position."""
        if not self.failures:
            return []
        first = self.failures[0].seq
        return [f for f in self.failures if f.seq == first]

    def summary(self) -> str:
        """One line: what was verified, or what is wrong first."""
        if self.failures:
            return str(self.failures[0])
        states = ", ".join(f"{n} {s}" for s, n in sorted(self.states.items())) or "none"
        head = f"head {self.head_seq} {self.head_hash}" if self.head_hash else "empty"
        sigs = (
            "full check: every hash, link, reveal, signature and score"
            if self.signatures == "all"
            else "every hash, link and reveal checked; the head's signature vouches for the rest"
        )
        return f"ok: {self.entries} entries, {head}; predictions: {states}; {sigs}"


class Fold:
    """Replays entries in order: the ledger's semantics (``open`` first, commits with valid
    ids and agent signatures, predictions moving only forward, reveals opening their
    commitments, scores following from them)."""

    def __init__(self, public_key_hex: str, *, full: bool):
        self.public_key_hex = public_key_hex
        self.full = full
        self.predictions: dict[str, PredictionState] = {}
        self.agent_keys: dict[str, str] = {}
        self.opened = False

    def apply(self, e: Entry) -> list[tuple[str, str]]:
        if not self.full and self._fast_path(e):
            return []
        try:
            payload = json.loads(e.payload_json)
        except (TypeError, ValueError):
            return [("invalid-entry", "the payload is not JSON")]
        if not isinstance(payload, dict):
            return [("invalid-entry", "the payload is not a JSON object")]
        try:
            return self._apply(e, payload)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return [("invalid-entry", f"malformed {e.kind} entry: {exc!r}")]

    def _fast_path(self, e: Entry) -> bool:
        """Fold in a well-formed observe or reveal without parsing its payload (the common
        case when verifying). False sends the entry down the general path, which also says
        what is wrong with it."""
        kind = e.kind
        if kind != "observe" and kind != "reveal":
            return False
        state = self.predictions.get(e.subject)
        if state is None or state.final:
            return False
        text = e.payload_json
        if kind == "observe":
            # canonical {"answer": s} is '{"answer":' + JSON string + '}'; with no backslash
            # or quote inside, the JSON string's content is s itself
            if not (text.startswith('{"answer":"') and text.endswith('"}')):
                return False
            answer = text[11:-2]
            if "\\" in answer or '"' in answer:
                return False
            state.observed.append(answer)
            state.state = "observed"
            return True
        revealed = _revealed_text(text)
        if revealed is None or not state.observed:
            return False
        start = len(revealed) + len('{"revealed":,"salt":"')
        salt = text[start : start + 64]
        if text[start + 64 : start + 76] != '","scores":{':
            return False
        ok, _, _, _ = quick_reveal(state.commit, revealed, salt)
        if not ok or parse_time(e.time) > parse_time(state.deadline):
            return False
        state.state, state.final_at = "scored", e.time
        return True

    def _apply(self, e: Entry, payload: dict[str, Any]) -> list[tuple[str, str]]:
        kind = e.kind
        if kind == "open":
            if self.opened or e.seq != 1:
                return [("invalid-entry", "a ledger is opened only once, by entry 1")]
            self.opened = True
            if payload.get("format") != LEDGER_FORMAT:
                return [("invalid-entry", f"unknown ledger format {payload.get('format')!r}")]
            if payload.get("public_key") != self.public_key_hex:
                return [
                    (
                        "signature-invalid",
                        f"the ledger was opened with public key {payload.get('public_key')}, "
                        f"not {self.public_key_hex}",
                    )
                ]
            return []
        if not self.opened:
            return [("invalid-entry", "entry 1 of a ledger must be its open entry")]
        if kind == "register":
            predictor = payload["predictor"]
            if e.subject != f"agent:{predictor}":
                return [("invalid-entry", "subject does not name the registered agent")]
            parse_public_key(payload["public_key"])
            self.agent_keys[predictor] = payload["public_key"]
            return []
        if kind == "commit":
            return self._apply_commit(e, payload)
        state = self.predictions.get(e.subject)
        if state is None:
            return [("invalid-entry", f"{kind} for a prediction that was never committed")]
        revealed_json = None
        if kind == "reveal" and not self.full:
            revealed_json = _revealed_text(e.payload_json)
        out = []
        for msg in state.apply(kind, payload, e.time, revealed_json=revealed_json):
            problem = "reveal-mismatch" if msg.startswith("reveal mismatch") else "invalid-entry"
            out.append((problem, msg.removeprefix("reveal mismatch: ")))
        return out

    def _apply_commit(self, e: Entry, payload: dict[str, Any]) -> list[tuple[str, str]]:
        pid = prediction_id(payload["commitment"])
        if e.subject != pid:
            return [("invalid-entry", f"a commit's subject must be its id {pid}")]
        if pid in self.predictions:
            return [("invalid-entry", f"prediction {pid} is committed twice")]
        for key in ("predictor", "target", "query", "deadline"):
            if not isinstance(payload.get(key), str):
                return [("invalid-entry", f"the commit has no {key}")]
        self.predictions[pid] = PredictionState.from_commit(pid, payload, e.time, e.seq)
        agent_key = self.agent_keys.get(payload["predictor"])
        sig = payload.get("agent_signature")
        if agent_key is None:
            if sig is not None:
                return [("invalid-entry", "an agent signature without a registered agent key")]
            return []
        if sig is None:
            return [("invalid-entry", "a registered agent's commit without its signature")]
        if self.full and not _verify_sig(
            parse_public_key(agent_key), COMMIT_TAG, commit_message(payload), sig
        ):
            return [("signature-invalid", "the agent's signature over the commit is invalid")]
        return []

    def states(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for s in self.predictions.values():
            counts[s.state] += 1
        return dict(counts)


def _revealed_text(payload_json: str) -> str | None:
    """The canonical text of the revealed prediction inside a reveal payload's canonical text
    (``{"revealed":…,"salt":"…","scores":{…}}``), or None if it is not laid out so. A string
    cannot hide ``,"salt":"`` (its quotes would be escaped), and ``scores`` holds no such key,
    so the last occurrence is the payload's own."""
    head = '{"revealed":'
    end = payload_json.rfind(',"salt":"')
    if not payload_json.startswith(head) or end < 0:
        return None
    return payload_json[len(head) : end]


_PRIORITY = {p: i for i, p in enumerate(PROBLEMS)}


def verify_entries(
    entries: Callable[[], Iterable[Entry]],
    public_key: Ed25519PublicKey,
    *,
    full: bool = False,
    witness: Witness | None = None,
) -> Verification:
    """Verify a ledger given as a function returning its entries in ``seq`` order (called
    once for the fast pass, and again to diagnose if that finds anything)."""
    pub_hex = public_key_hex(public_key)
    result = _fast(entries(), public_key, pub_hex, full, witness)
    if result is not None:
        return result
    return _diagnose(list(entries()), public_key, pub_hex, witness)


def _fast(
    entries: Iterable[Entry],
    pub: Ed25519PublicKey,
    pub_hex: str,
    full: bool,
    witness: Witness | None,
) -> Verification | None:
    """The fast pass: ``None`` as soon as anything is off (the diagnosis then says what)."""
    fold = Fold(pub_hex, full=full)
    apply = fold.apply
    prev_hash, prev_sig, expected = GENESIS_HASH, "", 1
    last: Entry | None = None
    witness_seq = witness.seq if witness is not None else -1
    witness_hash: str | None = None
    sha256 = hashlib.sha256
    try:
        for e in entries:
            seq, subject, kind, payload_json, time, e_prev_hash, e_prev_sig, digest, _ = e
            if seq != expected or e_prev_hash != prev_hash or e_prev_sig != prev_sig:
                return None
            data = hash_input(seq, e_prev_hash, e_prev_sig, time, kind, subject, payload_json)
            if "sha256:" + sha256(data).hexdigest() != digest:
                return None
            if full and not signature_ok(pub, e):
                return None
            if apply(e):
                return None
            if seq == witness_seq:
                witness_hash = digest
            prev_hash, prev_sig, expected, last = digest, e.signature, expected + 1, e
    except (TypeError, ValueError, AttributeError):
        return None
    if last is not None and not full and not signature_ok(pub, last):
        return None
    if witness is not None and (
        last is None or witness.seq > last.seq or witness_hash != witness.hash
    ):
        return None
    return Verification(
        failures=[],
        entries=0 if last is None else last.seq,
        head_seq=0 if last is None else last.seq,
        head_hash=None if last is None else last.hash,
        states=fold.states(),
        signatures="all" if full else "head",
    )


def _safe_hash(e: Entry, seq: int | None = None) -> str | None:
    try:
        return entry_hash(e, seq)
    except (TypeError, ValueError, AttributeError):
        return None


def _diagnose(
    entries: list[Entry], pub: Ed25519PublicKey, pub_hex: str, witness: Witness | None
) -> Verification:
    """Check everything, every signature included, and say what is wrong where."""
    failures: list[Failure] = []

    def fail(seq: int, problem: str, message: str, e: Entry | None = None) -> None:
        failures.append(
            Failure(
                seq,
                problem,
                message,
                e.hash if e is not None and isinstance(e.hash, str) else None,
                e.subject if e is not None and isinstance(e.subject, str) else None,
            )
        )

    by_hash: dict[str, int] = {}
    by_prev: dict[str, list[int]] = defaultdict(list)
    for i, e in enumerate(entries):
        by_hash.setdefault(e.hash, i)
        by_prev[e.prev_hash].append(i)
    # The signed order: follow the links from the genesis hash.
    signed_pos: dict[int, int] = {}
    cur, pos = GENESIS_HASH, 1
    while True:
        nxt = [i for i in by_prev.get(cur, []) if i not in signed_pos]
        if len(nxt) != 1:
            break
        signed_pos[nxt[0]] = pos
        cur, pos = entries[nxt[0]].hash, pos + 1

    fold = Fold(pub_hex, full=True)
    prev: Entry | None = None
    prev_authentic = True
    expected = 1
    witness_hash: str | None = None
    searches = 0
    for i, e in enumerate(entries):
        if type(e.seq) is not int:
            fail(expected, "content-changed", f"its seq {e.seq!r} is not an integer", e)
            prev, prev_authentic, expected = e, False, expected + 1
            continue
        gap = e.seq > expected
        if gap:
            missing = (
                f"entry {expected} is missing"
                if e.seq == expected + 1
                else f"entries {expected} to {e.seq - 1} are missing"
            )
            after = f"entry {prev.seq}" if prev is not None else "the start"
            fail(expected, "entry-missing", f"{missing} (entry {e.seq} follows {after})")
        elif e.seq < expected:
            fail(
                e.seq,
                "order-changed",
                f"stored after entry {prev.seq if prev else '?'}, but its seq is {e.seq}",
                e,
            )
        recomputed = _safe_hash(e)
        authentic = signature_ok(pub, e)
        if not authentic:
            if recomputed == e.hash:
                fail(
                    e.seq,
                    "signature-invalid",
                    "the signature does not verify with the ledger's public key (a forged "
                    "entry, a changed signature, or content changed and its hash re-derived)",
                    e,
                )
            else:
                fail(
                    e.seq,
                    "content-changed",
                    "its content does not match its hash, and its signature matches neither",
                    e,
                )
        elif recomputed != e.hash:
            # Was it signed at another position? (the signed order first, then nearby seqs)
            signed_as = signed_pos.get(i)
            if signed_as is not None and _safe_hash(e, signed_as) != e.hash:
                signed_as = None
            if signed_as is None and searches < 1000:
                searches += 1
                signed_as = next(
                    (
                        s
                        for d in range(1, 65)
                        for s in (e.seq + d, e.seq - d)
                        if s > 0 and _safe_hash(e, s) == e.hash
                    ),
                    None,
                )
            if signed_as is not None and signed_as != e.seq:
                fail(
                    e.seq,
                    "order-changed",
                    f"it was signed as entry {signed_as} but is stored as entry {e.seq}",
                    e,
                )
            else:
                fail(
                    e.seq,
                    "content-changed",
                    "its content no longer matches the hash the service signed",
                    e,
                )
        want_prev = prev.hash if prev is not None else GENESIS_HASH
        if authentic and e.prev_hash != want_prev and not gap:
            j = by_hash.get(e.prev_hash)
            if j is not None and j != i:
                fail(
                    e.seq,
                    "order-changed",
                    f"it was signed to follow the entry now stored as {entries[j].seq}, "
                    f"but follows entry {prev.seq if prev else 'none'}",
                    e,
                )
            elif prev is not None and not prev_authentic and prev.seq == e.seq - 1:
                fail(
                    prev.seq,
                    "content-changed",
                    f"it is not the entry that entry {e.seq} was signed to follow "
                    f"({e.prev_hash}): it was replaced or rewritten",
                    prev,
                )
            else:
                fail(
                    e.seq,
                    "entry-missing",
                    f"the entry it was signed to follow ({e.prev_hash}) is not in the ledger",
                    e,
                )
        for problem, message in fold.apply(e):
            fail(e.seq, problem, message, e)
        if witness is not None and e.seq == witness.seq:
            witness_hash = e.hash
        prev, prev_authentic, expected = e, authentic, max(expected, e.seq) + 1
    if witness is not None:
        head = prev.seq if prev is not None and type(prev.seq) is int else 0
        if witness.seq > head:
            first = head + 1
            what = f"entry {first}" if first == witness.seq else f"entries {first} to {witness.seq}"
            fail(
                first,
                "entry-missing",
                f"{what} missing from the end: {witness.source} recorded entry {witness.seq} "
                f"({witness.hash}); the ledger's tail was cut off",
            )
        elif witness_hash is not None and witness_hash != witness.hash:
            fail(
                witness.seq,
                "content-changed",
                f"{witness.source} recorded this entry as {witness.hash}: the ledger was "
                "rewritten from here",
            )
    failures.sort(key=lambda f: (f.seq, _PRIORITY.get(f.problem, 99)))
    # one failure per (seq, problem, message)
    unique: list[Failure] = []
    seen: set[tuple[int, str, str]] = set()
    for f in failures:
        k = (f.seq, f.problem, f.message)
        if k not in seen:
            seen.add(k)
            unique.append(f)
    last = entries[-1] if entries else None
    return Verification(
        failures=unique,
        entries=len(entries),
        head_seq=last.seq if last is not None and type(last.seq) is int else 0,
        head_hash=last.hash if last is not None else None,
        states=fold.states(),
        signatures="all",
    )
