"""The dashboard's screens, one class per module.

Each screen's module (and the reports behind it: a comparison, a history, a matrix) is imported
when the screen is first named, not with the package: the dashboard opens on the runs screen
and should not pay for the others before they are shown.
"""

import typing

if typing.TYPE_CHECKING:
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
else:
    from mindledger.lazy import lazy_exports as _lazy_exports

    __getattr__, __dir__ = _lazy_exports(
        __name__,
        {
            "tui.screens.compare": ("CompareScreen",),
            "tui.screens.help": ("HelpScreen",),
            "tui.screens.history": ("HistoryScreen",),
            "tui.screens.ledger": ("LedgerScreen",),
            "tui.screens.matrix": ("MatrixScreen",),
            "tui.screens.queue": ("QueueScreen",),
            "tui.screens.run": ("RunScreen",),
            "tui.screens.runs": ("RunsScreen",),
            "tui.screens.schedule": ("ScheduleScreen",),
            "tui.screens.transcript": ("TranscriptScreen",),
            "tui.screens.trials": ("TrialsScreen",),
        },
    )

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
