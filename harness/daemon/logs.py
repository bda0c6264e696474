"""The daemon's logs: plain text (uvicorn's format, the default; mindledger's own lines with
their time in UTC) or JSON lines (``mindledger serve --log-format json``, the ``log_format``
setting), and the run a line was logged for.

:func:`run_context` marks the code that executes a run (the daemon's scheduler wraps each run
in it): every line logged inside it, in that thread or in the tasks and threads it starts with
the context copied (``asyncio`` tasks, ``asyncio.to_thread``), carries the run's id — as the
``run_id`` field of a JSON line (:class:`JsonFormatter`), or the ``run_id`` attribute of the
record for any other formatter (:class:`RunIdFilter`).

A JSON line is one object: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``, ``run_id`` (only while a run executes), ``exception`` (the traceback, when one was
logged).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from harness.config.settings import LOG_FORMATS

__all__ = [
    "LOG_FORMATS",
    "JsonFormatter",
    "RunIdFilter",
    "TextFormatter",
    "current_run",
    "log_config",
    "run_context",
]

_RUN: ContextVar[str | None] = ContextVar("mindledger_run_id", default=None)


def current_run() -> str | None:
    """The id of the run executing in this context (None: no run)."""
    return _RUN.get()


@contextmanager
def run_context(run_id: str) -> Iterator[None]:
    """Every line logged inside the block (in this context) is about run ``run_id``."""
    token = _RUN.set(run_id)
    try:
        yield
    finally:
        _RUN.reset(token)


class RunIdFilter(logging.Filter):
    """Sets ``record.run_id`` to the run executing where the record was made (None: none),
    unless the record names one already."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "run_id", None) is None:
            record.run_id = _RUN.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line (see the module's docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        run_id = getattr(record, "run_id", None) or _RUN.get()
        if run_id is not None:
            line["run_id"] = run_id
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """A text line as uvicorn writes its own (``INFO:     …``), with the time in UTC after the
    level: ``INFO:     2026-12-04T02:00:00Z scheduled run …``. The daemon's runs happen at
    night: its lines say when."""

    converter = time.gmtime  # type: ignore[assignment]  # the documented way to log in UTC

    def __init__(self) -> None:
        super().__init__("%(levelprefix)s %(asctime)s %(message)s", "%Y-%m-%dT%H:%M:%SZ")

    def formatMessage(self, record: logging.LogRecord) -> str:
        # uvicorn's prefix, the level padded to 9 columns, set on a copy as uvicorn does (the
        # record goes on to other handlers)
        line = logging.makeLogRecord(record.__dict__)
        line.levelprefix = f"{record.levelname}:".ljust(9)
        return super().formatMessage(line)


OUR_LOGGERS = ("mindledger", "harness", "apscheduler")
"""The loggers whose lines the daemon writes at the configured level, in either format."""


def log_config(log_format: str, *, level: str = "INFO") -> dict[str, Any]:
    """The :func:`logging.config.dictConfig` of the daemon's logs in ``log_format`` (uvicorn
    applies it when it starts). ``text``: uvicorn's own, and mindledger's and APScheduler's
    lines at ``level`` to stderr beside them (:class:`TextFormatter`), anything else at
    WARNING; without it a text daemon said nothing of its runs (Python drops INFO lines no
    handler takes). ``json``: every logger to stderr as JSON lines, uvicorn's, mindledger's and
    APScheduler's at ``level``, anything else at WARNING."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"expected a log format in {', '.join(LOG_FORMATS)}, got {log_format!r}")
    if log_format == "text":
        import copy

        from uvicorn.config import LOGGING_CONFIG

        config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
        config["formatters"]["text"] = {"()": f"{__name__}.TextFormatter"}
        config["handlers"]["text"] = {
            "class": "logging.StreamHandler",
            "formatter": "text",
            "stream": "ext://sys.stderr",
        }
        text = {"handlers": ["text"], "level": level, "propagate": False}
        config["loggers"].update(dict.fromkeys(OUR_LOGGERS, text))
        config["root"] = {"handlers": ["text"], "level": "WARNING"}
        return config
    ours = {"handlers": ["json"], "level": level, "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": f"{__name__}.JsonFormatter"}},
        "filters": {"run": {"()": f"{__name__}.RunIdFilter"}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["run"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": ours,
            "uvicorn.error": {"level": level},
            "uvicorn.access": ours,
            **dict.fromkeys(OUR_LOGGERS, ours),
        },
        "root": {"handlers": ["json"], "level": "WARNING"},
    }
