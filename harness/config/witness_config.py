"""The ``[[witnesses]]`` tables of the settings: the daemons that cosign this ledger's heads.

::

    [[witnesses]]
    url = "https://witness.example.org:8765"   # another mindledger daemon
    key = "5f1c…"                               # its witness key (`mindledger witness key` there)
    log = "lab.example/piper"                   # the name its operator registered this ledger as

Each new signed tree head goes to every witness (from the daemon as heads are made, and from
``mindledger ledger head``); ``mindledger ledger verify --witness URL`` checks the ledger against
the latest head that witness cosigned. Parsed by :func:`parse_witnesses` (called by
:func:`harness.config.settings.load_settings`); the log's side is :mod:`harness.publish.witnesses`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mindledger.errors import ConfigError, InputError

__all__ = ["WitnessConfig", "parse_witnesses"]

KEYS = ("key", "log", "url")


@dataclass(frozen=True)
class WitnessConfig:
    """One witness of this ledger."""

    url: str
    """The witness daemon's base URL (http(s)://host:port)."""
    key: str
    """Its witness public key, 64 hex digits: cosignatures by any other key are refused."""
    log: str
    """The name under which the witness's operator registered this ledger."""

    def public_dict(self) -> dict[str, Any]:
        return {"url": self.url, "key": self.key, "log": self.log}


def _url(raw: Any, *, source: str, key: str) -> str:
    problem = not isinstance(raw, str) or any(c.isspace() for c in raw)
    if not problem:
        try:
            parts = urlsplit(raw)
            _ = parts.port
        except ValueError:
            problem = True
        else:
            problem = (
                parts.scheme not in ("http", "https")
                or not parts.hostname
                or bool(parts.query or parts.fragment or parts.username or parts.password)
            )
    if problem:
        raise ConfigError("expected an http(s)://host[:port] URL", file=source, key=key)
    return str(raw).rstrip("/")


def parse_witnesses(value: Any, *, source: str) -> tuple[WitnessConfig, ...]:
    """The ``[[witnesses]]`` array of tables; raises :class:`ConfigError` naming the key and
    what was expected."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ConfigError(
            "expected [[witnesses]] tables of url, key and log", file=source, key="witnesses"
        )
    out: list[WitnessConfig] = []
    for n, table in enumerate(value):
        where = f"witnesses[{n}]"
        if not isinstance(table, dict):
            raise ConfigError("expected a table of url, key and log", file=source, key=where)
        for k in table:
            if k not in KEYS:
                raise ConfigError(
                    f"unknown key (expected: {', '.join(KEYS)})", file=source, key=f"{where}.{k}"
                )
        for k in KEYS:
            if k not in table:
                raise ConfigError("missing", file=source, key=f"{where}.{k}")
        url = _url(table["url"], source=source, key=f"{where}.url")
        key = table["key"]
        if not isinstance(key, str) or not re.fullmatch(r"[0-9a-fA-F]{64}", key):
            raise ConfigError(
                "expected the witness's public key as 64 hex digits",
                file=source,
                key=f"{where}.key",
            )
        key = key.lower()
        from ledger.cosign import check_log_name  # only when witnesses are configured

        try:
            log = check_log_name(table["log"])
        except InputError as exc:
            raise ConfigError(
                str(exc).removeprefix("log: "), file=source, key=f"{where}.log"
            ) from None
        if any(w.url == url for w in out):
            raise ConfigError("the same witness twice", file=source, key=f"{where}.url")
        out.append(WitnessConfig(url, key, log))
    return tuple(out)
