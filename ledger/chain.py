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
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger._forecasts import FORECAST_KINDS, ForecastFold
from ledger.calls import Calls, check_call, check_refusal, obligation_warnings, summarise
from ledger.errors import LedgerKeyError
from ledger.keys import COMMIT_TAG, ENTRY_TAG, KEY_TAG, parse_public_key, public_key_hex, sign
from ledger.keys import verify_signature as _verify_sig
from ledger.merkle import CompactRange, leaf_hash
from ledger.protocol import (
    PredictionState,
    commit_message,
    is_digest,
    parse_time,
    prediction_id,
    quick_reveal,
)
from mindledger.canonical import canonical_json
from mindledger.words import counted

__all__ = [
    "ENTRY_VERSION",
    "GENESIS_HASH",
    "LEDGER_FORMAT",
    "LEDGER_FORMATS",
    "PROBLEMS",
    "Entry",
    "Failure",
    "Fold",
    "Verification",
    "Witness",
    "entry_hash",
    "hash_input",
    "key_change_message",
    "make_entry",
    "verify_entries",
]

GENESIS_HASH = "sha256:" + "0" * 64
"""``prev_hash`` of entry 1."""
LEDGER_FORMAT = "mindledger-ledger/2"
"""The ``format`` named in a new ledger's first (``open``) entry. Format 2 adds, over format 1:
observations carry their provenance, commits their query hash, the query proxy's ``call`` and
``refuse`` entries, and ``key`` entries (a change of the service key)."""
LEDGER_FORMATS = ("mindledger-ledger/1", LEDGER_FORMAT)
"""Formats this version verifies."""
ENTRY_VERSION = 1
"""The ``v`` of an entry's canonical form."""

PROBLEMS = (
    "ledger-replaced",
    "entry-missing",
    "order-changed",
    "content-changed",
    "signature-invalid",
    "reveal-mismatch",
    "invalid-entry",
)
"""What verification can find wrong with an entry, most telling first."""

_dumps: Callable[[str], str] = json.encoder.encode_basestring
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
        """Read an export line back (the payload is re-serialised canonically). TypeError
        when a field has the wrong type (``seq`` an integer, the others strings)."""
        if type(d["seq"]) is not int:
            raise TypeError("seq is not an integer")
        for key in ("subject", "kind", "time", "prev_hash", "prev_signature", "hash", "signature"):
            if not isinstance(d[key], str):
                raise TypeError(f"{key} is not a string")
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


def _signed(pub: Ed25519PublicKey | None, e: Entry) -> bool:
    return pub is not None and signature_ok(pub, e)


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
        elif self.subject and self.subject.startswith(("f", "run:")):
            where += f", {'forecast ' if self.subject[0] == 'f' else ''}{self.subject}"
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
    keys: list[str] = field(default_factory=list)
    """The service keys the ledger names, oldest first (the open entry's, then each change)."""
    root: bytes | None = None
    """The Merkle root of the entries, re-derived (None when they could not be read in order)."""
    roots: dict[int, bytes] = field(default_factory=dict)
    """Re-derived Merkle roots at the sizes asked for (for checking saved tree heads)."""
    forecasts: dict[str, int] = field(default_factory=dict)
    """Self-forecasts by state (``committed``, ``scored``, ``void``, ``rejected``)."""
    sealed_runs: int = 0
    """Runs sealed (``run-start`` entries)."""
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The query proxy's record per caller (:func:`ledger.calls.summarise`, as of the last
    entry's time)."""

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def warnings(self) -> list[str]:
        """What the ledger records that is not a failure of the chain but should be looked at:
        obligations of the query proxy that callers abandoned
        (:func:`ledger.calls.obligation_warnings`)."""
        return obligation_warnings(self.calls)

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
        if self.forecasts or self.sealed_runs:
            counts = ", ".join(f"{n} {s}" for s, n in sorted(self.forecasts.items())) or "none"
            states += f"; forecasts: {counts} ({counted(self.sealed_runs, 'run')} sealed)"
        sigs = (
            "full check: every hash, link, reveal, signature and score"
            if self.signatures == "all"
            else "every hash, link and reveal checked; the head's signature vouches for the rest"
        )
        return f"ok: {self.entries} entries, {head}; predictions: {states}; {sigs}"


