"""The dashboard's screens, one class per module."""

from tui.screens.compare import CompareScreen
from tui.screens.help import HelpScreen
from tui.screens.history import HistoryScreen
from tui.screens.ledger import LedgerScreen
from tui.screens.matrix import MatrixScreen
from tui.screens.queue import QueueScreen
from tui.screens.run import RunScreen
from tui.screens.runs import RunsScreen
from tui.screens.schedule import ScheduleScreen
from tui.screens.transcript import TranscriptScreen
from tui.screens.trials import TrialsScreen

__all__ = [
    "CompareScreen",
    "HelpScreen",
    "HistoryScreen",
    "LedgerScreen",
    "MatrixScreen",
    "QueueScreen",
    "RunScreen",
    "RunsScreen",
    "ScheduleScreen",
    "TranscriptScreen",
    "TrialsScreen",
]
