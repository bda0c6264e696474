"""Progress of the commands that run trials (``run``, ``quickstart``, ``matrix``, ``judge``):
bars on a terminal, plain lines anywhere else (a log file, cron, CI, ``nohup``; the lines are
:class:`harness.run.progress.LineProgress`'s).

``--progress auto|bars|lines|none`` chooses; ``auto`` means bars when stderr is a terminal and
lines when it is not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from harness.run.progress import LINE_EVERY_S, LineProgress, duration, rate, shortened
from mindledger.words import counted

__all__ = [
    "LINE_EVERY_S",
    "PROGRESS_MODES",
    "CountProgress",
    "LineProgress",
    "TrialProgress",
    "duration",
    "progress_bars",
    "progress_mode",
    "progress_option",
]

PROGRESS_MODES = ("auto", "bars", "lines", "none")
F = Callable[..., Any]


def progress_option(f: F) -> F:
    """The ``--progress auto|bars|lines|none`` option (parameter ``progress_mode``)."""
    return click.option(
        "--progress",
        "progress_mode",
        type=click.Choice(PROGRESS_MODES),
        default="auto",
        show_default=True,
        help="How progress shows on stderr: bars on a terminal, plain lines every 10 s and "
        "every 10% otherwise (auto), or always bars, always lines, or nothing.",
    )(f)


def progress_mode(mode: str, console: Console) -> str:
    """``bars``, ``lines`` or ``none``: ``auto`` becomes bars on a terminal, else lines."""
    if mode == "auto":
        return "bars" if console.is_terminal else "lines"
    return mode


def progress_bars(console: Console, *fields: ProgressColumn, disable: bool = False) -> Progress:
    """Bars of description, bar, done of total, ``fields``, elapsed time and ETA on
    ``console``."""
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        *fields,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=disable,
    )


class TrialProgress:
    """The progress of a command that runs trials, per agent: bars (with each agent's rate
    and accuracy so far, or its errors) on a terminal, :class:`LineProgress` lines elsewhere,
    or nothing — as ``mode`` says (:func:`progress_mode`). Implements the runner's
    :class:`~harness.run.runner.ProgressSink`."""

    def __init__(
        self, console: Console, mode: str = "auto", *, what: str = "trials", accuracy: bool = True
    ):
        self.mode = progress_mode(mode, console)
        self.accuracy = accuracy
        self.lines = LineProgress(console.file or sys.stderr, what=what) if self.mode == "lines" else None
        last: ProgressColumn = (
            TextColumn("acc {task.fields[acc]:>5}")
            if accuracy
            else TextColumn("errors {task.fields[errors]:>4}")
        )
        self.progress = progress_bars(
            console,
            TextColumn("{task.fields[rate]:>8}"),
            last,
            disable=self.mode != "bars",
        )
        self.tasks: dict[str, TaskID] = {}
        self.counts: dict[str, list[int]] = {}  # scored, correct, errors
        self.retries: dict[str, int] = {}
        self.said: set[tuple[str, str]] = set()  # (agent, kind) of the retries said above the bars

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        if self.lines is not None:
            self.lines.start(totals, done)
        if self.mode != "bars":
            return
        for name, total in totals.items():
            self.counts[name] = [0, 0, 0]
            self.tasks[name] = self.progress.add_task(
                name, total=total, completed=done.get(name, 0), rate="", acc="-", errors=0
            )
        self.progress.start()

    def advance(self, agent: str, *, correct: bool | None = None, error: bool = False) -> None:
        if self.lines is not None:
            self.lines.advance(agent, correct=correct, error=error)
        if self.mode != "bars":
            return
        c = self.counts[agent]
        if error:
            c[2] += 1
        else:
            c[0] += 1
            c[1] += int(bool(correct))
        task = self.tasks[agent]
        if error and self.accuracy:  # the last column shows accuracy: the errors go here
            self.progress.update(task, description=self._description(agent))
        self.progress.advance(task)
        speed = self.progress.tasks[task].speed
        self.progress.update(
            task,
            rate=rate(speed) if speed else "",
            acc=f"{c[1] / c[0]:.0%}" if c[0] else "-",
            errors=c[2],
        )

    def failed(self, agent: str, what: str) -> None:
        """On a line: the last cause said (:class:`LineProgress`). Over bars: the first failed
        trial of each kind (``malformed``, ``timeout``, …) of an agent is printed above the
        bars, as it happens; the bar counts them all."""
        if self.lines is not None:
            self.lines.failed(agent, what)
        if self.mode != "bars" or agent not in self.tasks:
            return
        kind = "failed:" + what.split(":", 1)[0]
        if (agent, kind) not in self.said:
            self.said.add((agent, kind))
            self.progress.console.print(
                f"{agent}: a trial failed: {shortened(what, 160)}", markup=False, highlight=False
            )

    def retried(self, agent: str, kind: str, what: str) -> None:
        """On a line: counted (:class:`LineProgress`). Over bars: the agent's bar counts its
        retries, and the first of each kind is printed above the bars."""
        if self.lines is not None:
            self.lines.retried(agent, kind, what)
        if self.mode != "bars" or agent not in self.tasks:
            return
        self.retries[agent] = self.retries.get(agent, 0) + 1
        self.progress.update(self.tasks[agent], description=self._description(agent))
        if (agent, kind) not in self.said:
            self.said.add((agent, kind))
            self.progress.console.print(
                f"{agent}: retrying a request: {shortened(what, 160)}",
                markup=False,
                highlight=False,
            )

    def _description(self, agent: str) -> str:
        """The bar's label: the agent, its failed trials (when the last column shows
        accuracy) and the requests retried, ``mybot · 3 errors · 6 retries``."""
        parts = [agent]
        errors = self.counts[agent][2] if self.accuracy else 0
        if errors:
            parts.append(counted(errors, "error"))
        retries = self.retries.get(agent, 0)
        if retries:
            parts.append(counted(retries, "retry", "retries"))
        return " · ".join(parts)

    def stop(self) -> None:
        if self.lines is not None:
            self.lines.stop()
        if self.mode == "bars":
            self.progress.stop()


class CountProgress:
    """One count with no agents (a judge pass: ``start(total, done)``, ``advance()``), shown
    as :class:`TrialProgress` shows one agent."""

    def __init__(self, console: Console, label: str, mode: str = "auto", *, what: str = "trials"):
        self.label = label
        self.inner = TrialProgress(console, mode, what=what, accuracy=False)

    def start(self, total: int, done: int) -> None:
        self.inner.start({self.label: total}, {self.label: done})

    def advance(self) -> None:
        self.inner.advance(self.label)

    def stop(self) -> None:
        self.inner.stop()
