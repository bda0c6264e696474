"""tui: the Textual dashboard (``mindledger dashboard``).

Layout: :mod:`tui.app` holds the App, :mod:`tui.screens` and :mod:`tui.widgets` one class per
module, :mod:`tui.messages` what the screens post up to it; the pure view-models are
:mod:`tui.state` (runs, a run, the ledger, a matrix), :mod:`tui.comparison` (two runs),
:mod:`tui.history_view` (an agent's history), :mod:`tui.trials_view` (an agent's trials and
one trial whole) and :mod:`tui.operations` (the schedule and the queue, whose data the harness
hands in); :mod:`tui.source` is the only I/O (called from workers).
"""

from tui.app import DashboardApp
from tui.source import DashboardSource, NoLedger

__all__ = ["DashboardApp", "DashboardSource", "NoLedger"]
