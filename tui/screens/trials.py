"""One agent's trials in a run: item, family, label, outcome, answer beside the expected answer
and cause, under its counts by outcome and its failed share; filters by outcome; enter opens a
trial's transcript. Read in a worker; filtering reads nothing."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, LoadingIndicator, Static

from tui.messages import TranscriptRequested
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.trials_view import (
    TRIAL_COLUMNS,
    TRIAL_FILTERS,
    AgentTrials,
    TrialFilter,
    TrialLine,
    trial_lines,
    trials_header,
)
from tui.widgets.tables import fill_table

__all__ = ["TrialsScreen"]

OUTCOME_STYLES = {"ok": "green", "wrong": "red", "unparsed": "yellow", "error": "bold yellow"}


class TrialsScreen(WorkerScreen):
    """``agent``'s trials in run ``run_id``."""

    HELP: ClassVar[str] = (
        "Trials: every trial of the agent in the run, in the order they ran — the item's place "
        "in the run (#), its family and depth or game, the outcome (ok, wrong, unparsed: no "
        "answer could be read from the reply, error: the agent could not be asked or broke "
        "the protocol, answered, n/a), the answer read beside the expected answer, and the "
        "cause of a wrong or failed trial. The line above counts them by outcome; failed is "
        "errors and unparsed over the trials that asked the agent something. "
        + " · ".join(f"{f.key} {f.name}" for f in TRIAL_FILTERS)
        + "; enter opens the highlighted trial whole. A held-out run's items, answers and "
        "transcripts are withheld."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("enter", "open_trial", "Transcript", priority=True),
        *(Binding(f.key, f"show('{f.key}')", f.name.capitalize()) for f in TRIAL_FILTERS),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "trials"
    LOADING = True

    def __init__(self, source: DashboardSource, run_id: str, agent: str) -> None:
        super().__init__(source)
        self.run_id = run_id
        self.agent = agent
        self.chosen: TrialFilter = TRIAL_FILTERS[0]
        self.trials: AgentTrials | None = None
        self.lines: tuple[TrialLine, ...] = ()

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"{self.agent} in run {self.run_id}…"), id="trials-title", markup=False)
        yield Static(id="trials-counts", markup=False)
        yield Static(id="trials-notice", markup=False)
        yield LoadingIndicator(id="loading")
        yield DataTable[Text](id="trials", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Trials {self.agent} · {self.run_id}"
        fill_table(self.query_one("#trials", DataTable), TRIAL_COLUMNS, [])
        self.query_one("#trials-notice").display = False
        self.load()

    def read(self) -> AgentTrials:
        return self.source.trials(self.run_id, self.agent)

    def show_error(self, error: BaseException | None) -> None:
        notice = self.query_one("#trials-notice", Static)
        notice.update(Text(f"Could not read the trials: {error}"))
        notice.display = True

    def show_result(self, trials: AgentTrials) -> None:
        self.trials = trials
        self._fill()

    def action_show(self, key: str) -> None:
        """Show the trials that the filter of ``key`` keeps."""
        self.chosen = next(f for f in TRIAL_FILTERS if f.key == key)
        self._fill(keep_cursor=False)

    def action_open_trial(self) -> None:
        """Open the highlighted trial whole (a held-out run's are withheld)."""
        table = self.query_one("#trials", DataTable)
        if not (0 <= table.cursor_row < len(self.lines)):
            return
        line = self.lines[table.cursor_row]
        if line.withheld:
            self.notify(f"Run {self.run_id} is held out: its transcripts are its items, which "
                        "the dashboard does not show.", severity="warning", timeout=4)
            return
        self.post_message(TranscriptRequested(self.run_id, self.agent, line.key, line.position))

    def _fill(self, *, keep_cursor: bool = True) -> None:
        if self.trials is None:
            return
        header = trials_header(self.trials, self.chosen)
        self.query_one("#trials-title", Static).update(Text(header.title))
        self.query_one("#trials-counts", Static).update(
            Text(f"{header.counts}\n{header.showing}"))
        notice = self.query_one("#trials-notice", Static)
        notice.update(Text(header.notice))
        notice.display = bool(header.notice)
        table = self.query_one("#trials", DataTable)
        cursor = table.cursor_row if keep_cursor else 0
        self.lines = trial_lines(self.trials, self.chosen)
        rows = []
        for line in self.lines:
            cells = [Text(c) for c in line.cells]
            cells[TRIAL_COLUMNS.index("Outcome")].stylize(OUTCOME_STYLES.get(line.outcome, ""))
            rows.append(cells)
        fill_table(table, TRIAL_COLUMNS, rows)
        if self.lines:
            table.move_cursor(row=min(max(cursor, 0), len(self.lines) - 1), animate=False)
        table.focus()
