"""The dashboard's screens, one class per module."""

from tui.screens.help import HelpScreen
from tui.screens.ledger import LedgerScreen
from tui.screens.matrix import MatrixScreen
from tui.screens.run import RunScreen
from tui.screens.runs import RunsScreen

__all__ = ["HelpScreen", "LedgerScreen", "MatrixScreen", "RunScreen", "RunsScreen"]
