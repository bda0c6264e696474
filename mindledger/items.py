"""The :class:`Item`: one frozen, fully ground-truthed test question, and the :class:`Score`
a family's pure scorer gives one answer to it.

An item is regenerated from ``(generator, version, seed, params)`` and its stored copy must match
bit for bit; its id is the :func:`~mindledger.canonical.content_hash` of its canonical dict
without the id. Everything here is JSON-compatible so that items travel as JSON Lines and are
stored as canonical JSON.

Answer specs (``Item.answer``) say what form an answer takes, so that the harness can build a
tool schema, a ``response_format`` schema and a free-text parser from them:

- ``{"kind": "choice", "choices": ["drawer", "safe", ...]}`` — one of the strings;
- ``{"kind": "integer", "min": 11, "max": 20}`` — an integer in the closed range;
- ``{"kind": "yesno"}`` — ``"yes"`` or ``"no"``;
- ``{"kind": "distribution", "choices": [...]}`` — a probability per choice (summing to 1).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from mindledger.canonical import content_hash

__all__ = ["Item", "Score"]


@dataclass(frozen=True)
class Item:
    """One test question with its exact ground truth.

    Fields:
        id: ``sha256:…`` of the canonical form of every other field.
        family: which scorer judges it (``"nesttom"``, ``"games"``, ``"hitom"``, ...).
        generator, version: the generator's name and version string.
        seed: the seed it was generated from; params: the generator's other parameters.
        prompt: the user message the agent sees.
        answer: the answer spec (see the module docstring).
        truth: the ground truth and everything the scorer needs (prefix answers, IDR sequence...).
        meta: factor values used to group results (depth label, belief type, game, condition...).
        tools: extra tools the agent may call, as OpenAI function specs; the harness answers a
            call of tool ``name`` with ``tool_results[name]``.
    """

    family: str
    generator: str
    version: str
    seed: int
    params: Mapping[str, Any]
    prompt: str
    answer: Mapping[str, Any]
    truth: Mapping[str, Any]
    meta: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_results: Mapping[str, str] = field(default_factory=dict)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", content_hash(self._body()))

    def _body(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "generator": self.generator,
            "version": self.version,
            "seed": self.seed,
            "params": dict(self.params),
            "prompt": self.prompt,
            "answer": dict(self.answer),
            "truth": dict(self.truth),
            "meta": dict(self.meta),
            "tools": [dict(t) for t in self.tools],
            "tool_results": dict(self.tool_results),
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the body plus ``id``."""
        return {"id": self.id, **self._body()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Item:
        """Rebuild an item from :meth:`to_dict` output; the id is recomputed and checked."""
        body = {k: data[k] for k in data if k != "id"}
        body["tools"] = tuple(body.get("tools", ()))
        item = cls(**body)
        if data.get("id") and data["id"] != item.id:
            raise ValueError(f"item id {data['id']} does not match its content ({item.id})")
        return item

    @classmethod
    def from_json(cls, text: str | bytes, *, loads: Callable[[bytes], Any] = json.loads) -> Item:
        """Rebuild an item from its JSON (as stored: the canonical JSON of :meth:`to_dict`);
        the id is checked, as by :meth:`from_dict` (ValueError when it does not match).

        Checked cheaply when the text is canonical. Its keys are sorted, so ``"id"`` is never
        first, and the text is the canonical body (the bytes the id hashes) with the member
        ``,"id":"sha256:…"`` inserted: without that member, the text hashes to the id (a
        SHA-256 over the bytes, microseconds) and the item is parsed from the very bytes that
        were hashed, with no need to re-encode it (which costs more than parsing), and built
        from the parsed fields without the constructor's per-field work. Any other text (not
        canonical, or whose content does not hash to its id) is parsed and re-encoded by
        :meth:`from_dict`.

        ``loads`` parses those bytes: :func:`json.loads` unless a faster parser is given, which
        must return exactly what :func:`json.loads` returns for them, or raise as it does.
        """
        raw = text.encode("utf-8") if isinstance(text, str) else text
        member = _ID_MEMBER.search(raw)
        if member is not None:
            body = raw[: member.start()] + raw[member.end() :]
            digest = member.group(1)
            if hashlib.sha256(body).hexdigest().encode("ascii") == digest:
                parsed = loads(body)
                if isinstance(parsed, dict) and isinstance(parsed.get("tools"), list):
                    parsed["tools"] = tuple(parsed["tools"])
                    item_id = "sha256:" + digest.decode("ascii")
                    if cls is Item and parsed.keys() == _BODY_FIELDS:
                        # every field and nothing else: set as the constructor sets them, in
                        # their order, without its frozen-dataclass detour per field (and the
                        # id needs no hashing)
                        item = object.__new__(cls)
                        state = item.__dict__
                        for name in _BODY_ORDER:
                            state[name] = parsed[name]
                        state["id"] = item_id
                        return item
                    return cls(**parsed, id=item_id)
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError(f"an item is a JSON object, not {type(data).__name__}")
        return cls.from_dict(data)

    def verify(self) -> list[str]:
        """Return what is wrong with this item's identity (empty when its id matches)."""
        expected = content_hash(self._body())
        return [] if expected == self.id else [f"{self.id}: content hashes to {expected}"]


_BODY_ORDER = tuple(f.name for f in fields(Item) if f.name != "id")
"""The members of an item's canonical body (:meth:`Item.to_dict` without ``id``), in the
order of the fields."""
_BODY_FIELDS = frozenset(_BODY_ORDER)

_ID_MEMBER = re.compile(rb',"id":"sha256:([0-9a-f]{64})"')
"""The id's member in an item's canonical JSON (:meth:`Item.from_json`); a ``"`` right after a
comma is never inside a string (a string's quotes are escaped), so this is a key."""


@dataclass(frozen=True)
class Score:
    """A pure scorer's verdict on one answer.

    Fields:
        correct: exact correctness (the primary accuracy); ``None`` when one answer cannot be
            judged on its own — it is scored at report time against other trials of the run
            (an A/B/C prediction of the run's own LLM population, a population play).
        value: a number in [0, 1] for partial credit where a family has one (else 1.0/0.0).
        error_codes: every error code that matches a wrong answer (empty when correct).
        primary_error: the first matching code in the family's priority order, or None.
        details: family-specific extra fields (within-one accuracy, K_B, log score ...).
    """

    correct: bool | None
    value: float
    error_codes: tuple[str, ...] = ()
    primary_error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "value": self.value,
            "error_codes": list(self.error_codes),
            "primary_error": self.primary_error,
            "details": dict(self.details),
        }
