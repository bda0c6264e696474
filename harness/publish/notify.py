"""Regression notifications: check an agent's history after a run and announce what regressed.

:func:`notify_regressions` builds the agent's history (:func:`reports.history.agent_history`),
takes the figures that *became* flagged on the run (:meth:`~reports.history.AgentHistory.
new_regressions`) and, when there are any, delivers one JSON payload (:func:`payload`) to each
channel of ``settings.notify``:

- ``webhook``: POSTed as ``application/json``; a connection error, a timeout, a 429 or a 5xx is
  tried again (``attempts`` in all, waiting 1, 2, 4 … s between them), any other status fails at
  once;
- ``command``: run with the payload on stdin; exit status 0 is success.

Every delivery is recorded (``notifications``: sent or failed, attempts, the error), at most one
per (agent, run, channel): checking the same run again sends nothing twice.

A nightly run that *failed* (:func:`run_failure`: it did not end complete, or an agent's API
errors passed ``max_failure_share``; or the nightly job raised) is announced the same way by
:func:`notify_run_failed` (``event: "run_failed"``, :data:`RUN_FAILED_SCHEMA`), recorded on
channels named ``webhook:run-failed`` and ``command:run-failed`` (once per run; a job that
raised before its run was stored is delivered and logged, not recorded). Nothing here raises
for a failed delivery; the daemon calls it after each scheduled run
(:meth:`harness.daemon.scheduler.DaemonContext.check_regressions`) and ``mindledger history
AGENT --notify`` outside it.
"""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from harness.config.notify_config import NotifyConfig, webhook_target
from harness.config.settings import Settings
from ledger.store import Store
from mindledger.canonical import canonical_json
from mindledger.secrets import scrub
from reports.history import DEFAULT_RULE, AgentHistory, Regression, agent_history

__all__ = [
    "PAYLOAD_SCHEMA",
    "RUN_FAILED_SCHEMA",
    "Delivery",
    "deliver",
    "notify_regressions",
    "notify_run_failed",
    "payload",
    "run_failure",
]

log = logging.getLogger("mindledger.notify")

PAYLOAD_SCHEMA = "mindledger.regression/1"
RUN_FAILED_SCHEMA = "mindledger.run-failed/1"
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Delivery:
    """One notification as recorded: the channel, where it went (no secrets), sent or failed,
    the attempts made and the last error; ``recorded`` False when this run had one already
    (nothing was sent again)."""

    channel: str
    target: str
    status: str
    attempts: int
    error: str | None = None
    recorded: bool = True


def payload(history: AgentHistory, run_id: str, regressions: Sequence[Regression]
            ) -> dict[str, Any]:
    """The JSON document a webhook receives and a command reads on stdin."""
    run = next(r for r in history.runs if r.id == run_id)
    return {
        "schema": PAYLOAD_SCHEMA,
        "event": "regression",
        "agent": history.agent,
        "run": run.to_dict(),
        "regressions": [r.to_dict() for r in regressions],
        "rule": history.rule.to_dict(),
        "summary": f"{history.agent}: "
        + "; ".join(f"{r.metric.title} {r.point.text}" for r in regressions)
        + f" on run {run_id}",
    }


def _post(url: str, body: bytes, cfg: NotifyConfig, transport: httpx.BaseTransport | None,
          sleep: Callable[[float], None]) -> tuple[bool, int, str | None]:
    error: str | None = None
    target = webhook_target(url)
    with httpx.Client(transport=transport, timeout=cfg.timeout) as client:
        for attempt in range(1, cfg.attempts + 1):
            retry = True
            try:
                r = client.post(url, content=body,
                                headers={"Content-Type": "application/json",
                                         "User-Agent": "mindledger-notify"})
                if 200 <= r.status_code < 300:
                    return True, attempt, None
                error = f"HTTP {r.status_code} from {target}"
                retry = r.status_code in RETRY_STATUSES
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__} posting to {target}: {scrub(str(exc))}"
                error = error.replace(url, target)
            if not retry or attempt == cfg.attempts:
                return False, attempt, error
            sleep(min(2.0 ** (attempt - 1), 30.0))
    return False, cfg.attempts, error


