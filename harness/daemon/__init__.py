"""The daemon (``mindledger serve``): the scheduler, the HTTP API and the query proxy in one
long-running process. See DESIGN.md, "The daemon"."""

from harness.daemon.api import create_app
from harness.daemon.proxy import PREDICTION_HEADER, Proxy, answer_text, sample_point
from harness.daemon.scheduler import DaemonContext, DaemonScheduler, nightly_agents
from harness.daemon.server import BackgroundServer, Daemon, build_daemon
from harness.daemon.tokens import agent_for_token, create_token, hash_token
from harness.daemon.web import ApiError

__all__ = [
    "PREDICTION_HEADER",
    "ApiError",
    "BackgroundServer",
    "Daemon",
    "DaemonContext",
    "DaemonScheduler",
    "Proxy",
    "agent_for_token",
    "answer_text",
    "build_daemon",
    "create_app",
    "create_token",
    "hash_token",
    "nightly_agents",
    "sample_point",
]
