"""The query proxy's record: ``GET /calls?agent=NAME`` — per caller, its calls, calls with a
prediction, refusals and obligations (opened, met, pending, abandoned). An agent token sees its
own record only."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from starlette.concurrency import run_in_threadpool

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import Query
from harness.daemon.services import Services
from harness.daemon.web import ApiError
from ledger.calls import CallTally, summarise

__all__ = ["ENDPOINTS", "CallsQuery", "calls"]


class CallsQuery(Query):
    agent: str | None = None
    """The caller whose record (an agent token: its own)."""


def as_the_proxy_answered(tally: CallTally) -> CallTally:
    """An agent's own record as the proxy answered its calls: a call that named another
    agent's prediction counts as one that named an unknown prediction, so the record confirms
    no more than the answer did (operators read the reason the ledger recorded)."""
    refusals = Counter(tally.refusals)
    theirs = refusals.pop("wrong_predictor", 0)
    if not theirs:
        return tally
    refusals["unknown_prediction"] += theirs
    return replace(tally, refusals=refusals)


async def calls(services: Services, call: Call[None, CallsQuery, None]) -> dict[str, Any]:
    principal, who = call.caller, call.query.agent
    if not principal.is_operator:
        own = principal.agent
        if who not in (None, own):
            raise ApiError(403, "forbidden", f"this token sees {own!r}'s calls only", field="agent")
        who = own
    ledger = services.ledger
    tallies = await run_in_threadpool(ledger.calls, who)
    if not principal.is_operator:
        tallies = [as_the_proxy_answered(t) for t in tallies]
    head = await run_in_threadpool(ledger.head)
    as_of = None if head is None else head.time  # obligations age by the ledger's time
    return {
        "agents": summarise(tallies, as_of),
        "pairs": [t.to_dict(as_of) for t in tallies],
        "prediction_share": services.settings.prediction_share,
        "as_of": as_of,
    }


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET",
        "/calls",
        calls,
        "the query proxy's record per agent",
        query=CallsQuery,
        errors=(403,),
    ),
)
