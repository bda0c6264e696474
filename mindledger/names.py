"""The one rule for agent names, wherever a name enters: the settings (``[agents.NAME]``), the
command line (``--agent``, ``--predictor``, ``--target``, ``serve token AGENT``) and the API
(tokens, and — through the ledger — predictions).

A name is 1 to 100 characters: an ASCII letter or digit first, then letters, digits and
``_ . : -``. That leaves room for the names mindledger derives from it (``ref:oracle``,
``mybot-no-memory``) and keeps control characters, NUL, spaces and markup out of tables, logs,
file names and the ledger.
"""

from __future__ import annotations

import re

from mindledger.errors import InputError

__all__ = ["AGENT_NAME", "AGENT_NAME_PATTERN", "AGENT_NAME_RULE", "check_agent_name"]

AGENT_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$"
"""What an agent name looks like, as a JSON Schema (ECMA) pattern: the API's documents use it."""

AGENT_NAME = re.compile(AGENT_NAME_PATTERN[:-1] + r"\Z")
r"""What an agent name looks like (``\Z``: no newline at the end, which Python's ``$`` allows)."""

AGENT_NAME_RULE = "letters, digits and _ . : -, starting with a letter or digit, up to 100"
""":data:`AGENT_NAME` in words, for error messages."""


def check_agent_name(name: object, *, where: str = "agent") -> str:
    """``name`` if it is an agent name; else an InputError naming ``where`` and showing the
    name (escaped, cut to 60 characters)."""
    if isinstance(name, str) and AGENT_NAME.match(name):
        return name
    if isinstance(name, str):
        shown = repr(name[:60] + ("…" if len(name) > 60 else ""))
    else:
        shown = type(name).__name__
    raise InputError(
        f"expected an agent name ({AGENT_NAME_RULE}), got {shown}", where=where or None
    )
