"""Progress as plain lines, for wherever there is no terminal to draw bars on: a log file,
cron, CI, ``nohup``, a queue worker's log. :class:`LineProgress` is a
:class:`~harness.run.runner.ProgressSink`; the CLI chooses between it and bars
(:mod:`harness.cli.progress`). A line says how far the work has come, its failures, its rate
(of the agents still running) and when it should end, and which agents are still running::

    progress 160/208 trials (77%) · 0 errors · 2.1/s · ETA 1m30s · running: local 4/26, local-control 12/26

Lines come every :data:`LINE_EVERY_S` seconds whatever happens (a slow model still shows that
it is alive) and whenever another tenth of the work is done, but not more often than
:data:`MIN_GAP_S`; a last line says how it ended. The ETA is the slowest unfinished agent's:
remaining trials ÷ its own rate since the work started, so instant reference agents do not
make a slow model look fast.

Requests that an agent's adapter will send again are counted on the line, with the last
reason, so that a run whose endpoint hangs or refuses says why nothing is finishing long before
its first trial fails (``· 6 retries (last: hung: timed out: no reply within 120 s)``); and the
trials that failed are counted with the last one's cause, so that an agent whose replies cannot
be used says why while the run goes on, not only in the summary at its end (``· 3 errors
(last: mybot: malformed: python3 wrote no JSON reply …)``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import IO

from reports.present import duration

__all__ = ["LINE_EVERY_S", "MIN_GAP_S", "LineProgress", "duration", "rate", "shortened"]

SAID_CHARS = 100
"""Characters of a failed trial's cause said on a progress line (the summary has it whole)."""


