"""Self-forecasts around a run (issue 29): which figures an agent may forecast for a suite, the
id a scheduled run is announced under, and the reveal of the forecasts the service holds once
the run has ended.

The ledger keeps the forecasts and scores them (:meth:`ledger.predictions.Ledger.commit_forecast`,
``reveal_forecast``); the reports say what a run's figure is (:func:`reports.self_forecast.
figure_value`). This module is where the harness joins them:

- :func:`forecastable` — the figures of an agent's run of a suite: the NestToM figures when the
  suite has false-belief questions, S when the nightly matrix runs beside it, the ablation
  credit of each module the agent's nightly run ablates, and the change of each since the
  previous run;
- :func:`scheduled_run_id` — the run id a nightly job announces (``GET /schedule/next``) and
  uses when it fires: derived from the job's id and the time it is scheduled to fire, so it
  needs no storage of its own and survives a restart (the job store keeps the fire time);
- :func:`outcome_of` — a run's value of a figure for an agent and the naive forecast's inputs
  (its value in the agent's previous finished run of the same suite);
- :func:`reveal_ended` (:func:`reveal_held` with a ledger) — after a run ends, reveal every
  forecast the service holds for it. Never raises into the run: a failure is logged and the
  forecast stays unrevealed (a later call, ``mindledger forecast reveal RUN``, reveals it).

(The seal, the ``run-start`` entry before a run's first trial after which commits for the run
are refused, is :func:`harness.run.execution.seal_run`'s.)
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.config.settings import Settings
from mindledger.forecasts import figure

if TYPE_CHECKING:
    from ledger.predictions import Ledger
    from ledger.store import Store

__all__ = [
    "BELIEF_FAMILIES",
    "Outcome",
    "forecastable",
    "outcome_of",
    "reveal_ended",
    "reveal_held",
    "scheduled_run_id",
]

log = logging.getLogger("mindledger.forecasting")

BELIEF_FAMILIES = frozenset({"nesttom_belief", "B1", "B2"})
"""The suite families with false-belief questions at depths R0-R5 (the NestToM figures)."""
DEPTHS = tuple(f"R{k}" for k in range(6))


def forecastable(
    settings: Settings, suite: str, agent: str, *, matrix: bool | None = None
) -> list[str]:
    """The figures ``agent`` may forecast for its run of ``suite``: the NestToM figures when the
    suite has false-belief questions; S when the prediction matrix runs beside it (``matrix``,
    default: the nightly ``[schedule.matrix] enabled``); the ablation credit of each module
    ``[schedule] ablate`` names for the agent; and ``change:`` of each of those. A figure the run
    turns out not to estimate is revealed ``void``, with the reason."""
    from harness.run.suites import get_suite

    families = set(get_suite(suite).counts)
    names: list[str] = []
    if families & BELIEF_FAMILIES:
        names += ["false_belief_accuracy", "d50", "leakage_resistance"]
        names += [f"accuracy_at_depth:{d}" for d in DEPTHS]
    if settings.schedule_matrix.enabled if matrix is None else matrix:
        names.append("S")
    names += [f"ablation_credit:{m}" for m in settings.schedule_ablations.get(agent, ())]
    names += [f"change:{n}" for n in list(names)]
    for name in names:  # every name is one the ledger takes
        figure(name)
    return names


def scheduled_run_id(job_id: str, fire_time: dt.datetime) -> str:
    """The id of the run a scheduled job starts when it fires at ``fire_time``: the fire time
    (``YYYYMMDD-HHMMSS``, as :func:`harness.run.runs.new_run_id`) and six hex digits of the
    SHA-256 of the job id and the time. Deterministic, so the announcement (``GET
    /schedule/next``) and the job that fires compute the same id without storing it: the
    scheduler's job store keeps the fire time across a restart."""
    at = fire_time.astimezone(dt.UTC).replace(microsecond=0)
    tail = hashlib.sha256(f"{job_id}|{at.isoformat()}".encode()).hexdigest()[:6]
    return at.strftime("%Y%m%d-%H%M%S-") + tail


@dataclass(frozen=True)
class Outcome:
    """A run's value of a figure for an agent, and the naive forecast's inputs."""

    value: float | None
    note: str | None
    """Why there is no value (None when there is one)."""
    previous: tuple[float, Sequence[float] | None, float] | None
    """The agent's value of the figure in its previous finished run of the same suite, with its
    interval and the interval's level (None: no previous run, or no value there)."""


