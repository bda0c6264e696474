"""The caller's token: ``GET /whoami``. (Tokens are made, listed and revoked at the machine,
``mindledger serve token``, never through the API: :mod:`harness.daemon.access`.)"""

from __future__ import annotations

from harness.daemon.endpoint import Call, Endpoint
from harness.daemon.models import Model
from harness.daemon.services import Services
from harness.daemon.tokens import Scope

__all__ = ["ENDPOINTS", "Whoami", "whoami"]


class Whoami(Model):
    token: str
    """The token's id (not the token)."""
    scope: Scope
    agent: str | None
    """The agent an agent token acts as (None for an operator token)."""
    label: str | None


async def whoami(services: Services, call: Call[None, None, None]) -> Whoami:
    who = call.caller
    return Whoami(token=who.token_id, scope=who.scope, agent=who.agent, label=who.label)


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET", "/whoami", whoami, "the token's id, scope and agent", answer=Whoami),
)