def _run(command: Sequence[str], body: bytes, cfg: NotifyConfig) -> tuple[bool, str | None]:
    try:
        done = subprocess.run(list(command), input=body, capture_output=True,
                              timeout=cfg.timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{command[0]}: {exc}"
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        return False, f"{command[0]} exited {done.returncode}" + (f": {tail}" if tail else "")
    return True, None


def deliver(
    store: Store,
    cfg: NotifyConfig,
    agent: str,
    run_id: str,
    document: dict[str, Any],
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    suffix: str = "",
    record: bool = True,
) -> list[Delivery]:
    """Send ``document`` to every configured channel that has not had this (agent, run) yet,
    and record each delivery (not when ``record`` is false). ``suffix`` names another kind of
    notice on the same channels (``webhook:run-failed``)."""
    done = {n.channel for n in store.notifications(agent, run_id=run_id)} if record else set()
    body = canonical_json(document)
    out: list[Delivery] = []
    url = cfg.webhook_url()
    channels: list[tuple[str, str]] = []
    if url:
        channels.append(("webhook", webhook_target(url)))
    if cfg.command:
        channels.append(("command", " ".join(cfg.command)[:200]))
    for kind, target in channels:
        channel = kind + suffix
        if channel in done:
            out.append(Delivery(channel, target, "skipped", 0, None, recorded=False))
            continue
        if kind == "webhook":
            assert url is not None
            ok, attempts, error = _post(url, body, cfg, transport, sleep)
        else:
            ok, error = _run(cfg.command, body, cfg)
            attempts = 1
        status = "sent" if ok else "failed"
        if not ok:
            log.warning("%s notification of %s (run %s) by %s failed: %s",
                        document.get("event"), agent, run_id, channel, error)
        recorded = record and store.record_notification(
            agent=agent, run_id=run_id, channel=channel, target=target, status=status,
            attempts=attempts, error=error, payload=document)
        out.append(Delivery(channel, target, status, attempts, error, recorded))
    return out


def notify_regressions(
    store: Store,
    settings: Settings,
    agent: str,
    run_id: str | None = None,
    *,
    history: AgentHistory | None = None,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    n_boot: int = 2000,
) -> tuple[AgentHistory, list[Regression], list[Delivery]]:
    """Check ``agent``'s run ``run_id`` (default: its latest) against its history and notify
    the figures that became flagged on it, per ``settings.notify``. Returns the history, those
    regressions and the deliveries (none when nothing regressed or nothing is configured)."""
    if history is None:
        # the run's suite only, and only the runs its verdict and its predecessor's depend on
        suite = store.get_run(run_id).suite if run_id is not None else None
        history = agent_history(store, agent, suite=suite, until=run_id, n_boot=n_boot,
                                last=2 * DEFAULT_RULE.window + 1)
    if run_id is None:
        if not history.runs:
            return history, [], []
        run_id = history.runs[-1].id
    if all(r.id != run_id for r in history.runs):
        return history, [], []
    regressions = history.new_regressions(run_id)
    if not regressions or not settings.notify.enabled:
        return history, regressions, []
    document = payload(history, run_id, regressions)
    log.warning("%s", document["summary"])
    return history, regressions, deliver(store, settings.notify, agent, run_id, document,
                                         transport=transport, sleep=sleep)


def run_failure(store: Store, settings: Settings, run_id: str) -> str | None:
    """Why a finished nightly run counts as failed, or None: it did not end ``complete``, or an
    agent's API errors (not its unreadable answers: those are its own) passed
    ``settings.max_failure_share`` of its attempted trials."""
    run = store.get_run(run_id)
    reasons = [] if run.status == "complete" else [f"the run ended {run.status}"]
    for agent, c in sorted(store.failure_counts([run_id]).get(run_id, {}).items()):
        if c.errors and c.errors > settings.max_failure_share * c.attempted:
            reasons.append(f"{agent}: {c.errors} of {c.attempted} trials failed with API errors")
    return "; ".join(reasons) or None


def notify_run_failed(
    store: Store,
    settings: Settings,
    agents: Sequence[str],
    run_id: str | None,
    reason: str,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Delivery]:
    """Announce a failed nightly run of ``agents`` (``run_id`` None: the job failed before its
    run was stored) with ``reason``, per ``settings.notify`` (nothing when it is not
    configured); each run's notice is sent and recorded once."""
    run: dict[str, Any] | None = None
    if run_id is not None:
        stored = store.get_run(run_id)
        run = {"id": run_id, "suite": stored.suite, "status": stored.status,
               "trial_counts": store.trial_counts(run_id)}
    who = ", ".join(agents)
    document = {
        "schema": RUN_FAILED_SCHEMA,
        "event": "run_failed",
        "agents": list(agents),
        "run": run,
        "reason": reason,
        "summary": f"nightly run {run_id or '(not stored)'} of {who} failed: {reason}",
    }
    log.warning("%s", document["summary"])
    if not settings.notify.enabled:
        return []
    return deliver(store, settings.notify, who, run_id or "", document, transport=transport,
                   sleep=sleep, suffix=":run-failed", record=run_id is not None)
