"""Help: the keys of every screen and what the figures mean."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

__all__ = ["HELP_TEXT", "HelpScreen"]

HELP_TEXT = """\
mindledger dashboard

Everywhere     q quit · ? this help · l prediction ledger · escape back
Runs           ↑/↓ move · enter open the run · r refresh now (also every few seconds)
Run            ↑/↓ choose an agent · m export Markdown · h export HTML · r reload
Matrix run     arrows move between cells · c next condition · r reload
Ledger         r reload and verify again

Validity comes first: an agent whose true-belief control accuracy is below 90% is INVALID,
and its false-belief figures (D50, leakage resistance, false-belief accuracy) do not count.
D50 is the depth where false-belief accuracy falls halfway from ceiling to chance; it may be
a bound (> 5), a bracket (between 2 and 3) or not estimable, and every figure shows its n.
Agent − control and ablation credit are paired differences on the same items (Holm p).

Press escape or ? to close."""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", key_display="?"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(HELP_TEXT), id="help-text", markup=False)