def shortened(what: str, limit: int = SAID_CHARS) -> str:
    """``what`` on one line, cut to ``limit`` characters with an ellipsis."""
    line = " ".join(what.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"

LINE_EVERY_S = 10.0
"""Seconds between progress lines when nothing else prompts one."""
MIN_GAP_S = 1.0
"""Least seconds between two lines (a burst of instant trials prints one line, not ten)."""


class LineProgress:
    """Plain progress lines on ``out``, or given to ``emit`` (a logger's ``info``) when it
    is set (see the module docstring). ``clock`` and ``interval`` are for tests;
    ``ticker=False`` leaves out the thread that prints a line every ``interval`` seconds
    (lines then come only with progress)."""

    def __init__(
        self,
        out: IO[str] | None = None,
        *,
        emit: Callable[[str], object] | None = None,
        what: str = "trials",
        label: str = "progress",
        interval: float = LINE_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
        ticker: bool = True,
    ):
        self.out = out
        self.emit = emit
        self.what = what
        self.label = label
        self.interval = interval
        self.clock = clock
        self.ticker = ticker
        self.totals: dict[str, int] = {}
        self.done: dict[str, int] = {}
        self.fresh: dict[str, int] = {}  # done since start, per agent
        self.errors = 0
        self.retries = 0
        self.last_retry = ""  # "agent: what happened", the latest retry's
        self.last_error = ""  # "agent: what went wrong", the latest failed trial's
        self.started = 0.0
        self._last_line = -1e18
        self._last_tenth = 0
        self._pending = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, totals: Mapping[str, int], done: Mapping[str, int]) -> None:
        with self._lock:
            self.totals = dict(totals)
            self.done = {a: done.get(a, 0) for a in totals}
            self.fresh = dict.fromkeys(totals, 0)
            self.started = self.clock()
            self._last_tenth = self._tenth()
            self._line()
        if self.ticker and self.interval > 0:
            self._thread = threading.Thread(target=self._tick, name="progress-lines", daemon=True)
            self._thread.start()

    def advance(self, agent: str, *, correct: bool | None = None, error: bool = False) -> None:
        with self._lock:
            self.done[agent] = self.done.get(agent, 0) + 1
            self.fresh[agent] = self.fresh.get(agent, 0) + 1
            self.errors += int(error)
            tenth = self._tenth()
            now = self.clock()
            if tenth >= 10:  # all done: the closing line (stop) follows and says it once
                self._last_tenth = tenth
                self._pending = False
            elif tenth > self._last_tenth:
                if now - self._last_line >= MIN_GAP_S:
                    self._last_tenth = tenth
                    self._line()
                else:
                    self._pending = True  # the ticker prints it once the gap has passed

    def failed(self, agent: str, what: str) -> None:
        with self._lock:
            self.last_error = f"{agent}: {shortened(what)}"

    def retried(self, agent: str, kind: str, what: str) -> None:
        with self._lock:
            self.retries += 1
            self.last_retry = f"{agent}: {shortened(what)}"

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._line(final=True)

    def _tick(self) -> None:
        while not self._stop.wait(self.interval / 4):
            with self._lock:
                since = self.clock() - self._last_line
                if since >= self.interval or (self._pending and since >= MIN_GAP_S):
                    self._last_tenth = self._tenth()
                    self._line()

    def _tenth(self) -> int:
        total = sum(self.totals.values())
        return 10 * sum(self.done.values()) // total if total else 10

    def text(self, *, final: bool = False) -> str:
        """The line as it would be printed now."""
        total = sum(self.totals.values())
        done = sum(self.done.values())
        elapsed = self.clock() - self.started
        share = f" ({100 * done // total}%)" if total else ""
        parts = [f"{self.label} {done}/{total} {self.what}{share}"]
        parts.append(
            f"{self.errors} error{'s' if self.errors != 1 else ''}"
            + (f" (last: {self.last_error})" if self.errors and self.last_error else "")
        )
        if self.retries:
            many = "retry" if self.retries == 1 else "retries"
            parts.append(f"{self.retries} {many} (last: {self.last_retry})")
        running = [a for a in self.totals if self.done.get(a, 0) < self.totals[a]]
        # while work is left, the rate of the agents still running (the one the ETA follows:
        # instant reference agents done long ago would make a slow model look fast)
        counted = running if running and not final else list(self.totals)
        fresh = sum(self.fresh.get(a, 0) for a in counted)
        if elapsed > 0 and fresh:
            parts.append(rate(fresh / elapsed))
        if final:
            parts.append(f"{'stopped' if running else 'done'} after {duration(elapsed)}")
        elif running:
            eta = self._eta(running, elapsed)
            if eta is not None:
                parts.append(f"ETA {duration(eta)}")
            if running and len(self.totals) > 1:
                shown = ", ".join(
                    f"{a} {self.done.get(a, 0)}/{self.totals[a]}" for a in running[:4]
                )
                more = f" and {len(running) - 4} more" if len(running) > 4 else ""
                parts.append(f"running: {shown}{more}")
        return " · ".join(parts)

    def _eta(self, running: list[str], elapsed: float) -> float | None:
        worst = 0.0
        for agent in running:
            fresh = self.fresh.get(agent, 0)
            if not fresh or elapsed <= 0:
                return None  # an agent with nothing done yet: no honest estimate
            worst = max(worst, (self.totals[agent] - self.done.get(agent, 0)) * elapsed / fresh)
        return worst

    def _line(self, *, final: bool = False) -> None:
        self._last_line = self.clock()
        self._pending = False
        text = self.text(final=final)
        try:
            if self.emit is not None:
                self.emit(text)
            else:
                print(text, file=self.out, flush=True)
        except (OSError, ValueError):  # a closed or broken stderr must not stop the run
            pass


def rate(per_second: float) -> str:
    """A rate as people read one: ``2.1/s``; below one a second, ``5.2/min`` (a slow model's
    0.1/s would round to a stalled-looking ``0.0/s``); below one a minute, ``/h``."""
    if per_second >= 0.95:
        return f"{per_second:.1f}/s"
    if per_second * 60 >= 0.95:
        return f"{per_second * 60:.1f}/min"
    return f"{per_second * 3600:.1f}/h"