class Fold:
    """Replays entries in order: the ledger's semantics (``open`` first, commits with valid
    ids and agent signatures, predictions moving only forward, observations before the
    deadline and with their provenance, reveals opening their commitments, scores following
    from them, the proxy's calls keeping its obligations, key changes signed by the old key).

    ``keys`` is the history of service keys (the ``open`` entry's, then each ``key`` entry's);
    :meth:`signer` says which of them must have signed an entry."""

    def __init__(self, *, full: bool):
        self.full = full
        self.predictions: dict[str, PredictionState] = {}
        self.agent_keys: dict[str, str] = {}
        self.forecasts = ForecastFold(self.agent_keys, full=full)
        """Self-forecasts and runs' seals (always checked in full: they have no fast path)."""
        self.calls = Calls()
        self.opened = False
        self.strict = False
        self.ledger_id: str | None = None
        self.keys: list[str] = []
        self._pubs: dict[str, Ed25519PublicKey | None] = {}

    @property
    def key_hex(self) -> str | None:
        """The current service key (hex), None before the open entry."""
        return self.keys[-1] if self.keys else None

    def public_key(self, key_hex: str | None) -> Ed25519PublicKey | None:
        if key_hex is None:
            return None
        if key_hex not in self._pubs:
            try:
                self._pubs[key_hex] = parse_public_key(key_hex)
            except (ValueError, LedgerKeyError):
                self._pubs[key_hex] = None
        return self._pubs[key_hex]

    def signer(self, e: Entry) -> Ed25519PublicKey | None:
        """The key that must have signed ``e`` (call before folding ``e`` in): the current
        key, which for a ``key`` entry is the old one; for the ``open`` entry, its own."""
        if not self.opened and e.kind == "open":
            try:
                return self.public_key(str(json.loads(e.payload_json).get("public_key")))
            except (TypeError, ValueError, AttributeError):
                return None
        return self.public_key(self.key_hex)

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
        except (KeyError, TypeError, ValueError, AttributeError, LedgerKeyError) as exc:
            return [("invalid-entry", f"malformed {e.kind} entry: {exc!r}")]

    def _fast_path(self, e: Entry) -> bool:
        """Fold in a well-formed observe or reveal without parsing its payload (the common
        case when verifying). False sends the entry down the general path, which also says
        what is wrong with it."""
        kind = e.kind
        if kind != "observe" and kind != "reveal":
            return False
        state = self.predictions.get(e.subject)
        if state is None or state.final or not _no_later(e.time, state.deadline):
            return False
        text = e.payload_json
        if kind == "observe":
            # canonical {"answer": s, "provenance": {…}} starts '{"answer":' + JSON string;
            # with no backslash in the payload, the string ends at the next quote
            if not text.startswith('{"answer":"') or "\\" in text:
                return False
            end = text.find('"', 11)
            rest = text[end:]
            if rest == '"}':
                if self.strict:
                    return False
            elif not rest.startswith('","provenance":{"by":"'):
                return False
            state.observed.append(text[11:end])
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
        if not ok:
            return False
        state.state, state.final_at = "scored", e.time
        return True

    def _apply(self, e: Entry, payload: dict[str, Any]) -> list[tuple[str, str]]:
        kind = e.kind
        if kind == "open":
            if self.opened or e.seq != 1:
                return [("invalid-entry", "a ledger is opened only once, by entry 1")]
            self.opened = True
            self.ledger_id = e.hash
            self.keys.append(str(payload.get("public_key")))
            if payload.get("format") not in LEDGER_FORMATS:
                return [("invalid-entry", f"unknown ledger format {payload.get('format')!r}")]
            self.strict = payload["format"] != LEDGER_FORMATS[0]
            return []
        if not self.opened:
            return [("invalid-entry", "entry 1 of a ledger must be its open entry")]
        if kind == "key":
            return self._apply_key(e, payload)
        if kind == "register":
            predictor = payload["predictor"]
            if e.subject != f"agent:{predictor}":
                return [("invalid-entry", "subject does not name the registered agent")]
            parse_public_key(payload["public_key"])
            self.agent_keys[predictor] = payload["public_key"]
            return []
        if kind == "commit":
            return self._apply_commit(e, payload)
        if kind == "call" or kind == "refuse":
            return self._apply_call(e, payload)
        if kind in FORECAST_KINDS:
            return self.forecasts.apply(kind, e.subject, e.seq, payload)
        state = self.predictions.get(e.subject)
        if state is None:
            return [("invalid-entry", f"{kind} for a prediction that was never committed")]
        revealed_json = None
        if kind == "reveal" and not self.full:
            revealed_json = _revealed_text(e.payload_json)
        out = []
        for msg in state.apply(
            kind, payload, e.time, revealed_json=revealed_json, strict=self.strict
        ):
            problem = "reveal-mismatch" if msg.startswith("reveal mismatch") else "invalid-entry"
            out.append((problem, msg.removeprefix("reveal mismatch: ")))
        return out

    def _apply_key(self, e: Entry, payload: dict[str, Any]) -> list[tuple[str, str]]:
        """A change of the service key: signed (as an entry) by the old key, naming the new
        one, with the new key's signature proving its holder made the change."""
        old, new = payload.get("previous"), payload.get("public_key")
        if e.subject != "ledger" or old != self.key_hex or not isinstance(new, str):
            return [("invalid-entry", "a key entry must name the current key and a new one")]
        pub = self.public_key(new)
        if pub is None or new in self.keys:
            return [("invalid-entry", "a key entry's new key is not a fresh Ed25519 key")]
        self.keys.append(new)
        message = key_change_message(self.ledger_id, e.prev_hash, str(old), new)
        if not _verify_sig(pub, KEY_TAG, message, str(payload.get("possession"))):
            return [("signature-invalid", "the new key's proof of possession does not verify")]
        return []

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
        if self.strict and not is_digest(payload.get("query_hash")):
            return [("invalid-entry", "the commit names no query hash")]
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

    def _apply_call(self, e: Entry, payload: dict[str, Any]) -> list[tuple[str, str]]:
        wrong = (check_call if e.kind == "call" else check_refusal)(e.subject, payload)
        if wrong is not None:
            return [("invalid-entry", wrong)]
        problems = self.calls.apply(e.seq, e.kind, payload, e.time)
        pid = payload.get("prediction")
        if e.kind == "call" and pid is not None:
            state = self.predictions.get(pid)
            if state is None:
                problems.append(f"a call unlocked by {pid}, which was never committed")
            elif (state.predictor, state.target) != (payload["caller"], payload["target"]):
                problems.append(f"a call unlocked by {pid}, another pair's prediction")
            elif state.query_hash != payload["query_hash"]:
                problems.append(f"a call unlocked by {pid}, whose query hash differs")
            elif payload["answered"]:
                if state.final or not _no_later(e.time, state.deadline):
                    problems.append(f"a call unlocked by {pid} after it closed")
                elif state.proxied is not None:
                    problems.append(f"{pid} unlocked a second call")
                state.proxied = payload["request"]
        return [("invalid-entry", p) for p in problems]

    def states(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for s in self.predictions.values():
            counts[s.state] += 1
        return dict(counts)


def key_change_message(ledger_id: str | None, prev_hash: str, old: str, new: str) -> bytes:
    """What a new service key signs (after :data:`~ledger.keys.KEY_TAG`) to take over: the
    canonical JSON of the ledger id, the hash of the entry the change follows, and both keys."""
    return canonical_json(
        {"ledger": ledger_id, "prev_hash": prev_hash, "previous": old, "public_key": new}
    )


def _no_later(time: str, deadline: str) -> bool:
    """``time`` ≤ ``deadline`` (ISO 8601): a string comparison when both are in the stored
    form (UTC, microseconds), else parsed."""
    if len(time) == len(deadline) == 32 and time.endswith("+00:00") and deadline.endswith("+00:00"):
        return time <= deadline
    return parse_time(time) <= parse_time(deadline)


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
    sizes: Collection[int] = (),
) -> Verification:
    """Verify a ledger given as a function returning its entries in ``seq`` order (called
    once for the fast pass, and again to diagnose if that finds anything). Re-derives the
    Merkle root, and the roots at ``sizes`` (to check saved tree heads against)."""
    pub_hex = public_key_hex(public_key)
    wanted = frozenset(sizes)
    result = _fast(entries(), pub_hex, full, witness, wanted)
    if result is None:
        result = _diagnose(list(entries()), public_key, pub_hex, witness, wanted)
    return result


