"""The ledger as a transparency log: ``GET /ledger/head``, ``GET /ledger/proof?seq=N&size=M``
(inclusion of entry N in the first M) and ``GET /ledger/consistency?old=M&new=N``. Any token
reads them alike: hashes and proofs, never an entry's body."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import Query, WholeNumber
from harness.daemon.services import Services
from harness.daemon.web import ApiError

__all__ = ["ENDPOINTS", "consistency", "inclusion", "tree_head"]


class ProofQuery(Query):
    seq: WholeNumber
    """The entry."""
    size: WholeNumber | None = None
    """The tree size (default: all)."""


class ConsistencyQuery(Query):
    old: WholeNumber
    """The earlier tree size."""
    new: WholeNumber | None = None
    """The later tree size (default: all)."""


async def tree_head(services: Services, call: Call[None, None, None]) -> dict[str, Any]:
    head = await run_in_threadpool(services.ledger.tree_head)
    if head is None:
        raise ApiError(404, "not_found", "the ledger is empty: there is no head yet")
    return head.to_dict()


async def inclusion(services: Services, call: Call[None, ProofQuery, None]) -> dict[str, Any]:
    q = call.query
    return await run_in_threadpool(services.ledger.inclusion_proof, q.seq, q.size)


async def consistency(
    services: Services, call: Call[None, ConsistencyQuery, None]
) -> dict[str, Any]:
    q = call.query
    return await run_in_threadpool(services.ledger.consistency_proof, q.old, q.new)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/ledger/head", tree_head, "the latest signed tree head", errors=(404,)),
    Endpoint(
        "GET", "/ledger/proof", inclusion, "an inclusion proof", query=ProofQuery, errors=(404,)
    ),
    Endpoint(
        "GET",
        "/ledger/consistency",
        consistency,
        "a consistency proof",
        query=ConsistencyQuery,
        errors=(404,),
    ),
)
