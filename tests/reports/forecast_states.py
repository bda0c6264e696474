"""Self-forecasts built by hand and scored as the ledger scores them (design of issue 29, §3),
for the reports' tests until (and besides) the ledger writing them."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.forecasts import ForecastState
from mindledger.forecasts import Bins, Quantiles, forecast_loss, naive_like

__all__ = ["LEVELS", "q", "runs", "state"]

LEVELS = (0.05, 0.25, 0.5, 0.75, 0.95)


def state(
    run: str,
    fig: str,
    forecast: Quantiles | Bins | None,
    outcome: float | None,
    *,
    previous: tuple[float, Sequence[float] | None, float] | None = (0.5, (0.4, 0.6), 0.95),
    status: str = "scored",
    seq: int = 0,
    predictor: str = "agent",
    note: str | None = None,
) -> ForecastState:
    """A forecast as the ledger folds it: scored like Ledger.reveal_forecast (design §3)."""
    s = ForecastState(
        id=f"f{seq:020x}",
        predictor=predictor,
        run_id=run,
        figure=fig,
        commitment="c" * 64,
        committed_at="2026-12-01T00:00:00+00:00",
        seq=seq,
    )
    if status == "committed" or forecast is None:
        return s
    s.status = status  # type: ignore[assignment]
    s.forecast = forecast.to_json()
    s.reason = "my depth limit is about 3"
    s.revealed_at = "2026-12-01T06:00:00+00:00"
    if status != "scored":
        s.note = note
        return s
    assert outcome is not None
    s.outcome = outcome
    s.rule = "quantile_score" if isinstance(forecast, Quantiles) else "log_score"
    s.loss = forecast_loss(forecast, outcome)
    if previous is not None:
        naive = naive_like(forecast, *previous)
        s.naive = naive.to_json()
        s.naive_loss = forecast_loss(naive, outcome)
    return s


def q(mid: float, half90: float) -> Quantiles:
    """A symmetric quantile forecast around ``mid`` whose 90% interval is ±half90."""
    return Quantiles(LEVELS, (mid - half90, mid - half90 / 3, mid, mid + half90 / 3, mid + half90))


def runs(n: int) -> list[str]:
    return [f"run-{i:02d}" for i in range(n)]