class _Profiles:
    """The profiles of one agent's runs of one suite, built once each (a reveal needs the run's,
    the previous run's and, for a ``change:`` figure's naive forecast, the one before)."""

    def __init__(self, store: Store, n_boot: int):
        self.store = store
        self.n_boot = n_boot
        self._built: dict[str, Any] = {}

    def of(self, run_id: str) -> Any:
        if run_id not in self._built:
            from reports.profile import build_profile

            self._built[run_id] = build_profile(self.store, run_id, n_boot=self.n_boot)
        return self._built[run_id]

    def before(self, run_id: str, agent: str, suite: str) -> list[str]:
        """The agent's finished runs of ``suite`` before ``run_id``, latest first."""
        runs = self.store.agent_runs(agent, suite=suite)
        earlier = runs[: runs.index(run_id)] if run_id in runs else runs
        return [r for r in reversed(earlier) if r != run_id]


def outcome_of(
    store: Store, run_id: str, agent: str, name: str, *, n_boot: int = 2000,
    profiles: _Profiles | None = None,
) -> Outcome:  # fmt: skip
    """What a forecast of figure ``name`` for ``agent``'s run ``run_id`` is scored against."""
    from reports.self_forecast import figure_value

    fig = figure(name)
    profiles = profiles or _Profiles(store, n_boot)
    suite = store.get_run(run_id).suite
    earlier = profiles.before(run_id, agent, suite)
    prev = profiles.of(earlier[0]) if earlier else None
    now = figure_value(profiles.of(run_id), agent, fig, prev)
    previous = None
    if prev is not None:
        before_prev = profiles.of(earlier[1]) if len(earlier) > 1 else None
        was = figure_value(prev, agent, fig, before_prev)
        if was.value is not None:
            previous = (was.value, was.ci, was.level)
    note = None if now.value is not None else (now.reason or "the run has no value of it")
    return Outcome(now.value, note, previous)


def reveal_ended(
    store: Store, settings: Settings, run_id: str, ledger: Ledger | None = None
) -> list[str]:
    """After run ``run_id`` ended: reveal the forecasts the service holds for it, with
    ``ledger`` or, when there are any to reveal, one opened from ``settings`` (as the seal is:
    :func:`harness.run.execution.seal_run`). Never raises; returns the ids revealed."""
    from ledger.forecasts import read_forecasts

    try:
        pending = [
            f for f in read_forecasts(store.engine, run_id=run_id)
            if f.held and f.status == "committed"
        ]  # fmt: skip
        if not pending:
            return []
        if ledger is not None:
            return reveal_held(ledger, store, run_id)
        from harness.config.workspace import SeedPolicy, Workspace

        opened = Workspace(settings, store.engine, store, SeedPolicy.of(settings)).new_ledger()
        try:
            return reveal_held(opened, store, run_id)
        finally:
            opened.close()
    except Exception:
        log.exception("run %s: could not reveal its held forecasts", run_id)
        return []


def reveal_held(
    ledger: Ledger | None, store: Store, run_id: str, *, n_boot: int = 2000
) -> list[str]:
    """Reveal (and so score) every forecast for the ended run ``run_id`` that the service holds
    and has not revealed; returns their ids. Never raises: a failure is logged, and the forecast
    stays committed for a later call."""
    if ledger is None:
        return []
    try:
        held = [f for f in ledger.forecasts(run_id=run_id) if f.held and f.status == "committed"]
    except Exception:
        log.exception("run %s: could not read its forecasts; none revealed", run_id)
        return []
    if not held:
        return []
    profiles = _Profiles(store, n_boot)
    done = []
    for state in held:
        try:
            kept = ledger.held_forecast(state.id)
            if kept is None:
                log.warning("forecast %s: held, but its body and salt are missing", state.id)
                continue
            body, salt = kept
            out = outcome_of(store, run_id, state.predictor, state.figure, profiles=profiles)
            ledger.reveal_forecast(
                state.id, body, salt, outcome=out.value, previous=out.previous, note=out.note
            )
            done.append(state.id)
        except Exception:
            log.exception("run %s: could not reveal forecast %s", run_id, state.id)
    if done:
        log.info("run %s: revealed %d held forecast(s)", run_id, len(done))
    return done
