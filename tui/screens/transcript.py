"""One trial whole: the agent's answer beside the expected answer, the outcome and its cause,
the score and the costs, over every message of the trial in order (scrollable), read in a
worker."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, LoadingIndicator, Static

from reports.trials import TrialView
from tui.screens._base import WorkerScreen
from tui.source import DashboardSource
from tui.trials_view import TranscriptView, transcript_view

__all__ = ["TranscriptScreen"]

ROLES = frozenset(("system", "user", "assistant", "tool"))
"""The roles whose messages have their own style (``.message.-user`` …); others are
``-other``."""


class TranscriptScreen(WorkerScreen):
    """``agent``'s trial of ``item`` (its id) in run ``run_id``; ``position`` is the item's
    place in the run."""

    HELP: ClassVar[str] = (
        "Transcript: one trial whole. At the top, the answer read from the agent's reply "
        "beside the expected answer (green when right, red when wrong, yellow when no answer "
        "could be read or the agent failed), the outcome with its cause and detail, the "
        "scorer's value and error codes, and the costs (turns, tokens, latency, model). Below, "
        "every message in the order it was sent or received: its role, its content, the tool "
        "calls with their arguments indented, and tool results. ↑/↓, page up/down, home and "
        "end scroll the messages."
    )
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("r", "reload", "Reload"),
    ]
    WORKER_GROUP = "transcript"
    LOADING = True

    def __init__(
        self, source: DashboardSource, run_id: str, agent: str, item: str,
        position: int | None = None,
    ) -> None:
        super().__init__(source)
        self.run_id = run_id
        self.agent = agent
        self.item = item
        self.position = position

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(f"{self.agent} · {self.item}…"), id="transcript-title", markup=False)
        with Horizontal(id="answers"):
            yield Static(id="answer", markup=False)
            yield Static(id="expected", markup=False)
        yield Static(id="transcript-facts", markup=False)
        yield LoadingIndicator(id="loading")
        yield VerticalScroll(id="messages")
        yield Footer()

    def on_mount(self) -> None:
        place = f"item {self.position}" if self.position is not None else "a trial"
        self.sub_title = f"Transcript {self.agent} · {place}"
        self.query_one("#answer", Static).border_title = "Agent's answer"
        self.query_one("#expected", Static).border_title = "Expected answer"
        self.load()

    def read(self) -> TranscriptView:
        view: TrialView = self.source.trial(self.run_id, self.agent, self.item)
        return transcript_view(view, self.position)

    def show_error(self, error: BaseException | None) -> None:
        self.query_one("#transcript-facts", Static).update(
            Text(f"Could not read the trial: {error}"))

    def show_result(self, view: TranscriptView) -> None:
        self.query_one("#transcript-title", Static).update(Text(view.title))
        answers = self.query_one("#answers")
        for outcome in ("ok", "wrong", "unparsed", "error"):
            answers.set_class(view.outcome == outcome, f"-{outcome}")
        self.query_one("#answer", Static).update(Text(view.answer))
        self.query_one("#expected", Static).update(Text(view.expected))
        self.query_one("#transcript-facts", Static).update(Text("\n".join(view.facts)))
        messages = self.query_one("#messages", VerticalScroll)
        messages.remove_children()
        blocks = []
        for m in view.messages:
            role = m.role if m.role in ROLES else "other"
            block = Static(Text(m.body), markup=False, classes=f"message -{role}")
            block.border_title = Text(m.title)
            blocks.append(block)
        messages.mount_all(blocks)
        messages.focus()
