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
    "PREDICTION_VERSION",
    "SALT_BYTES",
    "PredictionState",
    "check_reveal",
    "commit_message",
    "commitment",
    "new_salt",
    "parse_time",
    "prediction_body",
    "prediction_id",
    "quick_reveal",
    "scores_equal",
]

PREDICTION_VERSION = 1
"""Version of the canonical prediction form (the ``v`` key)."""
SALT_BYTES = 32
"""Length of a commitment salt."""
FINAL_STATES = ("scored", "rejected", "expired")
"""States after which nothing more is recorded for a prediction."""
COMMIT_FIELDS = ("predictor", "target", "query", "item", "condition")
"""Fields of a prediction that the commit entry states in the open."""


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
    """What an agent signs to commit: the canonical JSON of the commit's open fields and its
    commitment (the signature itself and the service-set deadline excluded)."""
    return canonical_json({k: payload.get(k) for k in (*COMMIT_FIELDS, "commitment")})


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
    state: str = "committed"
    observed: list[str] = field(default_factory=list)
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
    ) -> list[str]:
        """Fold one entry in; return what is wrong with it (empty if it fits).

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
            self.observed.append(answer)
            self.state = "observed"
            return []
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
            "scores": self.scores,
            "reason": self.reason,
            "agent_signed": self.agent_signed,
        }


def observed_answers(states: Sequence[PredictionState]) -> list[str]:
    """All observed answers of the given predictions (helper for population baselines)."""
    return [a for s in states for a in s.observed]
