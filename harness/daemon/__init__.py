"""The daemon (``mindledger serve``): the scheduler, the HTTP API and the query proxy in one
long-running process. See DESIGN.md, "The daemon"."""

from harness.daemon.api import create_app
from harness.daemon.proxy import PREDICTION_HEADER, Proxy, answer_text, system_draw
from harness.daemon.scheduler import DaemonContext, DaemonScheduler, nightly_agents
from harness.daemon.server import BackgroundServer, Daemon, build_daemon
from harness.daemon.tokens import (
    SCOPES,
    Principal,
    Scope,
    TokenInfo,
    agent_for_token,
    authenticate,
    claim_run_request,
    create_token,
    hash_token,
    list_tokens,
    open_run_requests,
    record_run_request,
    release_run_request,
    revoke_token,
    token_id_of,
)
from harness.daemon.web import ApiError

__all__ = [
    "PREDICTION_HEADER",
    "SCOPES",
    "ApiError",
    "BackgroundServer",
    "Daemon",
    "DaemonContext",
    "DaemonScheduler",
    "Principal",
    "Proxy",
    "Scope",
    "TokenInfo",
    "agent_for_token",
    "answer_text",
    "authenticate",
    "build_daemon",
    "claim_run_request",
    "create_app",
    "create_token",
    "hash_token",
    "list_tokens",
    "nightly_agents",
    "open_run_requests",
    "record_run_request",
    "release_run_request",
    "revoke_token",
    "system_draw",
    "token_id_of",
]
