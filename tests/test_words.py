"""Counted nouns (:func:`mindledger.words.counted`): singular for one, never ``noun(s)``."""

from __future__ import annotations

import re
from pathlib import Path

from mindledger.words import counted

ROOT = Path(__file__).resolve().parent.parent


def test_counted_nouns() -> None:
    assert counted(1, "trial") == "1 trial"
    assert (counted(0, "trial"), counted(2, "trial")) == ("0 trials", "2 trials")
    assert counted(2, "cache hit") == "2 cache hits"
    assert counted(1, "reply", "replies") == "1 reply"
    assert counted(3, "reply", "replies") == "3 replies"


def test_no_message_counts_with_a_parenthesised_plural() -> None:
    """The messages an operator reads say ``1 problem`` or ``3 problems``, not ``problem(s)``
    (a help text's ``Game(s) to draw from`` is not a count; log lines are left as they are)."""
    found = []
    for package in ("harness/cli", "harness/daemon", "ledger", "reports", "matrix", "tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\}\s*[a-zA-Z -]*[a-z]\((s|ies)\)", line):  # "{n} trial(s)"
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