def _fast(
    entries: Iterable[Entry],
    pub_hex: str,
    full: bool,
    witness: Witness | None,
    sizes: frozenset[int],
) -> Verification | None:
    """The fast pass: ``None`` as soon as anything is off (the diagnosis then says what).

    Signatures: the head's, and every ``key`` entry's (a key change is vouched for by the old
    key, the entries after it by the head); with ``full``, every entry's."""
    fold = Fold(full=full)
    apply = fold.apply
    prev_hash, prev_sig, expected = GENESIS_HASH, "", 1
    last: Entry | None = None
    witness_seq = witness.seq if witness is not None else -1
    witness_hash: str | None = None
    sha256 = hashlib.sha256
    tree = CompactRange()
    push, roots = tree.push, {}
    try:
        for e in entries:
            seq, subject, kind, payload_json, time, e_prev_hash, e_prev_sig, digest, _ = e
            if seq != expected or e_prev_hash != prev_hash or e_prev_sig != prev_sig:
                return None
            data = hash_input(seq, e_prev_hash, e_prev_sig, time, kind, subject, payload_json)
            raw = sha256(data).digest()
            if raw.hex() != digest[7:] or not digest.startswith("sha256:"):
                return None
            if (full or kind == "key") and not _signed(fold.signer(e), e):
                return None
            if apply(e):
                return None
            if seq == witness_seq:
                witness_hash = digest
            push(sha256(b"\x00" + raw).digest())
            if seq in sizes:
                roots[seq] = tree.root()
            prev_hash, prev_sig, expected, last = digest, e.signature, expected + 1, e
    except (TypeError, ValueError, AttributeError):
        return None
    if (
        last is not None
        and not full
        and last.kind != "key"
        and not _signed(fold.public_key(fold.key_hex), last)
    ):
        return None
    if last is not None and pub_hex not in fold.keys:
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
        forecasts=fold.forecasts.states(),
        sealed_runs=len(fold.forecasts.seals),
        signatures="all" if full else "head",
        ledger_id=fold.ledger_id,
        keys=list(fold.keys),
        root=tree.root(),
        roots=roots,
        calls=summarise(fold.calls.by_caller(), None if last is None else last.time),
    )


