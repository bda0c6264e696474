"""The commit-reveal protocol as pure values: the canonical prediction, its commitment, the
payload of each kind of entry, and the fold of a prediction's entries into its state.

**The canonical prediction** (a contract, see ``docs/ledger.md`` for test vectors) is the JSON
object built by :func:`prediction_body`, with every key always present::

    {"condition": …, "distribution": {"answer": probability, …}, "item": …,
     "own_answer": …, "predictor": "…", "query": "…", "rationale": …, "target": "…",
     "top1": "…", "v": 1}

``distribution`` maps answers (strings) to probabilities written as floats (``1`` becomes
``1.0``); ``top1`` defaults to the most probable answer (ties: first in code-point order);
``item``, ``condition``, ``rationale`` and ``own_answer`` are ``null`` when not given.

**The commitment** is ``"sha256:" + hex(sha256(canonical_json(prediction) || salt))`` with a
32-byte random salt: hiding (the salt is secret until the reveal) and binding (SHA-256).

**The prediction id** is ``"p"`` followed by the first 20 hex digits of the commitment, so the
id is known to the committer before the commit and cannot be reassigned.

**The query hash** names the request a prediction is about: ``"sha256:" + hex(sha256(
canonical_json({"request": request, "v": 2})))`` over the chat request exactly as sent, every
field included but those of :data:`UNHASHED_FIELDS` (``model``, ``stream``, ``user``: they
cannot change the answer); a plain-text query is the request ``{"messages": [{"role": "user",
"content": query}]}``. The query proxy forwards a call carrying a prediction only when the call
hashes to the committed query hash, so changing ``max_tokens``, ``tools``, ``temperature``…
after the commit is a ``query_mismatch``. Hashes recorded before version 2 covered the
messages alone (:func:`legacy_query_hash`); nothing re-derives a recorded hash, so those
entries still verify, and ``call`` and ``refuse`` entries since say ``"query_v": 2``.

**The query text** a commit states is :func:`query_text` of the committed messages (the last
user message's text): the daemon refuses a commit whose ``query`` says anything else.

**Provenance**: every observation says who asked the target (``by``: the proxy, the matrix, the
runner, an operator, or a client's adapter), the request it answered, and the SHA-256 of the
target's raw response. Observations are recorded by whoever asked the target, never taken from
the predictor or the target.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger.scoring import (
    default_top1,
    normalise_distribution,
    penalty_scores,
    score_prediction,
)
from mindledger.canonical import canonical_json
from mindledger.errors import InputError

__all__ = [
    "FINAL_STATES",
    "OBSERVERS",
    "PREDICTION_VERSION",
    "QUERY_VERSION",
    "REFUSALS",
    "SALT_BYTES",
    "UNHASHED_FIELDS",
    "PredictionState",
    "check_provenance",
    "check_reveal",
    "commit_fields",
    "commit_message",
    "commitment",
    "is_digest",
    "legacy_query_hash",
    "new_salt",
    "parse_time",
    "prediction_body",
    "prediction_id",
    "provenance",
    "query_hash",
    "query_messages",
    "query_text",
    "quick_reveal",
    "response_hash",
    "scores_equal",
    "unlock_refusal",
]

PREDICTION_VERSION = 1
"""Version of the canonical prediction form (the ``v`` key)."""
SALT_BYTES = 32
"""Length of a commitment salt."""
FINAL_STATES = ("scored", "rejected", "expired")
"""States after which nothing more is recorded for a prediction."""
COMMIT_FIELDS = ("predictor", "target", "query", "item", "condition")
"""Fields of a prediction that the commit entry states in the open."""
QUERY_VERSION = 2
"""Version of the canonical query form (the ``v`` key of :func:`query_hash`); version 1
(:func:`legacy_query_hash`) covered the messages only."""
UNHASHED_FIELDS = ("model", "stream", "user")
"""The request fields a query hash leaves out, because none can change the answer: ``model``
(the proxy sends the target's declared model, or none, whatever the call says), ``stream``
(absent or false: the proxy refuses to stream; it shapes the transport, not the answer) and
``user`` (an end-user id for the provider's abuse monitoring). Every other field is hashed."""
OBSERVERS = ("proxy", "matrix", "runner", "operator", "client")
"""Who may record an observation: the component that asked the target, or an operator."""
REFUSALS = {
    "sampled": "the call was sampled for a prediction and carried none",
    "obligation": "an earlier sampled call is still owed a prediction bound to its query, "
    "and this call carries none",
    "wrong_predictor": "the named prediction is another predictor's",
    "wrong_target": "the named prediction is about another target",
    "query_mismatch": "the call (its messages and every field that can change the answer) "
    "does not hash to the committed query",
    "query_asked": "the caller already asked this target this exact query, so it knew the "
    "answer before predicting it",
    "prediction_used": "the named prediction already unlocked a call",
    "prediction_closed": "the named prediction is revealed, rejected or expired",
    "unknown_prediction": "no prediction has the named id",
}
"""Why the query proxy refused a call (the ``reason`` of a ``refuse`` entry)."""
_HEX = frozenset("0123456789abcdef")


def _text(value: Any, where: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and not value):
        raise InputError("expected a non-empty string", where=where)
    return value


def prediction_body(
    *,
    predictor: str,
    target: str,
    query: str,
    distribution: Mapping[str, Any],
    top1: str | None = None,
    rationale: str | None = None,
    own_answer: str | None = None,
    item: str | None = None,
    condition: Any = None,
) -> dict[str, Any]:
    """The canonical prediction (see the module docstring). Raises InputError naming the field
    that is wrong."""
    dist = normalise_distribution(distribution)
    guess = default_top1(dist) if top1 is None else _text(top1, "top1")
    try:
        canonical_json(condition)
    except (TypeError, ValueError):
        raise InputError("must be JSON (no NaN or infinities)", where="condition") from None
    return {
        "v": PREDICTION_VERSION,
        "predictor": _text(predictor, "predictor"),
        "target": _text(target, "target"),
        "query": _text(query, "query"),
        "item": _text(item, "item", optional=True),
        "condition": condition,
        "distribution": dist,
        "top1": guess,
        "rationale": _text(rationale, "rationale", optional=True),
        "own_answer": _text(own_answer, "own_answer", optional=True),
    }


def new_salt() -> bytes:
    """32 random bytes from the operating system's CSPRNG."""
    return secrets.token_bytes(SALT_BYTES)


def commitment(body: Any, salt: bytes) -> str:
    """``sha256:`` + hex SHA-256 of the canonical JSON of ``body`` followed by ``salt``."""
    return "sha256:" + hashlib.sha256(canonical_json(body) + salt).hexdigest()


def prediction_id(commitment_: str) -> str:
    """The id of the prediction with this commitment: ``p`` + its first 20 hex digits."""
    return "p" + commitment_.removeprefix("sha256:")[:20]


def commit_message(payload: Mapping[str, Any]) -> bytes:
    """What an agent signs to commit: the canonical JSON of the commit's open fields, its
    commitment and, when the commit names one, its query hash (the signature itself and the
    service-set deadline excluded)."""
    fields = {k: payload.get(k) for k in (*COMMIT_FIELDS, "commitment")}
    if payload.get("query_hash") is not None:
        fields["query_hash"] = payload["query_hash"]
    return canonical_json(fields)


def commit_fields(body: Mapping[str, Any], commitment_: str) -> dict[str, Any]:
    """The open fields a commit of prediction ``body`` states, with its commitment and the
    query hash of its query as one user message (what :func:`commit_message` signs)."""
    return {
        **{k: body[k] for k in COMMIT_FIELDS},
        "commitment": commitment_,
        "query_hash": query_hash(query_messages(body["query"])),
    }


def query_messages(query: str) -> list[dict[str, str]]:
    """The chat messages of a plain-text query: one user message."""
    return [{"role": "user", "content": query}]


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise InputError("expected a non-empty list of chat messages", where="messages")
    for n, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InputError(
                "expected a JSON object with a string role", where=f"messages[{n}]"
            )


def query_hash(request: Any) -> str:
    """The query hash of a chat ``request`` (a JSON object with ``messages``; anything else is
    taken as the messages of a request with no other field): see the module docstring, a contract
    with test vectors in ``docs/ledger.md``. Raises InputError naming the field that is wrong
    (``messages`` when they are not a non-empty list of JSON objects each with a string
    ``role``)."""
    if not isinstance(request, Mapping):
        request = {"messages": request}
    _check_messages(request.get("messages"))
    hashed = {k: v for k, v in request.items() if k not in UNHASHED_FIELDS}
    try:
        data = canonical_json({"request": hashed, "v": QUERY_VERSION})
    except (TypeError, ValueError):
        raise InputError("expected JSON (no NaN or infinities)", where="request") from None
    return "sha256:" + hashlib.sha256(data).hexdigest()


def legacy_query_hash(messages: Any) -> str:
    """The version 1 query hash, of the messages alone: ``"sha256:" + hex(sha256(
    canonical_json({"messages": messages, "v": 1})))``. The ledger holds such hashes from
    before version 2; nothing new is hashed so (kept to recompute and document them)."""
    _check_messages(messages)
    try:
        data = canonical_json({"messages": messages, "v": 1})
    except (TypeError, ValueError):
        raise InputError("expected JSON (no NaN or infinities)", where="messages") from None
    return "sha256:" + hashlib.sha256(data).hexdigest()


def query_text(messages: Any) -> str:
    """The query a commit of these chat messages states (a contract, ``docs/ledger.md``): the
    content of the last message whose role is ``user`` and whose content is a non-empty
    string; when there is none, the canonical JSON of the messages as text. A plain-text
    query round-trips: ``query_text(query_messages(q)) == q``."""
    _check_messages(messages)
    for m in reversed(messages):
        content = m.get("content")
        if m.get("role") == "user" and isinstance(content, str) and content:
            return content
    try:
        return canonical_json(messages).decode("utf-8")
    except (TypeError, ValueError):
        raise InputError("expected JSON (no NaN or infinities)", where="messages") from None


def is_digest(value: Any) -> bool:
    """Whether ``value`` is ``sha256:`` and 64 lowercase hex digits."""
    return (
        isinstance(value, str)
        and len(value) == 71
        and value.startswith("sha256:")
        and _HEX.issuperset(value[7:])
    )


def response_hash(raw: bytes | str) -> str:
    """``sha256:`` + hex SHA-256 of a target's raw response (text as UTF-8)."""
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    return "sha256:" + hashlib.sha256(data).hexdigest()


def provenance(
    by: str, request: str, response: str | None = None, **extra: Any
) -> dict[str, Any]:
    """The provenance of an observation: ``by`` (one of :data:`OBSERVERS`), the ``request`` it
    answered (an id unique to that request), ``response`` (the :func:`response_hash` of the
    target's raw response, None when there is no raw response to hash) and any further
    JSON fields (``caller``, ``operator``, ``adapter`` …)."""
    if by not in OBSERVERS:
        raise InputError(f"expected one of {', '.join(OBSERVERS)}, got {by!r}", where="by")
    if not isinstance(request, str) or not request or len(request) > 200:
        raise InputError("expected a request id of 1 to 200 characters", where="request")
    if response is not None and not is_digest(response):
        raise InputError("expected sha256: and 64 lowercase hex digits", where="response")
    out = {**extra, "by": by, "request": request, "response": response}
    try:
        canonical_json(out)
    except (TypeError, ValueError):
        raise InputError("provenance must be JSON", where="provenance") from None
    return out


def check_provenance(value: Any) -> str | None:
    """What is wrong with an observation's provenance, or None."""
    if not isinstance(value, dict):
        return "the observation has no provenance"
    if value.get("by") not in OBSERVERS:
        return f"unknown observer {value.get('by')!r}"
    if not isinstance(value.get("request"), str) or not value["request"]:
        return "the provenance names no request"
    if value.get("response") is not None and not is_digest(value["response"]):
        return "the provenance's response hash is malformed"
    return None


def unlock_refusal(
    state: PredictionState, caller: str, target: str, query_hash_: str, now: str | None = None
) -> str | None:
    """Why ``state`` cannot unlock ``caller``'s call to ``target`` whose request hashes to
    ``query_hash_`` (a key of :data:`REFUSALS`), or None when it can."""
    if state.predictor != caller:
        return "wrong_predictor"
    if state.target != target:
        return "wrong_target"
    if state.final or (now is not None and state.overdue(now)):
        return "prediction_closed"
    if state.proxied is not None:
        return "prediction_used"
    if state.query_hash != query_hash_:
        return "query_mismatch"
    return None


def parse_time(value: str) -> dt.datetime:
    """An ISO 8601 time; naive times are taken as UTC."""
    t = dt.datetime.fromisoformat(value)
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


def scores_equal(a: Any, b: Any) -> bool:
    """Whether two score dicts agree (floats to 1e-12 relative, for cross-platform libm)."""
    if not isinstance(a, dict) or not isinstance(b, dict) or a.keys() != b.keys():
        return False
    for k, x in a.items():
        y = b[k]
        if isinstance(x, float) and isinstance(y, float | int) and not isinstance(y, bool):
            if not math.isclose(x, float(y), rel_tol=1e-12, abs_tol=1e-15):
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


def check_reveal(
    commit: Mapping[str, Any], revealed: Any, salt: Any
) -> tuple[bool, str | None, dict[str, float] | None, str | None]:
    """Does ``revealed`` with ``salt`` (hex) open the commitment in ``commit`` (the commit
    entry's payload)? Returns ``(ok, reason, distribution, top1)``; ``reason`` says what is
    wrong when ``ok`` is false."""
    if not isinstance(salt, str):
        return False, "the salt is not a hex string", None, None
    try:
        salt_bytes = bytes.fromhex(salt)
    except ValueError:
        return False, "the salt is not hex", None, None
    if len(salt_bytes) != SALT_BYTES:
        return False, f"the salt is {len(salt_bytes)} bytes, not {SALT_BYTES}", None, None
    if not isinstance(revealed, dict):
        return False, "the revealed prediction is not a JSON object", None, None
    try:
        digest = commitment(revealed, salt_bytes)
    except (TypeError, ValueError):
        return False, "the revealed prediction is not canonical JSON", None, None
    if digest != commit.get("commitment"):
        return False, "the revealed prediction and salt do not hash to the commitment", None, None
    for key in COMMIT_FIELDS:
        if revealed.get(key) != commit.get(key):
            return (
                False,
                f"the revealed prediction's {key} differs from the commit's",
                None,
                None,
            )
    if revealed.get("v") != PREDICTION_VERSION:
        return False, f"unknown prediction version {revealed.get('v')!r}", None, None
    try:
        dist = normalise_distribution(revealed.get("distribution"))
    except InputError as exc:
        return False, f"the committed prediction is invalid: {exc}", None, None
    top1 = revealed.get("top1")
    if not isinstance(top1, str):
        return False, "the committed prediction has no top-1 answer", None, None
    return True, None, dist, top1


def quick_reveal(
    commit: Mapping[str, Any], revealed_json: str, salt: Any
) -> tuple[bool, str | None, None, None]:
    """Does the revealed prediction's canonical *text* with ``salt`` hash to the commitment?
    (The fast verification pass: no parsing, no field checks.)"""
    try:
        digest = (
            "sha256:" + hashlib.sha256(revealed_json.encode() + bytes.fromhex(salt)).hexdigest()
        )
    except (TypeError, ValueError, AttributeError):
        return False, "the salt is not hex", None, None
    if digest != commit.get("commitment"):
        return False, "the revealed prediction and salt do not hash to the commitment", None, None
    return True, None, None, None


@dataclass
class PredictionState:
    """A prediction as the fold of its entries: commit, observe…, then reveal, reject or
    expire. ``apply`` returns what is wrong with an entry (empty when it fits)."""

    id: str
    predictor: str
    target: str
    query: str
    item: str | None
    condition: Any
    commitment: str
    deadline: str
    committed_at: str
    commit_seq: int
    agent_signed: bool
    commit: dict[str, Any] = field(repr=False)
    query_hash: str | None = None
    state: str = "committed"
    observed: list[str] = field(default_factory=list)
    provenance: list[dict[str, Any]] = field(default_factory=list)
    proxied: str | None = None
    """The request id of the proxy call this prediction unlocked (one at most)."""
    revealed: dict[str, Any] | None = None
    scores: dict[str, Any] | None = None
    reason: str | None = None
    final_at: str | None = None

    @classmethod
    def from_commit(
        cls, pid: str, payload: Mapping[str, Any], time: str, seq: int
    ) -> PredictionState:
        return cls(
            id=pid,
            predictor=payload["predictor"],
            target=payload["target"],
            query=payload["query"],
            item=payload.get("item"),
            condition=payload.get("condition"),
            commitment=payload["commitment"],
            deadline=payload["deadline"],
            committed_at=time,
            commit_seq=seq,
            agent_signed=payload.get("agent_signature") is not None,
            commit=payload if isinstance(payload, dict) else dict(payload),
            query_hash=payload.get("query_hash"),
        )

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def overdue(self, now: str) -> bool:
        """Open and past its deadline at ``now``."""
        return not self.final and parse_time(now) > parse_time(self.deadline)

    def effective_state(self, now: str) -> str:
        """The state, with an open prediction past its deadline shown as expired."""
        return "expired" if self.overdue(now) else self.state

    def apply(
        self,
        kind: str,
        payload: Mapping[str, Any],
        time: str,
        *,
        revealed_json: str | None = None,
        strict: bool = False,
    ) -> list[str]:
        """Fold one entry in; return what is wrong with it (empty if it fits).

        ``strict`` (ledger format 2) requires every observation to carry its provenance.

        With ``revealed_json`` (the revealed prediction's canonical text, sliced from a
        ``reveal`` payload) only the commitment, the observations and the deadline of a reveal
        are checked, not its fields and scores: the fast verification pass, where the service's
        signature vouches for what it computed.
        """
        if self.final:
            return [f"{kind} after the prediction was {self.state}"]
        if kind == "observe":
            answer = payload.get("answer")
            if not isinstance(answer, str):
                return ["the observed answer is not a string"]
            problems = []
            if parse_time(time) > parse_time(self.deadline):
                problems.append(f"observed at {time}, after its deadline {self.deadline}")
            source = payload.get("provenance")
            if source is not None or strict:
                wrong = check_provenance(source)
                if wrong is not None or not isinstance(source, dict):
                    problems.append(wrong or "the observation has no provenance")
                else:
                    self.provenance.append(source)
                    if source["by"] == "proxy":
                        if self.proxied not in (None, source["request"]):
                            problems.append("a second call through the proxy was answered")
                        self.proxied = source["request"]
            self.observed.append(answer)
            self.state = "observed"
            return problems
        if kind == "reveal":
            return self._apply_reveal(payload, time, revealed_json)
        if kind == "reject":
            return self._apply_reject(payload, time)
        if kind == "expire":
            problems = []
            if parse_time(time) <= parse_time(self.deadline):
                problems.append(f"expired at {time}, before its deadline {self.deadline}")
            if not scores_equal(payload.get("scores"), penalty_scores(self.observed)):
                problems.append("the recorded penalty is not the worst-case score")
            self.state, self.scores, self.final_at = (
                "expired",
                dict(payload.get("scores") or {}),
                time,
            )
            self.reason = "no reveal before the deadline"
            return problems
        return [f"unknown entry kind {kind!r} for a prediction"]

    def _apply_reveal(
        self, payload: Mapping[str, Any], time: str, revealed_json: str | None
    ) -> list[str]:
        problems: list[str] = []
        revealed, salt = payload.get("revealed"), payload.get("salt")
        if revealed_json is not None:
            ok, reason, dist, top1 = quick_reveal(self.commit, revealed_json, salt)
        else:
            ok, reason, dist, top1 = check_reveal(self.commit, revealed, salt)
        if not ok:
            problems.append(f"reveal mismatch: {reason}")
        if not self.observed:
            problems.append("revealed before any answer was observed")
        if parse_time(time) > parse_time(self.deadline):
            problems.append(f"revealed at {time}, after its deadline {self.deadline}")
        if ok and self.observed and dist is not None and top1 is not None:
            expected = score_prediction(dist, top1, self.observed)
            if not scores_equal(payload.get("scores"), expected):
                problems.append("the recorded scores do not follow from the reveal")
        self.state, self.final_at = "scored", time
        self.revealed = revealed if isinstance(revealed, dict) else None
        self.scores = dict(payload.get("scores") or {})
        return problems

    def _apply_reject(self, payload: Mapping[str, Any], time: str) -> list[str]:
        problems: list[str] = []
        ok, _, _, _ = check_reveal(self.commit, payload.get("revealed"), payload.get("salt"))
        if ok:
            problems.append("reveal mismatch: recorded as rejected, but the reveal matches")
        if not scores_equal(payload.get("scores"), penalty_scores(self.observed)):
            problems.append("the recorded penalty is not the worst-case score")
        self.state, self.final_at = "rejected", time
        self.reason = str(payload.get("reason"))
        self.scores = dict(payload.get("scores") or {})
        return problems

    def to_dict(self, now: str | None = None) -> dict[str, Any]:
        """A plain summary (for ``ledger show`` and the API)."""
        return {
            "id": self.id,
            "state": self.effective_state(now) if now else self.state,
            "predictor": self.predictor,
            "target": self.target,
            "query": self.query,
            "item": self.item,
            "condition": self.condition,
            "commitment": self.commitment,
            "committed_at": self.committed_at,
            "deadline": self.deadline,
            "observed": list(self.observed),
            "provenance": list(self.provenance),
            "query_hash": self.query_hash,
            "proxied": self.proxied,
            "scores": self.scores,
            "reason": self.reason,
            "agent_signed": self.agent_signed,
        }


def observed_answers(states: Sequence[PredictionState]) -> list[str]:
    """All observed answers of the given predictions (helper for population baselines)."""
    return [a for s in states for a in s.observed]
