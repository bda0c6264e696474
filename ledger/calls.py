"""The query proxy's record: every call it forwarded and every call it refused, per caller and
target, and the obligations that follow (pure; folded from ``call`` and ``refuse`` entries).

A caller's call to a target is *sampled* by the service's own randomness; a sampled call that
carries no prediction is refused (``refuse``, reason ``sampled``) and opens an **obligation**
bound to that call's query hash: the caller owes the target a prediction of *that* query. It is
**met** only when a call of that query carries a prediction bound to it and the target answers
(a ``call`` entry naming the prediction, ``answered`` true, the same ``query_hash``); a
prediction of any other query unlocks its own call and leaves the obligation open. While it is
open, every call of that caller to that target without a prediction is refused (reason
``obligation``), so a caller that never comes back to the sampled query gets no unpredicted
answer from that target again and has at most one obligation open per target. A prediction never
unlocks a query the caller already put to that target (reason ``query_asked``): its answer was
known. Nothing else — no change of fields, whitespace, headers or connection — closes an
obligation, and because the record is folded from the ledger it survives restarts and anyone
holding an export can recount it.

An obligation still open :data:`ABANDON_AFTER` (24 hours) after its sampled call, measured
against the time of the ledger's last entry (so the count is a function of the ledger alone and
every verifier of it gets the same one), is **abandoned**: opened = met + pending + abandoned.
An abandoned obligation met later counts as met. Obligations opened by refusals recorded before
obligations were bound to a query (no ``query_v``) are met, as then, by any answered call that
carried a prediction.

Payloads (subject ``agent:<caller>``):

- ``call``: ``caller``, ``target``, ``request`` (id), ``query_hash``, ``prediction`` (id or
  null), ``status`` (the target's HTTP status, or 502 when it did not answer), ``answered``
  (an answer was recorded), ``response`` (SHA-256 of the raw response, or null), ``query_v``
  (2: the query hash covers the whole request; absent in older entries: the messages only);
- ``refuse``: ``caller``, ``target``, ``request``, ``query_hash`` (null when the body had no
  messages), ``prediction`` (the id named, or null), ``reason`` (see
  :data:`~ledger.protocol.REFUSALS`), ``query_v`` (as for ``call``).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.protocol import REFUSALS, is_digest, parse_time
from mindledger.words import counted

__all__ = [
    "ABANDON_AFTER",
    "CallTally",
    "Calls",
    "Obligation",
    "QueryHashes",
    "check_call",
    "check_refusal",
    "obligation_warnings",
    "summarise",
]

ABANDON_AFTER = dt.timedelta(hours=24)
"""How long after its sampled call an obligation still open counts as abandoned (the default
reveal window: as long as a prediction committed then would have had to be revealed)."""


@dataclass(frozen=True)
class Obligation:
    """A prediction owed: the sampled refusal (entry ``seq`` at ``time``) of a call whose query
    hash is ``query_hash`` (None for one recorded before obligations were bound to a query)."""

    seq: int
    time: str
    query_hash: str | None

    def met_by(self, query_hash: str) -> bool:
        """Whether an answered call of ``query_hash`` carrying a prediction meets it."""
        return self.query_hash is None or self.query_hash == query_hash

    def abandoned(self, as_of: str | None, after: dt.timedelta = ABANDON_AFTER) -> bool:
        """Whether it was still open ``after`` its sampled call at ``as_of`` (None, or a time
        that is not ISO 8601 in a ledger being diagnosed: not abandoned)."""
        if as_of is None:
            return False
        try:
            return parse_time(as_of) - parse_time(self.time) > after
        except (TypeError, ValueError):
            return False


class QueryHashes:
    """A set of query hashes (``sha256:`` and 64 hex digits) held as their 32-byte digests in one
    sorted byte string, the latest few in a small set until they are merged in: ~32 bytes a hash
    where a set of their text takes ~160. The proxy keeps every query a target answered for as
    long as it runs (the ``query_asked`` rule), so this is what that memory grows by. A hash in
    any other form is kept as it is, in a set of its own."""

    __slots__ = ("_other", "_recent", "_sorted")

    WIDTH = 32

    def __init__(self, hashes: Iterable[str] = ()) -> None:
        self._sorted = b""
        """The merged digests, sorted, each :attr:`WIDTH` bytes."""
        self._recent: set[bytes] = set()
        """Digests added since the last merge."""
        self._other: set[str] = set()
        """Hashes not in the ``sha256:`` form, as given."""
        for h in hashes:
            self.add(h)

    @staticmethod
    def _digest(query_hash: str) -> bytes | None:
        if len(query_hash) == 71 and query_hash.startswith("sha256:"):
            try:
                return bytes.fromhex(query_hash[7:])
            except ValueError:
                return None
        return None

    def add(self, query_hash: str) -> None:
        d = self._digest(query_hash)
        if d is None:
            self._other.add(query_hash)
            return
        if d in self._recent or self._merged(d):
            return
        self._recent.add(d)
        if len(self._recent) >= max(256, len(self._sorted) // (8 * self.WIDTH)):
            self._merge()

    def _merged(self, d: bytes) -> bool:
        w, blob = self.WIDTH, self._sorted
        lo, hi = 0, len(blob) // w
        while lo < hi:  # binary search over the fixed-width records
            mid = (lo + hi) // 2
            rec = blob[mid * w : (mid + 1) * w]
            if rec == d:
                return True
            if rec < d:
                lo = mid + 1
            else:
                hi = mid
        return False

    def _merge(self) -> None:
        w, blob = self.WIDTH, self._sorted
        merged = sorted([blob[i : i + w] for i in range(0, len(blob), w)] + list(self._recent))
        self._sorted, self._recent = b"".join(merged), set()

    def __contains__(self, query_hash: object) -> bool:
        if not isinstance(query_hash, str):
            return False
        d = self._digest(query_hash)
        if d is None:
            return query_hash in self._other
        return d in self._recent or self._merged(d)

    def __len__(self) -> int:
        return len(self._sorted) // self.WIDTH + len(self._recent) + len(self._other)

    def __iter__(self) -> Iterator[str]:
        w, blob = self.WIDTH, self._sorted
        for i in range(0, len(blob), w):
            yield "sha256:" + blob[i : i + w].hex()
        for d in self._recent:
            yield "sha256:" + d.hex()
        yield from self._other

    def __repr__(self) -> str:
        return f"<QueryHashes: {len(self)}>"


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
    obligation: Obligation | None = None
    """The prediction still owed (None: nothing owed)."""
    opened: int = 0
    """Obligations opened (sampled calls that came without a prediction)."""
    met: int = 0
    """Obligations met by a prediction bound to their query."""
    asked: QueryHashes = field(default_factory=QueryHashes)
    """Query hashes of the calls the target answered (status 200): a prediction of one of them
    would be made knowing its answer."""

    @property
    def refused(self) -> int:
        return sum(self.refusals.values())

    @property
    def sampled(self) -> int:
        """Calls the service sampled that came without a prediction."""
        return self.refusals.get("sampled", 0)

    def to_dict(self, as_of: str | None = None) -> dict[str, Any]:
        """The pair's record; ``as_of`` (the ledger's last entry's time) decides whether an
        open obligation is abandoned."""
        ob = self.obligation
        return {
            "caller": self.caller,
            "target": self.target,
            "calls": self.calls,
            "predicted": self.predicted,
            "unpredicted": self.calls - self.predicted,
            "refused": self.refused,
            "refusals": dict(sorted(self.refusals.items())),
            "obligation_open": ob is not None,
            "obligation_since": None if ob is None else ob.seq,
            "obligation_opened_at": None if ob is None else ob.time,
            "obligation_query_hash": None if ob is None else ob.query_hash,
            "obligation_abandoned": ob is not None and ob.abandoned(as_of),
            "obligations_opened": self.opened,
            "obligations_met": self.met,
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
        return "a call names its query hash"
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
    """The fold of ``call`` and ``refuse`` entries into one tally per (caller, target).

    ``asked=False`` keeps counts only: no answered queries (:attr:`CallTally.asked`), so a
    prediction that unlocked an answered query is not among the problems :meth:`apply` returns
    (the daemon's metrics, which fold the whole ledger and keep the fold, need counts only)."""

    def __init__(self, *, asked: bool = True) -> None:
        self.tallies: dict[tuple[str, str], CallTally] = {}
        self.keeps_asked = asked

    def tally(self, caller: str, target: str) -> CallTally:
        key = (caller, target)
        t = self.tallies.get(key)
        if t is None:
            t = self.tallies[key] = CallTally(caller, target)
        return t

    def apply(self, seq: int, kind: str, payload: Mapping[str, Any], time: str) -> list[str]:
        """Fold in one well-formed ``call`` or ``refuse`` entry (entry ``seq`` at ``time``);
        return what breaks the proxy's rules (a call forwarded without a prediction while one
        was owed)."""
        t = self.tally(str(payload["caller"]), str(payload["target"]))
        version = payload.get("query_v")
        bound = type(version) is int and version >= 2  # obligations bound to the query
        if kind == "refuse":
            reason = str(payload["reason"])
            t.refusals[reason] += 1
            if reason == "sampled" and t.obligation is None:
                qh = payload.get("query_hash")
                t.obligation = Obligation(seq, time, str(qh) if bound and qh else None)
                t.opened += 1
            return []
        t.calls += 1
        problems = []
        query = str(payload["query_hash"])
        seen = query in t.asked
        if payload.get("status") == 200 and self.keeps_asked:  # the caller saw the answer
            t.asked.add(query)
        if payload.get("prediction") is None:
            if t.obligation is not None:
                problems.append(
                    f"a call forwarded without a prediction while {t.caller!r} owed one to "
                    f"{t.target!r} (since entry {t.obligation.seq})"
                )
            return problems
        t.predicted += 1
        if seen:
            problems.append(
                f"a prediction unlocked a call {t.caller!r} had already made to {t.target!r}"
            )
        if payload.get("answered") and t.obligation is not None and t.obligation.met_by(query):
            t.obligation = None
            t.met += 1
        return problems

    def by_caller(self, caller: str | None = None) -> list[CallTally]:
        """The tallies (of one caller), ordered by caller and target."""
        return [
            t
            for key, t in sorted(self.tallies.items())
            if caller is None or key[0] == caller
        ]


def summarise(
    tallies: list[CallTally], as_of: str | None = None
) -> dict[str, dict[str, Any]]:
    """Per caller: calls, predicted, refused, refusals by reason, open obligations (the targets
    still owed a prediction) and the obligations' counts — opened, met, pending and abandoned
    (open past :data:`ABANDON_AFTER` at ``as_of``, the time of the ledger's last entry)."""
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
                "obligations": {"opened": 0, "met": 0, "pending": 0, "abandoned": 0},
                "abandoned_obligations": [],
            },
        )
        row["calls"] += t.calls
        row["predicted"] += t.predicted
        row["unpredicted"] += t.calls - t.predicted
        row["refused"] += t.refused
        row["refusals"].update(t.refusals)
        counts = row["obligations"]
        counts["opened"] += t.opened
        counts["met"] += t.met
        if t.obligation is not None:
            row["open_obligations"].append(t.target)
            if t.obligation.abandoned(as_of):
                counts["abandoned"] += 1
                row["abandoned_obligations"].append(
                    {
                        "target": t.target,
                        "since": t.obligation.seq,
                        "opened_at": t.obligation.time,
                        "query_hash": t.obligation.query_hash,
                    }
                )
            else:
                counts["pending"] += 1
    for row in out.values():
        row["refusals"] = dict(sorted(row["refusals"].items()))
    return out


def obligation_warnings(calls: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per caller that abandoned an obligation (a :func:`summarise` result): what a
    verification reports beside its result, not as a failure of the chain."""
    lines = []
    for caller, row in sorted(calls.items()):
        counts = row.get("obligations") or {}
        if not counts.get("abandoned"):
            continue
        owed = ", ".join(
            f"{a['target']} since entry {a['since']}" for a in row["abandoned_obligations"]
        )
        lines.append(
            f"{caller!r} abandoned {counted(counts['abandoned'], 'obligation')}: a sampled call still not "
            f"predicted {_hours(ABANDON_AFTER)} later ({owed}); obligations opened "
            f"{counts['opened']}, met {counts['met']}, pending {counts['pending']}, abandoned "
            f"{counts['abandoned']}"
        )
    return lines


def _hours(span: dt.timedelta) -> str:
    return f"{span.total_seconds() / 3600:g} h"
