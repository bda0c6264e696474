"""Self-forecasts in the reports (issue 29): the run's value of every figure an agent can
forecast, and the profile's *self-forecast* section.

Public API::

    FigureValue                                   # value, 95% interval, level, or the reason
    figure_value(profile, agent, figure, previous) -> FigureValue
    forecast_line(state) -> ForecastLine          # one forecast as the reports show it
    self_forecast_section(forecasts, run_id, *, runs=None, seed=0, n_boot=2000)
        -> SelfForecast | None                    # pure; None when there are no forecasts
    with_self_forecasts(profile, forecasts_by_agent, *, runs_by_agent=None) -> RunProfile
    read_agent_forecasts(store, agent) -> list[ForecastState]   # [] before the ledger has them
    attach_self_forecasts(store, profile) -> RunProfile         # what build_profile calls

**Figure values.** A figure's value is read off the profile as every report shows it:
``false_belief_accuracy`` and ``leakage_resistance`` (their 95% intervals), ``d50`` (only when
estimated: a D50 beyond or below the tested depths is a bound, not a value), ``S`` (the
agent's skill predicting itself, from the matrix run beside the run), ``accuracy_at_depth:Rk``
(false-belief accuracy at depth k; R0 is the reality check) and ``ablation_credit:<module>``
(full − ablated false-belief accuracy, from the run's ablation of that module). An invalid
agent's false-belief figures do not count (seed 002 §18.2 rule 6): they have no value. A
``change:<figure>`` is the figure's value minus its value in ``previous`` (the agent's previous
finished run of the same suite), its interval the two intervals' half-widths added in
quadrature (the two runs are independent samples; a normal approximation). Without a value,
:attr:`FigureValue.reason` says why.

**The section** (:func:`self_forecast_section`) is over the agent's forecasts of its runs up to
and including this one (``runs``: the agent's runs, oldest first):

- counts by status (committed, scored, void, rejected, unrevealed);
- skill against the naive forecast per scoring rule, ``1 − Σ loss / Σ naive loss`` over scored
  forecasts that have a naive forecast, with a percentile bootstrap interval resampling *runs*
  (a run's forecasts share its outcome noise), when at least :data:`MIN_RUNS` runs count;
- coverage of the central 50% and 90% intervals, k/n with a Wilson interval, against the
  nominal 0.5 and 0.9;
- bias: the share of outcomes below the forecast's median (0.5 when unbiased; Wilson interval)
  and, per figure, the mean of median − outcome in the figure's units;
- the forecasts whose outcome fell outside their 90% interval ("confidently wrong"), and the
  run's own forecasts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mindledger.forecasts import (
    Figure,
    central_interval,
    figure,
    median,
    parse_forecast,
)
from reports._stats.intervals import wilson_interval
from reports.model import (
    AgentProfile,
    Estimate,
    ForecastBias,
    ForecastCoverage,
    ForecastLine,
    ForecastSkill,
    RunProfile,
    SelfForecast,
)
from reports.sections import rng

if TYPE_CHECKING:
    from ledger.forecasts import ForecastState

__all__ = [
    "MIN_RUNS",
    "FigureValue",
    "attach_self_forecasts",
    "figure_value",
    "forecast_line",
    "read_agent_forecasts",
    "self_forecast_section",
    "with_self_forecasts",
]

MIN_RUNS = 5
"""Fewest runs (the bootstrap's clusters) for a skill interval: with fewer, a percentile
interval over resampled runs does not keep its coverage; the value is given without one."""

SECTION_KEY = 0x29
"""The bootstrap stream of the self-forecast section (:func:`reports.sections.rng`, the
profile's convention: its seed, then the test's key)."""

DEFINITION = (
    "over the agent's forecasts of its own runs up to and including this one; skill = 1 − "
    "Σ loss / Σ naive loss per scoring rule (the naive forecast: the previous run's value "
    f"with its interval), 95% percentile bootstrap over runs (at least {MIN_RUNS}); coverage "
    "= share of outcomes inside the central 50% / 90% interval (Wilson 95%); bias = share of "
    "outcomes below the forecast's median (0.5 if unbiased) and mean median − outcome per "
    "figure; confidently wrong = outcome outside the 90% interval"
)


# -- figure values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureValue:
    """A run's value of a figure: ``value`` with its ``level`` interval ``ci`` (None when it
    has none), or ``value`` None and the ``reason``."""

    value: float | None
    ci: tuple[float, float] | None = None
    level: float = 0.95
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci": None if self.ci is None else list(self.ci),
            "level": self.level,
            "reason": self.reason,
        }


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _ci(ci: Any, status: Any = None) -> tuple[float, float] | None:
    if status == "not_estimable" or not isinstance(ci, list | tuple) or len(ci) != 2:
        return None
    lo, hi = _num(ci[0]), _num(ci[1])
    return None if lo is None or hi is None else (lo, hi)


def _none(reason: str) -> FigureValue:
    return FigureValue(None, None, reason=reason)


def _estimate(e: Estimate | None, what: str, level: float) -> FigureValue:
    if e is None:
        return _none(f"the run has no {what}")
    value = _num(e.value)
    if value is None:
        return _none(e.reason or f"{what}: no value (n = {e.n or 0})")
    return FigureValue(value, _ci(e.ci, e.status), level)


WITHHELD = ("false_belief_accuracy", "d50", "leakage_resistance", "accuracy_at_depth")
"""The figures an invalid agent's validity check withholds (accuracy at R0, the reality
check, aside): they do not count, so there is nothing to score a forecast of them against."""


def _level(a: AgentProfile, fig: Figure, level: float) -> FigureValue:
    """The figure itself (not its change) for agent profile ``a``."""
    base = fig.base
    if a.valid is False and base in WITHHELD and fig.arg != "R0":
        why = a.validity.message or "the agent failed the true-belief control rule"
        return _none(f"not counted: the agent is invalid on this run ({why})")
    if base == "false_belief_accuracy":
        return _estimate(a.false_belief_accuracy, "false-belief accuracy", level)
    if base == "leakage_resistance":
        return _estimate(a.leakage_resistance, "leakage resistance", level)
    if base == "d50":
        d = a.d50
        if d.status != "estimated" or _num(d.value) is None:
            return _none(f"D50 is {d.status}: {d.reason or d.display}")
        return FigureValue(float(d.value or 0.0), _ci(d.ci), level)
    if base == "S":
        s = a.agent_prediction_skill
        if not s.available:
            return _none(s.reason or "skill S is not measured for this run")
        if _num(s.value) is None:
            return _none(s.reason or "skill S has no value")
        return FigureValue(float(s.value or 0.0), _ci(s.ci, s.status), level)
    if base == "accuracy_at_depth":
        depth = fig.arg or ""
        e = a.accuracy_by_depth.false.get(depth)
        if e is None and depth == "R0":
            e = a.reality_check
        return _estimate(e, f"false-belief items at depth {depth}", level)
    if base == "ablation_credit":
        module = fig.arg or ""
        block = a.ablation_credit.get(module)
        if block is None:
            return _none(f"the run did not ablate module {module!r}")
        if block.available is False:
            return _none(block.reason or f"no ablation credit for {module!r}")
        m = block.metrics.false_belief_accuracy if block.metrics is not None else None
        value = _num(m.difference) if m is not None else None
        if m is None or value is None:
            reason = m.reason if m is not None else None
            return _none(str(reason or f"no ablation credit for {module!r}"))
        return FigureValue(value, _ci(m.ci, m.status), level)
    raise ValueError(f"unknown figure base {base!r}")  # figure() admits no other


def figure_value(
    profile: RunProfile, agent: str, fig: Figure | str, previous: RunProfile | None = None
) -> FigureValue:
    """The run's value of figure ``fig`` for ``agent`` (see the module docstring); for a
    ``change:`` figure, minus its value in ``previous`` (the agent's previous finished run of
    the same suite). ``fig`` may be a name (InputError for an unknown one)."""
    f = figure(fig) if isinstance(fig, str) else fig
    level = float(profile.intervals.level)
    a = profile.agents.get(agent)
    if a is None:
        return _none(f"{agent} is not in run {profile.run.id}")
    now = _level(a, f, level)
    if not f.change:
        return now
    if previous is None:
        return _none("no previous run of the same suite to take the change from")
    if previous.run.suite != profile.run.suite:
        return _none(
            f"the previous run {previous.run.id} is of another suite "
            f"({previous.run.suite}, not {profile.run.suite})"
        )
    pa = previous.agents.get(agent)
    if pa is None:
        return _none(f"{agent} is not in the previous run {previous.run.id}")
    before = _level(pa, f, level)
    if now.value is None:
        return _none(f"this run has no {f.level}: {now.reason}")
    if before.value is None:
        return _none(f"the previous run {previous.run.id} has no {f.level}: {before.reason}")
    diff = now.value - before.value
    ci = None
    if now.ci is not None and before.ci is not None:
        half = math.hypot((now.ci[1] - now.ci[0]) / 2.0, (before.ci[1] - before.ci[0]) / 2.0)
        ci = (diff - half, diff + half)
    return FigureValue(diff, ci, level)


# -- one forecast -----------------------------------------------------------------------------


def forecast_line(s: ForecastState) -> ForecastLine:
    """One forecast (a :class:`ledger.forecasts.ForecastState`) as the reports show it: its
    median and central intervals, and where the outcome fell."""
    out: dict[str, Any] = {
        "id": s.id,
        "run": s.run_id,
        "figure": s.figure,
        "status": s.status,
        "held": s.held,
    }
    if s.forecast is not None and s.status != "rejected":
        f = parse_forecast(s.forecast)
        out["form"] = f.form
        out["median"] = median(f)
        i50, i90 = central_interval(f, 0.5), central_interval(f, 0.9)
        out["interval_50"], out["interval_90"] = i50, i90
        y = _num(s.outcome)
        if y is not None and s.status == "scored":
            out["outcome"] = y
            out["in_50"] = None if i50 is None else i50[0] <= y <= i50[1]
            out["in_90"] = None if i90 is None else i90[0] <= y <= i90[1]
            out["confidently_wrong"] = out["in_90"] is False
    for key in ("rule", "loss", "naive_loss", "reason", "note"):
        value = getattr(s, key)
        if value is not None:
            out[key] = value
    return ForecastLine.of(out)


# -- the section ------------------------------------------------------------------------------


def _in_history(
    forecasts: Sequence[ForecastState], run_id: str, runs: Sequence[str] | None
) -> list[ForecastState]:
    """The forecasts of ``run_id`` and of the runs before it in ``runs`` (every forecast
    when ``runs`` is None; those of every run in ``runs`` when ``run_id`` is not among them,
    as for a run that has not finished)."""
    if runs is None:
        return list(forecasts)
    order = list(runs)
    keep = set(order[: order.index(run_id) + 1]) if run_id in order else set(order) | {run_id}
    return [s for s in forecasts if s.run_id in keep]


def _skill(
    rule: str, lines: Sequence[ForecastLine], key: int, *, seed: int, n_boot: int
) -> ForecastSkill:
    used = [x for x in lines if x.loss is not None and x.naive_loss is not None]
    by_run: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for x in used:
        by_run[x.run][0] += float(x.loss or 0.0)
        by_run[x.run][1] += float(x.naive_loss or 0.0)
    out: dict[str, Any] = {
        "rule": rule,
        "n": len(used),
        "n_runs": len(by_run),
        "without_naive": len(lines) - len(used),
    }
    if not used:
        return ForecastSkill.of(out | {
            "status": "not_estimable",
            "reason": "no scored forecast has a naive forecast (no previous value)",
        })
    loss = np.array([v[0] for v in by_run.values()])
    naive = np.array([v[1] for v in by_run.values()])
    if naive.sum() <= 0:
        return ForecastSkill.of(out | {
            "status": "not_estimable",
            "reason": "the naive forecasts lost nothing: skill is undefined",
        })
    out["value"] = 1.0 - float(loss.sum() / naive.sum())
    if len(by_run) < MIN_RUNS:
        return ForecastSkill.of(out | {
            "status": "not_estimable",
            "reason": f"{len(by_run)} run{'' if len(by_run) == 1 else 's'}: at "
            f"least {MIN_RUNS} are needed for a bootstrap interval over runs",
        })
    idx = rng(seed, SECTION_KEY, key).integers(0, len(by_run), size=(n_boot, len(by_run)))
    sl, sn = loss[idx].sum(axis=1), naive[idx].sum(axis=1)
    reps = 1.0 - sl[sn > 0] / sn[sn > 0]
    lo, hi = np.percentile(reps, [2.5, 97.5])
    return ForecastSkill.of(out | {
        "ci": [float(lo), float(hi)],
        "interval": "run-bootstrap-percentile-95",
        "status": "estimated",
    })


def _coverage(lines: Sequence[ForecastLine], mass: float) -> ForecastCoverage:
    attr = "in_50" if mass == 0.5 else "in_90"
    hits = [getattr(x, attr) for x in lines if getattr(x, attr) is not None]
    k, n = sum(bool(h) for h in hits), len(hits)
    out: dict[str, Any] = {"nominal": mass, "k": k, "n": n}
    if n == 0:
        return ForecastCoverage.of(out | {
            "reason": f"no scored forecast states a central {round(100 * mass)}% interval"
        })
    return ForecastCoverage.of(
        out | {"value": k / n, "ci": list(wilson_interval(k, n)), "interval": "wilson-95"})


def _bias(lines: Sequence[ForecastLine]) -> ForecastBias:
    with_median = [x for x in lines if x.median is not None and x.outcome is not None]
    below = sum(1 for x in with_median if (x.outcome or 0.0) < (x.median or 0.0))
    out: dict[str, Any] = {"n": len(with_median), "below_median": below}
    if with_median:
        out |= {
            "share_below_median": below / len(with_median),
            "ci": list(wilson_interval(below, len(with_median))),
            "interval": "wilson-95",
        }
    by: dict[str, list[ForecastLine]] = defaultdict(list)
    for x in with_median:
        by[x.figure].append(x)
    out["by_figure"] = {
        name: {
            "n": len(xs),
            "mean_error": math.fsum((x.median or 0.0) - (x.outcome or 0.0) for x in xs) / len(xs),
            "below_median": sum(1 for x in xs if (x.outcome or 0.0) < (x.median or 0.0)),
        }
        for name, xs in sorted(by.items())
    }
    return ForecastBias.of(out)


def self_forecast_section(
    forecasts: Sequence[ForecastState],
    run_id: str,
    *,
    runs: Sequence[str] | None = None,
    seed: int = 0,
    n_boot: int = 2000,
) -> SelfForecast | None:
    """The self-forecast section of one agent for run ``run_id`` from its forecasts (all of
    one predictor, any order; ``runs`` the agent's runs oldest first, which bounds the history
    at this run), or None when it has made none. ``seed`` and ``n_boot`` are the profile's
    bootstrap's. Pure."""
    chosen = _in_history(forecasts, run_id, runs)
    if not chosen:
        return None
    predictors = {s.predictor for s in chosen}
    if len(predictors) > 1:
        raise ValueError(f"forecasts of several predictors: {sorted(predictors)}")
    position = {r: i for i, r in enumerate(runs or ())}
    chosen.sort(key=lambda s: (position.get(s.run_id, len(position)), s.seq))
    lines = [forecast_line(s) for s in chosen]
    status = [x.status for x in lines]
    scored = [x for x in lines if x.status == "scored"]
    rules = sorted({x.rule for x in scored if x.rule is not None})
    section = {
        "run": run_id,
        "runs": len({x.run for x in lines}),
        "counts": {
            "committed": len(lines),
            "scored": status.count("scored"),
            "void": status.count("void"),
            "rejected": status.count("rejected"),
            "unrevealed": status.count("committed"),
        },
        "skill": {
            rule: _skill(rule, [x for x in scored if x.rule == rule], i, seed=seed, n_boot=n_boot)
            for i, rule in enumerate(rules)
        },
        "coverage": {"50": _coverage(scored, 0.5), "90": _coverage(scored, 0.9)},
        "bias": _bias(scored),
        "confidently_wrong": [x for x in scored if x.confidently_wrong],
        "this_run": [x for x in lines if x.run == run_id],
        "definition": DEFINITION,
    }
    return SelfForecast.of(section)


