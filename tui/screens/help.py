"""Help: the keys of the screen it was opened from, what that screen shows, every screen's
keys, and what the figures mean."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

__all__ = ["HELP_TEXT", "HelpScreen", "help_text", "screen_keys"]

HELP_TEXT = """\
Every screen   q quit · ? this help · l prediction ledger · s schedule · w queue · escape back
Runs           ↑/↓ move · enter open the run · space mark for comparison · c compare two runs
               a the agent's history · r refresh now (also every few seconds)
Run            ↑/↓ choose an agent · enter its trials · a its history · r reload
               m export Markdown · h export HTML
Trials         ↑/↓ move · enter the trial whole · r reload
               show a all · e errors · u unparsed · i wrong answers
Transcript     ↑/↓, page up/down, home, end scroll the messages · r reload
Compare        ↑/↓ move (the line below shows the row in full) · r reload
History        ↑/↓ choose a figure (the table below shows it run by run) · r reload
Matrix run     arrows move between cells · c next condition · r reload
Schedule       ↑/↓ move · enter open the job's last run · r reload
Queue          r reload (also every few seconds)
Ledger         r reload and verify again

Validity comes first: an agent whose true-belief control accuracy is below 90% is INVALID,
and its false-belief figures (D50, leakage resistance, false-belief accuracy) do not count.
D50 is the depth where false-belief accuracy falls halfway from ceiling to chance; it may be
a bound (> 5), a bracket (between 2 and 3) or not estimable, and every figure shows its n.
Agent − control and ablation credit are paired differences on the same items (Holm p).
A cell marked † is cut short: its whole text is on the line under the table.

Press escape or ? to close."""


def screen_keys(screen: Screen[object]) -> list[tuple[str, str]]:
    """The keys the footer shows on ``screen`` (its own, its focused widget's and the app's),
    as (key, description), the screen's own first."""
    out: list[tuple[str, str]] = []
    seen = set()
    for active in screen.active_bindings.values():
        b = active.binding
        if not b.show or not b.description or b.key in seen:
            continue
        seen.add(b.key)
        out.append((b.key_display or screen.app.get_key_display(b), b.description))
    return out


def help_text(title: str, keys: list[tuple[str, str]], about: str = "") -> str:
    """The help for one screen: its keys, what it shows, then :data:`HELP_TEXT`."""
    width = max((len(k) for k, _ in keys), default=0)
    lines = [f"{title} — keys on this screen", ""]
    lines += [f"  {k.ljust(width)}  {d}" for k, d in keys]
    if about:
        lines += ["", about]
    return "\n".join([*lines, "", "─" * 8 + " every screen " + "─" * 8, "", HELP_TEXT])


class HelpScreen(ModalScreen[None]):
    """Help for the screen called ``title`` whose footer shows ``keys``; ``about`` says what
    that screen shows."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", key_display="?"),
    ]

    def __init__(
        self, title: str = "mindledger dashboard", keys: list[tuple[str, str]] | None = None,
        about: str = "",
    ) -> None:
        super().__init__()
        self.text = help_text(title, keys or [], about)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(self.text), id="help-text", markup=False)
