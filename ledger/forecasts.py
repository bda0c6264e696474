"""Self-forecasts in the ledger (issue 29): an agent's forecast of a figure of its own profile
for a run, committed before the run's first trial and revealed (and scored) after it ends.

(Skeleton fixed by the lead so the reports and the daemon can be written beside it: the
dataclass below is the shared contract; the functions are implemented on branch i29-ledger.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ForecastState"]

ForecastStatus = Literal["committed", "scored", "void", "rejected"]


@dataclass
class ForecastState:
    """One forecast, the fold of its ledger entries (``forecast`` then at most one
    ``forecast-reveal``)."""

    id: str
    """``f`` + the first 20 hex digits of the commitment."""
    predictor: str
    """The agent whose figure it forecasts (forecasts are of oneself)."""
    run_id: str
    figure: str
    """A name :func:`mindledger.forecasts.figure` accepts."""
    commitment: str
    committed_at: str
    seq: int
    """The commit entry's sequence number."""
    status: ForecastStatus = "committed"
    """``committed`` until revealed; ``scored`` (the reveal matched and the figure exists);
    ``void`` (it matched, but the run has no value of the figure: ``note`` says why);
    ``rejected`` (the reveal did not match the commitment)."""
    held: bool = False
    """The service holds the forecast and its salt and reveals it when the run ends (a
    forecast sent in clear); False when the agent reveals it itself."""
    forecast: dict[str, Any] | None = None
    """The revealed forecast (JSON form, :func:`mindledger.forecasts.parse_forecast`)."""
    reason: str | None = None
    revealed_at: str | None = None
    outcome: float | None = None
    """The run's value of the figure."""
    naive: dict[str, Any] | None = None
    """The naive forecast in the forecast's form (None when there is no previous value)."""
    rule: Literal["quantile_score", "log_score"] | None = None
    loss: float | None = None
    naive_loss: float | None = None
    note: str | None = None