def _safe_hash(e: Entry, seq: int | None = None) -> str | None:
    try:
        return entry_hash(e, seq)
    except (TypeError, ValueError, AttributeError):
        return None


def _diagnose(
    entries: list[Entry],
    pub: Ed25519PublicKey,
    pub_hex: str,
    witness: Witness | None,
    sizes: frozenset[int],
) -> Verification:
    """Check everything, every signature included, and say what is wrong where."""
    return _Diagnosis(entries, pub, pub_hex, witness, sizes).run()


def _signed_order(entries: list[Entry], by_prev: Mapping[str, list[int]]) -> dict[int, int]:
    """The position each entry was signed at, following the links from the genesis hash (an
    entry's index in ``entries`` → its seq), as far as they lead to one entry each."""
    signed_pos: dict[int, int] = {}
    cur, pos = GENESIS_HASH, 1
    while True:
        nxt = [i for i in by_prev.get(cur, []) if i not in signed_pos]
        if len(nxt) != 1:
            break
        signed_pos[nxt[0]] = pos
        cur, pos = entries[nxt[0]].hash, pos + 1
    return signed_pos


class _Diagnosis:
    """The slow pass over ``entries``: every check on every entry, each problem recorded as a
    :class:`Failure` where it is (:meth:`run`)."""

    def __init__(
        self,
        entries: list[Entry],
        pub: Ed25519PublicKey,
        pub_hex: str,
        witness: Witness | None,
        sizes: frozenset[int],
    ):
        self.entries = entries
        self.pub = pub
        self.pub_hex = pub_hex
        self.witness = witness
        self.sizes = sizes
        self.failures: list[Failure] = []
        self.by_hash: dict[str, int] = {}
        by_prev: dict[str, list[int]] = defaultdict(list)
        for i, e in enumerate(entries):
            self.by_hash.setdefault(e.hash, i)
            by_prev[e.prev_hash].append(i)
        self.signed_pos = _signed_order(entries, by_prev)
        self.fold = Fold(full=True)
        self.tree: CompactRange | None = CompactRange()
        """The tree of the entries as stored, while they stand in seq order."""
        self.roots: dict[int, bytes] = {}
        self.prev: Entry | None = None
        self.prev_authentic = True
        self.expected = 1
        self.witness_hash: str | None = None
        self.searches = 0
        """Entries searched for the position they were signed at (at most 1,000)."""

    def fail(self, seq: int, problem: str, message: str, e: Entry | None = None) -> None:
        self.failures.append(
            Failure(
                seq,
                problem,
                message,
                e.hash if e is not None and isinstance(e.hash, str) else None,
                e.subject if e is not None and isinstance(e.subject, str) else None,
            )
        )

    def run(self) -> Verification:
        for i, e in enumerate(self.entries):
            self._check_entry(i, e)
        if self.witness is not None:
            self._check_witness(self.witness)
        self._check_keys()
        return self._result()

    def _check_entry(self, i: int, e: Entry) -> None:
        """Every check on entry ``e``, at index ``i``."""
        if type(e.seq) is not int:
            self.fail(self.expected, "content-changed", f"its seq {e.seq!r} is not an integer", e)
            self.prev, self.prev_authentic, self.expected = e, False, self.expected + 1
            return
        gap = self._check_seq(e)
        recomputed = _safe_hash(e)
        opening = not self.fold.opened and e.kind == "open"
        authentic = _signed(self.fold.signer(e), e)
        if opening and not authentic and signature_ok(self.pub, e):
            # the open entry's key was changed: judge the rest by the verifier's key
            authentic, anchor = True, self.pub_hex
        else:
            anchor = None
        if not authentic:
            self._unauthentic(e, recomputed)
        elif recomputed != e.hash:
            self._moved(i, e)
        if authentic and not gap:
            self._check_link(i, e)
        for problem, message in self.fold.apply(e):
            self.fail(e.seq, problem, message, e)
        if opening and anchor is not None and self.fold.keys:
            self.fold.keys[0] = anchor
        self._grow_tree(e)
        if self.witness is not None and e.seq == self.witness.seq:
            self.witness_hash = e.hash
        self.prev, self.prev_authentic = e, authentic
        self.expected = max(self.expected, e.seq) + 1

    def _check_seq(self, e: Entry) -> bool:
        """Entries missing before ``e``, or ``e`` stored out of order; whether there is a gap."""
        expected, prev = self.expected, self.prev
        if e.seq > expected:
            missing = (
                f"entry {expected} is missing"
                if e.seq == expected + 1
                else f"entries {expected} to {e.seq - 1} are missing"
            )
            after = f"entry {prev.seq}" if prev is not None else "the start"
            self.fail(expected, "entry-missing", f"{missing} (entry {e.seq} follows {after})")
            return True
        if e.seq < expected:
            self.fail(
                e.seq,
                "order-changed",
                f"stored after entry {prev.seq if prev else '?'}, but its seq is {e.seq}",
                e,
            )
        return False

    def _unauthentic(self, e: Entry, recomputed: str | None) -> None:
        """``e``'s signature does not verify: forged, or its content changed."""
        if recomputed == e.hash:
            self.fail(
                e.seq,
                "signature-invalid",
                "the signature does not verify with the ledger's public key (a forged "
                "entry, a changed signature, or content changed and its hash re-derived)",
                e,
            )
        else:
            self.fail(
                e.seq,
                "content-changed",
                "its content does not match its hash, and its signature matches neither",
                e,
            )

    def _moved(self, i: int, e: Entry) -> None:
        """``e`` is signed but its content no longer hashes to its hash: was it signed at
        another position (the signed order first, then nearby seqs), or changed?"""
        signed_as = self.signed_pos.get(i)
        if signed_as is not None and _safe_hash(e, signed_as) != e.hash:
            signed_as = None
        if signed_as is None and self.searches < 1000:
            self.searches += 1
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
            self.fail(
                e.seq,
                "order-changed",
                f"it was signed as entry {signed_as} but is stored as entry {e.seq}",
                e,
            )
        else:
            self.fail(
                e.seq,
                "content-changed",
                "its content no longer matches the hash the service signed",
                e,
            )

    def _check_link(self, i: int, e: Entry) -> None:
        """An authentic ``e`` (after no gap) links to the entry stored before it; if not,
        say whether it was moved, the one before it replaced, or the one it follows lost."""
        prev = self.prev
        want_prev = prev.hash if prev is not None else GENESIS_HASH
        if e.prev_hash == want_prev:
            return
        j = self.by_hash.get(e.prev_hash)
        if j is not None and j != i:
            self.fail(
                e.seq,
                "order-changed",
                f"it was signed to follow the entry now stored as {self.entries[j].seq}, "
                f"but follows entry {prev.seq if prev else 'none'}",
                e,
            )
        elif prev is not None and not self.prev_authentic and prev.seq == e.seq - 1:
            self.fail(
                prev.seq,
                "content-changed",
                f"it is not the entry that entry {e.seq} was signed to follow "
                f"({e.prev_hash}): it was replaced or rewritten",
                prev,
            )
        else:
            self.fail(
                e.seq,
                "entry-missing",
                f"the entry it was signed to follow ({e.prev_hash}) is not in the ledger",
                e,
            )

    def _grow_tree(self, e: Entry) -> None:
        """Add ``e`` to the tree of the stored entries, or give the tree up once they stop
        standing in seq order."""
        tree = self.tree
        if tree is None:
            return
        if e.seq == tree.size + 1 and is_digest(e.hash):
            tree.append(leaf_hash(bytes.fromhex(e.hash[7:])))
            if e.seq in self.sizes:
                self.roots[e.seq] = tree.root()
        else:
            self.tree = None

    def _check_witness(self, witness: Witness) -> None:
        """The head witness recorded an entry beyond the last, or another entry at its seq."""
        prev = self.prev
        head = prev.seq if prev is not None and type(prev.seq) is int else 0
        if witness.seq > head:
            first = head + 1
            what = f"entry {first}" if first == witness.seq else f"entries {first} to {witness.seq}"
            self.fail(
                first,
                "entry-missing",
                f"{what} missing from the end: {witness.source} recorded entry {witness.seq} "
                f"({witness.hash}); the ledger's tail was cut off",
            )
        elif self.witness_hash is not None and self.witness_hash != witness.hash:
            self.fail(
                witness.seq,
                "content-changed",
                f"{witness.source} recorded this entry as {witness.hash}: the ledger was "
                "rewritten from here",
            )

    def _check_keys(self) -> None:
        """The verifier's key was never the ledger's."""
        keys = self.fold.keys
        if not self.entries or self.pub_hex in keys:
            return
        history = ", ".join(keys) or "none"
        self.fail(
            1,
            "signature-invalid",
            f"the ledger was opened with public key {history}, not {self.pub_hex}"
            if len(keys) <= 1
            else f"the ledger's keys were {history}, never {self.pub_hex} (a key changes only "
            "by a key entry signed by the old key)",
            self.entries[0],
        )

    def _result(self) -> Verification:
        """The verification: failures in order, one per (seq, problem, message)."""
        self.failures.sort(key=lambda f: (f.seq, _PRIORITY.get(f.problem, 99)))
        unique: list[Failure] = []
        seen: set[tuple[int, str, str]] = set()
        for f in self.failures:
            k = (f.seq, f.problem, f.message)
            if k not in seen:
                seen.add(k)
                unique.append(f)
        entries, fold, tree = self.entries, self.fold, self.tree
        last = entries[-1] if entries else None
        return Verification(
            failures=unique,
            entries=len(entries),
            head_seq=last.seq if last is not None and type(last.seq) is int else 0,
            head_hash=last.hash if last is not None else None,
            states=fold.states(),
            forecasts=fold.forecasts.states(),
            sealed_runs=len(fold.forecasts.seals),
            signatures="all",
            ledger_id=fold.ledger_id,
            keys=list(fold.keys),
            root=None if tree is None else tree.root(),
            roots=self.roots,
            calls=summarise(
                fold.calls.by_caller(),
                last.time if last is not None and isinstance(last.time, str) else None,
            ),
        )