# -- into the profile -------------------------------------------------------------------------


def with_self_forecasts(
    profile: RunProfile,
    forecasts_by_agent: Mapping[str, Sequence[ForecastState]],
    *,
    runs_by_agent: Mapping[str, Sequence[str]] | None = None,
) -> RunProfile:
    """``profile`` with each agent's self-forecast section (agents without forecasts keep
    theirs absent; the profile is returned as it is when none has any). The bootstrap's seed
    and replicates are the profile's."""
    seed = int(profile.intervals.bootstrap_seed)
    n_boot = int(profile.intervals.bootstrap_replicates)
    sections = {}
    for name in profile.agents:
        section = self_forecast_section(
            forecasts_by_agent.get(name, ()),
            profile.run.id,
            runs=None if runs_by_agent is None else runs_by_agent.get(name),
            seed=seed,
            n_boot=n_boot,
        )
        if section is not None:
            sections[name] = section
    if not sections:
        return profile
    doc = profile.to_json()
    for name, section in sections.items():
        doc["agents"][name]["self_forecast"] = section.model_dump(
            mode="json", by_alias=True, exclude_unset=True
        )
    return RunProfile.of(doc)


def read_agent_forecasts(store: Any, agent: str) -> list[ForecastState]:
    """The agent's forecasts from the store's database
    (:func:`ledger.forecasts.read_forecasts`); [] for a reader without a database engine, or
    while the ledger cannot read forecasts yet."""
    engine = getattr(store, "engine", None)
    if engine is None:
        return []
    try:
        from ledger.forecasts import read_forecasts  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return []
    return list(read_forecasts(engine, predictor=agent))


def attach_self_forecasts(store: Any, profile: RunProfile) -> RunProfile:
    """``profile`` with the self-forecast section of every agent that has forecasts in
    ``store`` (see :func:`with_self_forecasts`); the agent's runs bound the history."""
    forecasts = {name: read_agent_forecasts(store, name) for name in profile.agents}
    forecasts = {name: fs for name, fs in forecasts.items() if fs}
    if not forecasts:
        return profile
    runs_of = getattr(store, "agent_runs", None)
    runs = None
    if callable(runs_of):
        runs = {name: list(runs_of(name)) for name in forecasts}
    return with_self_forecasts(profile, forecasts, runs_by_agent=runs)
