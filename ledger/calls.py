"""The query proxy's record: every call it forwarded and every call it refused, per caller and
target, and the obligations that follow (pure; folded from ``call`` and ``refuse`` entries).

A caller's call to a target is *sampled* by the service's own randomness; a sampled call that
carries no prediction is refused (``refuse``, reason ``sampled``) and opens an **obligation** on
(caller, target): every later call of that caller to that target is refused (reason
``obligation``) until one carries a matching prediction and the target answers it (a ``call``
entry naming the prediction, ``answered`` true). A prediction never unlocks a query the caller
already put to that target (reason ``query_asked``): its answer was known. Nothing else — no change of fields, whitespace,
headers or connection — closes an obligation, and because the record is folded from the ledger
it survives restarts and anyone holding an export can recount it.

Payloads (subject ``agent:<caller>``):

- ``call``: ``caller``, ``target``, ``request`` (id), ``query_hash``, ``prediction`` (id or
  null), ``status`` (the target's HTTP status, or 502 when it did not answer), ``answered``
  (an answer was recorded), ``response`` (SHA-256 of the raw response, or null);
- ``refuse``: ``caller``, ``target``, ``request``, ``query_hash`` (null when the body had no
  messages), ``prediction`` (the id named, or null), ``reason`` (see
  :data:`~ledger.protocol.REFUSALS`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.protocol import REFUSALS, is_digest

__all__ = ["CallTally", "Calls", "check_call", "check_refusal", "summarise"]


@dataclass
class CallTally:
    """One (caller, target) pair's record."""

    caller: str
    target: str
    calls: int = 0
    """Calls forwarded to the target."""
    predicted: int = 0
    """Forwarded calls that carried a prediction."""
    refusals: Counter[str] = field(default_factory=Counter)
    """Refused calls, by reason."""
    obligation: int | None = None
    """The seq of the sampled refusal still owed a prediction (None: nothing owed)."""
    asked: set[str] = field(default_factory=set)
    """Query hashes of the calls the target answered (status 200): a prediction of one of them
    would be made knowing its answer."""

    @property
    def refused(self) -> int:
        return sum(self.refusals.values())

    @property
    def sampled(self) -> int:
        """Calls the service sampled that came without a prediction."""
        return self.refusals.get("sampled", 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "caller": self.caller,
            "target": self.target,
            "calls": self.calls,
            "predicted": self.predicted,
            "unpredicted": self.calls - self.predicted,
            "refused": self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "obligation_open": self.obligation is not None,
            "obligation_since": self.obligation,
        }


def _caller(subject: str) -> str | None:
    return subject[6:] if subject.startswith("agent:") and len(subject) > 6 else None


def check_call(subject: str, payload: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``call`` entry's form, or None."""
    caller = _caller(subject)
    if caller is None or payload.get("caller") != caller:
        return "a call's subject must be agent:<its caller>"
    if not isinstance(payload.get("target"), str) or not isinstance(payload.get("request"), str):
        return "a call names its target and request"
    if not is_digest(payload.get("query_hash")):
        return "a call names the query hash of its messages"
    pid = payload.get("prediction")
    if pid is not None and not isinstance(pid, str):
        return "a call's prediction is an id or null"
    if type(payload.get("status")) is not int or not isinstance(payload.get("answered"), bool):
        return "a call records the target's status and whether it was answered"
    if payload["answered"] and not is_digest(payload.get("response")):
        return "an answered call records the hash of the target's response"
    return None


def check_refusal(subject: str, payload: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``refuse`` entry's form, or None."""
    caller = _caller(subject)
    if caller is None or payload.get("caller") != caller:
        return "a refusal's subject must be agent:<its caller>"
    if not isinstance(payload.get("target"), str) or not isinstance(payload.get("request"), str):
        return "a refusal names its target and request"
    if payload.get("reason") not in REFUSALS:
        return f"unknown refusal reason {payload.get('reason')!r}"
    qh = payload.get("query_hash")
    if qh is not None and not is_digest(qh):
        return "a refusal's query hash is malformed"
    return None


class Calls:
    """The fold of ``call`` and ``refuse`` entries into one tally per (caller, target)."""

    def __init__(self) -> None:
        self.tallies: dict[tuple[str, str], CallTally] = {}

    def tally(self, caller: str, target: str) -> CallTally:
        key = (caller, target)
        t = self.tallies.get(key)
        if t is None:
            t = self.tallies[key] = CallTally(caller, target)
        return t

    def apply(self, seq: int, kind: str, payload: Mapping[str, Any]) -> list[str]:
        """Fold in one well-formed ``call`` or ``refuse`` entry; return what breaks the
        proxy's rules (a call forwarded without a prediction while one was owed)."""
        t = self.tally(str(payload["caller"]), str(payload["target"]))
        if kind == "refuse":
            reason = str(payload["reason"])
            t.refusals[reason] += 1
            if reason == "sampled" and t.obligation is None:
                t.obligation = seq
            return []
        t.calls += 1
        problems = []
        query = str(payload["query_hash"])
        seen = query in t.asked
        if payload.get("status") == 200:  # the caller saw the target's answer
            t.asked.add(query)
        if payload.get("prediction") is None:
            if t.obligation is not None:
                problems.append(
                    f"a call forwarded without a prediction while {t.caller!r} owed one to "
                    f"{t.target!r} (since entry {t.obligation})"
                )
            return problems
        t.predicted += 1
        if seen:
            problems.append(
                f"a prediction unlocked a call {t.caller!r} had already made to {t.target!r}"
            )
        if payload.get("answered"):
            t.obligation = None
        return problems

    def by_caller(self, caller: str | None = None) -> list[CallTally]:
        """The tallies (of one caller), ordered by caller and target."""
        return [
            t
            for key, t in sorted(self.tallies.items())
            if caller is None or key[0] == caller
        ]


def summarise(tallies: list[CallTally]) -> dict[str, dict[str, Any]]:
    """Per caller: calls, predicted, refused, refusals by reason and open obligations (the
    targets still owed a prediction)."""
    out: dict[str, dict[str, Any]] = {}
    for t in tallies:
        row = out.setdefault(
            t.caller,
            {
                "calls": 0,
                "predicted": 0,
                "unpredicted": 0,
                "refused": 0,
                "refusals": Counter(),
                "open_obligations": [],
            },
        )
        row["calls"] += t.calls
        row["predicted"] += t.predicted
        row["unpredicted"] += t.calls - t.predicted
        row["refused"] += t.refused
        row["refusals"].update(t.refusals)
        if t.obligation is not None:
            row["open_obligations"].append(t.target)
    for row in out.values():
        row["refusals"] = dict(sorted(row["refusals"].items()))
    return out
