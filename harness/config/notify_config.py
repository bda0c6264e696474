"""The ``[notify]`` table of the settings: where a flagged regression is announced.

::

    [notify]
    webhook = "https://hooks.example.com/mindledger"   # POST the JSON payload here
    webhook_env = "MINDLEDGER_WEBHOOK"                 # or: read the URL from this variable
    command = ["notify-send", "mindledger"]            # and/or run this with the payload on stdin
    timeout = 10                                       # seconds per attempt
    attempts = 3                                       # tries of a failing webhook, then recorded failed

Parsed by :func:`parse_notify` (called by :func:`harness.config.settings.load_settings`); delivered
by :mod:`harness.publish.notify`. A webhook URL that carries a token is a secret: give it through
``webhook_env`` to keep it out of the file; it is never stored (a notification records only the
URL's scheme, host and port).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mindledger.errors import ConfigError

__all__ = ["NotifyConfig", "parse_notify", "webhook_target"]

KEYS = ("attempts", "command", "timeout", "webhook", "webhook_env")


@dataclass(frozen=True)
class NotifyConfig:
    """Where regressions are announced; nothing is when neither is set."""

    webhook: str | None = None
    """URL the JSON payload is POSTed to."""
    webhook_env: str | None = None
    """Environment variable holding the webhook URL (instead of ``webhook``)."""
    command: tuple[str, ...] = ()
    """Program and arguments run with the JSON payload on stdin."""
    timeout: float = 10.0
    """Seconds one delivery attempt may take."""
    attempts: int = 3
    """Tries of a webhook that fails (connection error, 5xx); then it is recorded failed."""

    @property
    def enabled(self) -> bool:
        return bool(self.webhook or self.webhook_env or self.command)

    def webhook_url(self, env: Mapping[str, str] | None = None) -> str | None:
        """The webhook URL: ``webhook``, else the variable ``webhook_env`` names (None when
        neither gives one)."""
        if self.webhook:
            return self.webhook
        if self.webhook_env:
            env = os.environ if env is None else env
            url = env.get(self.webhook_env)
            if url:
                problem = _url_problem(url)
                if problem:
                    raise ConfigError(problem, file=f"${self.webhook_env}",
                                      key="notify.webhook_env")
                return url
        return None

    def public_dict(self) -> dict[str, Any]:
        return {
            "webhook": None if self.webhook is None else webhook_target(self.webhook),
            "webhook_env": self.webhook_env, "command": list(self.command),
            "timeout": self.timeout, "attempts": self.attempts,
        }


def webhook_target(url: str) -> str:
    """What may be shown or stored of a webhook URL: its scheme, host and port."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        return "expected an http(s)://host[:port]/… URL"
    if parts.scheme not in ("http", "https") or not parts.hostname or any(
            c.isspace() for c in url):
        return "expected an http(s)://host[:port]/… URL"
    return None


def parse_notify(table: Any, *, source: str) -> NotifyConfig:
    """The ``[notify]`` table; raises :class:`ConfigError` naming the key and what was
    expected."""
    if not isinstance(table, Mapping):
        raise ConfigError("expected a table [notify]", file=source, key="notify")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        where = f"notify.{key}"
        if key == "webhook":
            if not isinstance(raw, str) or _url_problem(raw):
                raise ConfigError("expected an http(s)://host[:port]/… URL", file=source,
                                  key=where)
            values[key] = raw
        elif key == "webhook_env":
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigError("expected the name of an environment variable", file=source,
                                  key=where)
            values[key] = raw
        elif key == "command":
            if isinstance(raw, str):
                raw = shlex.split(raw)
            if not isinstance(raw, list) or not raw or not all(
                    isinstance(x, str) and x for x in raw):
                raise ConfigError('expected a program and its arguments, e.g. ["notify", "-v"]',
                                  file=source, key=where)
            values[key] = tuple(raw)
        elif key == "timeout":
            if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0 < raw <= 3600:
                raise ConfigError("expected seconds from 0 to 3600", file=source, key=where)
            values[key] = float(raw)
        elif key == "attempts":
            if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 10:
                raise ConfigError("expected a whole number from 1 to 10", file=source,
                                  key=where)
            values[key] = raw
        else:
            raise ConfigError(f"unknown key (known: {', '.join(KEYS)})", file=source, key=where)
    if values.get("webhook") and values.get("webhook_env"):
        raise ConfigError("give webhook or webhook_env, not both", file=source,
                          key="notify.webhook_env")
    return NotifyConfig(**values)
