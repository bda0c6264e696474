"""The progress bars of the commands that run trials (``run``, ``matrix``, ``judge``)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

__all__ = ["progress_bars"]


def progress_bars(console: Console, *fields: ProgressColumn) -> Progress:
    """Bars of description, bar, done of total, ``fields``, elapsed time and ETA on ``console``;
    quiet when the console is not a terminal."""
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        *fields,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not console.is_terminal,
    )
