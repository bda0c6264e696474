"""One error tree for all of mindledger. Messages are written for a person.

::

    MindledgerError            base; str(err) is the message a user sees
    ├── UserError              the user's input is wrong; the CLI exits 2
    │   ├── ConfigError        bad settings file, key, type or value (carries file and key)
    │   ├── InputError         bad story, game spec, JSON argument or request (carries the field)
    │   └── NotFoundError      a run, agent, item or prediction id that does not exist
    ├── StorageError           the database cannot be reached or is in a bad state (CLI exits 2)
    │   └── NoDatabaseError    there is no database where a command that only reads looked
    ├── AgentError             an agent endpoint failed (recorded on the trial, not raised to users)
    ├── RunFailedError         a run finished, but too many of an agent's trials failed; exit 3
    └── ModelNotInstalledError the embedded model is missing; the message says how to install it

Every package's errors hang from this tree (``ledger.errors``, ``games.VariantError``,
``harness.daemon.ApiError``, ``tui.NoLedger``, …); ``tests/test_errors.py`` checks that every
exception class defined in mindledger's packages does. Everything else that escapes is a bug: the
CLI shows the traceback.
"""

from __future__ import annotations

__all__ = [
    "MAX_MESSAGE",
    "AgentError",
    "ConfigError",
    "InputError",
    "MindledgerError",
    "ModelNotInstalledError",
    "NoDatabaseError",
    "NotFoundError",
    "RunFailedError",
    "StorageError",
    "UserError",
    "readable",
]

MAX_MESSAGE = 600
"""Characters of an error message shown; a longer one (a story of 100,000 agents named in
full) is cut, saying how much was left out."""


def readable(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message`` cut to ``limit`` characters, saying how many were left out."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message) - limit:,} more characters)"


class MindledgerError(Exception):
    """Base of every error mindledger raises on purpose."""

    exit_code = 1


class UserError(MindledgerError):
    """The user's input is wrong. The message says what was expected."""

    exit_code = 2


class ConfigError(UserError):
    """A setting is wrong: the message names the file and key."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None):
        prefix = ""
        if file and key:
            prefix = f"{file}: {key}: "
        elif file:
            prefix = f"{file}: "
        elif key:
            prefix = f"{key}: "
        super().__init__(prefix + message)
        self.file = file
        self.key = key


class InputError(UserError):
    """An input document (story, game spec, JSON argument, API request) is wrong.

    ``where`` names the field, event index or question, e.g. ``"events[3].to"``.
    """

    def __init__(self, message: str, *, where: str | None = None, source: str | None = None):
        parts = [p for p in (source, where) if p]
        super().__init__((": ".join(parts) + ": " if parts else "") + message)
        self.where = where
        self.source = source


class NotFoundError(UserError):
    """An id that names nothing stored."""


class StorageError(MindledgerError):
    """The database cannot be reached, or its schema is not what this version expects."""

    exit_code = 2


class NoDatabaseError(StorageError):
    """A command that only reads found no database (or none with mindledger's schema) where
    the settings point, and created none."""


class AgentError(MindledgerError):
    """An agent endpoint failed after retries; recorded on the trial and counted."""

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.status = status


class RunFailedError(MindledgerError):
    """A run finished and is stored, but more than the allowed share of some agent's trials
    ended as errors or unreadable answers (setting ``max_failure_share``): the run's figures
    say little about the agent. The CLI exits 3, apart from bad input (2) and Ctrl-C (130)."""

    exit_code = 3


class ModelNotInstalledError(MindledgerError):
    """The embedded model or its server is not installed."""

    exit_code = 2
