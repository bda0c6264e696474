"""Helpers for tests that watch processes."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a zombie, exited but not reaped, has stopped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"
