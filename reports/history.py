"""An agent's history: every headline figure over its runs, and the runs that regressed.

Public API::

    agent_history(store, agent, *, metrics=None, since=None, suite=None) -> AgentHistory
    history_of(agent, profiles, *, metrics=None, rule=DEFAULT_RULE) -> AgentHistory   # pure
    HEADLINE_METRICS, METRICS, DEFAULT_RULE, RegressionRule, Metric
    AgentHistory / MetricHistory / HistoryPoint / Regression                          # frozen

The figures are the profile's headline (:mod:`reports.present`): D50, false-belief accuracy,
leakage resistance, agent-prediction skill S (predicting itself), the true-belief control
accuracy, the level-k depth signals K_B and K_L, and calibration (ECE). Each point keeps the
value, the 95% interval and the n the profile gives it, whether the run was held out (the
daemon's nightly runs are), and whether it is flagged.

**The regression rule** (:class:`RegressionRule`, defaults ``window=5``, ``min_history=3``,
``alpha=0.01``). A run's figure is compared with the same figure on the agent's previous
``window`` runs *of the same suite* (runs of another suite have another design) whose figure
counts (not withheld by an invalid validity check) and has what the test needs. With fewer
than ``min_history`` such runs the figure is not tested. Otherwise:

- a **proportion** (false-belief accuracy, leakage resistance, true-belief control accuracy)
  is tested with the one-sided Fisher exact test of its k/n against the pooled k/n of those
  runs (H0: the same success probability; H1: lower now). Exact for any n, so a quick suite's
  7 items count as 7;
- any **other figure** (D50, S, K_B, K_L, ECE) is tested with a one-sided z test of its value
  against the inverse-variance weighted mean of the previous values, each figure's standard
  error read from its own 95% interval (width / 3.92); a figure with no interval (n too small,
  an open D50 bound) is not tested, and says so;
- the direction is the figure's: lower is worse, except ECE (higher is worse);
- a run's figure is **flagged** when its p ≤ ``alpha / m``, m being the number of figures tested
  on that run (Bonferroni): the chance that a run of an unchanged agent is flagged at all is at
  most ``alpha`` (for the exact tests; about ``alpha`` for the z tests).

The baseline takes the previous runs whether they were flagged or not, so a lasting change is
flagged on each of the following runs until it fills the window (it is then the agent's level);
:meth:`AgentHistory.new_regressions` gives only the figures that *became* flagged on a run
(their previous run was not flagged), which is what the daemon notifies.

Pure apart from :func:`agent_history`, which reads the runs and builds their profiles.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ledger.store import Store
from mindledger.words import counted
from reports._json import JsonObject
from reports.model import AgentProfile, ForecastLine, RunProfile
from reports.present import (
    NOT_IDENTIFIABLE,
    d50_text,
    depth_text,
    every_trial_failed,
    most_trials_failed,
    proportion_text,
    small_n_said_once,
)

__all__ = [
    "DEFAULT_RULE",
    "HEADLINE_METRICS",
    "METRICS",
    "AgentHistory",
    "HistoryPoint",
    "Metric",
    "MetricHistory",
    "Regression",
    "RegressionRule",
    "agent_history",
    "history_of",
    "metric_keys",
]

Interval = tuple[float | None, float | None]
Kind = Literal["proportion", "estimate"]
Better = Literal["higher", "lower"]
Z95 = 1.959963984540054


@dataclass(frozen=True)
class RegressionRule:
    """When a run's figure is flagged (see the module docstring): compared with the previous
    ``window`` runs of the same suite, given at least ``min_history`` of them, at family-wise
    level ``alpha`` per run (Bonferroni over the figures tested on it)."""

    window: int = 5
    min_history: int = 3
    alpha: float = 0.01

    def __post_init__(self) -> None:
        if self.window < 1 or not 1 <= self.min_history <= self.window:
            raise ValueError("expected 1 <= min_history <= window")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError("expected 0 < alpha < 1")

    def describe(self) -> str:
        """The rule in one sentence, as the reports print it."""
        return (
            f"a run's figure is flagged when it is below the pooled previous {self.window} "
            f"run{_s(self.window)} of the same suite (at least {self.min_history}) by a one-sided "
            "test (Fisher exact for proportions, z from the 95% intervals otherwise) at level "
            f"{self.alpha:g} per run, Bonferroni over the figures tested on it"
        )

    def to_dict(self) -> JsonObject:
        return {"window": self.window, "min_history": self.min_history, "alpha": self.alpha,
                "text": self.describe()}


DEFAULT_RULE = RegressionRule()


@dataclass(frozen=True)
class _Figure:
    """One figure of one agent on one run, as read from the profile."""

    value: float | None
    ci: Interval | None
    n: int | None
    k: int | None
    text: str
    counted: bool = True
    note: str | None = None


@dataclass(frozen=True)
class Metric:
    """A headline figure followed over runs: its key (``--metric``), title, kind (a
    ``proportion`` with k/n, or an ``estimate`` with an interval) and which way is worse."""

    key: str
    title: str
    kind: Kind
    better: Better
    read: Callable[[AgentProfile], _Figure] = field(repr=False, compare=False)
    percent: bool = False

    def format(self, value: float | None) -> str:
        """A value as a table cell: ``58.1%`` for a proportion, ``2.97`` otherwise."""
        if value is None:
            return "—"
        return f"{100.0 * value:.1f}%" if self.percent else f"{value:.3g}"


@dataclass(frozen=True)
class HistoryPoint:
    """One run's figure: value, 95% interval and n as the profile gives them (``k`` for a
    proportion), the run's suite and time, whether it was held out (nightly runs are), whether
    it counts (an invalid agent's false-belief figures do not), and the verdict of the rule:
    ``flagged`` with ``reason``; ``tested`` False with ``reason`` saying why not; ``baseline``
    the pooled previous level it was compared with and ``p`` the one-sided p-value."""

    run_id: str
    created_at: str | None
    suite: str | None
    held_out: bool
    value: float | None
    ci: Interval | None
    n: int | None
    k: int | None = None
    text: str = ""
    counted: bool = True
    tested: bool = False
    flagged: bool = False
    baseline: float | None = None
    baseline_n: int | None = None
    p: float | None = None
    threshold: float | None = None
    reason: str | None = None

    def to_dict(self) -> JsonObject:
        return {
            "run_id": self.run_id, "created_at": self.created_at, "suite": self.suite,
            "held_out": self.held_out, "value": self.value,
            "ci": None if self.ci is None else list(self.ci), "n": self.n, "k": self.k,
            "text": self.text, "counted": self.counted, "tested": self.tested,
            "flagged": self.flagged, "baseline": self.baseline, "baseline_n": self.baseline_n,
            "p": self.p, "threshold": self.threshold, "reason": self.reason,
        }


@dataclass(frozen=True)
class MetricHistory:
    """One figure over the agent's runs, oldest first."""

    metric: Metric
    points: tuple[HistoryPoint, ...]

    @property
    def key(self) -> str:
        return self.metric.key

    @property
    def title(self) -> str:
        return self.metric.title

    def values(self) -> list[float | None]:
        return [p.value for p in self.points]

    def flagged(self) -> list[HistoryPoint]:
        return [p for p in self.points if p.flagged]

    def to_dict(self) -> JsonObject:
        return {"key": self.key, "title": self.title, "kind": self.metric.kind,
                "better": self.metric.better, "points": [p.to_dict() for p in self.points]}


@dataclass(frozen=True)
class Regression:
    """A flagged figure of one run."""

    metric: Metric
    point: HistoryPoint

    def to_dict(self) -> JsonObject:
        return {"metric": self.metric.key, "title": self.metric.title,
                "value": self.point.value, "text": self.point.text,
                "ci": None if self.point.ci is None else list(self.point.ci),
                "n": self.point.n, "baseline": self.point.baseline, "p": self.point.p,
                "reason": self.point.reason}


@dataclass(frozen=True)
class RunRef:
    """A run of the history."""

    id: str
    created_at: str | None
    suite: str | None
    held_out: bool
    valid: bool | None
    failed: str | None = None
    """Why the agent has no figures on this run when every one of its trials failed."""
    mostly_failed: str | None = None
    """``"24 of its 26 trials were API errors: its figures rest on the 2 others"`` when more
    than half, not all, of its trials failed (:func:`reports.present.most_trials_failed`)."""

    def to_dict(self) -> JsonObject:
        return {"id": self.id, "created_at": self.created_at, "suite": self.suite,
                "held_out": self.held_out, "valid": self.valid, "failed": self.failed,
                "mostly_failed": self.mostly_failed}


@dataclass(frozen=True)
class AgentHistory:
    """Every followed figure of ``agent`` over its runs (``runs``, oldest first), and its
    self-forecasts of those runs (``forecasts``, oldest run first: each one's 50% and 90%
    band beside the outcome, :mod:`reports.self_forecast`)."""

    agent: str
    rule: RegressionRule
    runs: tuple[RunRef, ...]
    metrics: tuple[MetricHistory, ...]
    forecasts: tuple[ForecastLine, ...] = ()
    small_n: str = ""
    """Said once for every view instead of ``(no interval: n < 10)`` after each figure too
    small for an interval (a nightly quick suite's every figure): :meth:`SmallN.note
    <reports.present.SmallN.note>`; ``""`` when no figure lacked one for its size."""

    def confidently_wrong(self) -> list[ForecastLine]:
        """The forecasts whose outcome fell outside their 90% interval."""
        return [f for f in self.forecasts if f.confidently_wrong]

    def metric(self, key: str) -> MetricHistory:
        for m in self.metrics:
            if m.key == key:
                return m
        raise KeyError(key)

    def regressions(self, run_id: str | None = None) -> list[Regression]:
        """Flagged figures of run ``run_id`` (default: every run)."""
        return [Regression(m.metric, p) for m in self.metrics for p in m.points
                if p.flagged and (run_id is None or p.run_id == run_id)]

    def new_regressions(self, run_id: str) -> list[Regression]:
        """Figures flagged on ``run_id`` whose previous run of the same suite was not
        flagged: a regression that begins on this run (what is notified)."""
        out = []
        for m in self.metrics:
            pts = list(m.points)
            for i, p in enumerate(pts):
                if p.run_id != run_id or not p.flagged:
                    continue
                before = [q for q in pts[:i] if q.suite == p.suite and q.value is not None]
                if not before or not before[-1].flagged:
                    out.append(Regression(m.metric, p))
        return out

    def since(self, when: dt.date | dt.datetime | str) -> AgentHistory:
        """The runs created on or after ``when`` (a date, an aware datetime or an ISO string),
        their verdicts unchanged (the earlier runs served as their baseline)."""
        cut = _since_text(when)
        keep = {r.id for r in self.runs if (r.created_at or "") >= cut}
        return AgentHistory(
            self.agent, self.rule, tuple(r for r in self.runs if r.id in keep),
            tuple(MetricHistory(m.metric, tuple(p for p in m.points if p.run_id in keep))
                  for m in self.metrics),
            tuple(f for f in self.forecasts if f.run in keep),
            self.small_n,
        )

    def to_dict(self) -> JsonObject:
        """JSON-ready (``mindledger history --format json``)."""
        return {
            "schema": "mindledger.history/1",
            "agent": self.agent,
            "rule": self.rule.to_dict(),
            "runs": [r.to_dict() for r in self.runs],
            "metrics": {m.key: m.to_dict() for m in self.metrics},
            "flagged": [{"run_id": r.point.run_id, **r.to_dict()} for r in self.regressions()],
            "forecasts": [f.model_dump(mode="json", exclude_unset=True) for f in self.forecasts],
            "small_n": self.small_n or None,
        }


# -- reading the figures off a profile ---------------------------------------------------------


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


def _interval(ci: Any, status: Any = None) -> Interval | None:
    if status == "not_estimable" or not isinstance(ci, Sequence) or len(ci) != 2:
        return None
    return (_num(ci[0]), _num(ci[1]))


def _int(x: Any) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _withheld(a: AgentProfile) -> bool:
    return a.valid is False


def _failed(a: AgentProfile) -> str | None:
    """Why the agent has no figures on a run where every one of its trials failed, else
    None: said once for the run instead of "not estimable (no scored items)" under every
    figure."""
    failed = every_trial_failed(a)
    return None if failed is None else f"run failed: {failed}"


def _mostly_failed(a: AgentProfile) -> str | None:
    """What more than half of its trials failing (not all) leaves its figures resting on."""
    mostly = most_trials_failed(a)
    if mostly is None:
        return None
    errors, trials = mostly
    left = trials - errors
    return (
        f"{errors} of its {trials} trials were API errors: its figures rest on the "
        f"{counted(left, 'other')}"
    )


def _proportion(attr: str, *, false_belief: bool = False) -> Callable[[AgentProfile], _Figure]:
    def read(a: AgentProfile) -> _Figure:
        e = getattr(a, attr)
        counted = not (false_belief and _withheld(a))
        return _Figure(_num(e.value), _interval(e.ci, e.status), _int(e.n), _int(e.k),
                       proportion_text(e), counted,
                       None if counted else "not counted: the agent is invalid on this run")
    return read


def _d50(a: AgentProfile) -> _Figure:
    d = a.d50
    counted = not _withheld(a)
    value = _num(d.value) if d.status == "estimated" else None
    return _Figure(value, _interval(d.ci) if value is not None else None, d.n, None,
                   d50_text(d), counted,
                   None if counted else "not counted: the agent is invalid on this run")


def _skill(a: AgentProfile) -> _Figure:
    s = a.agent_prediction_skill
    if not s.available:
        return _Figure(None, None, None, None, "not measured", note=s.reason)
    text = "—" if _num(s.value) is None else f"{s.value:.3f}"
    return _Figure(_num(s.value), _interval(s.ci, s.status), _int(s.n), None, text)


def _depth(attr: str) -> Callable[[AgentProfile], _Figure]:
    def read(a: AgentProfile) -> _Figure:
        ds = a.depth_signals
        if ds is None or not ds.available or getattr(ds, attr) is None:
            reason = ds.reason if ds is not None else None
            return _Figure(None, None, None, None, "not measured", note=reason)
        e = getattr(ds, attr)
        if getattr(e, "identifiable", None) is False:
            # no level explains the agent's choices better than chance: no point to follow
            return _Figure(None, None, _int(e.n), None, NOT_IDENTIFIABLE, note=e.reason)
        return _Figure(_num(e.value), _interval(e.ci, e.status), _int(e.n), None,
                       depth_text(e))
    return read


def _ece(a: AgentProfile) -> _Figure:
    cal = a.calibration
    e = cal.ece if cal is not None else None
    if cal is None or not cal.available or e is None:
        return _Figure(None, None, None, None, "not measured",
                       note=cal.reason if cal is not None else None)
    value = _num(e.value)
    ci = _interval(e.ci, e.status)
    text = "—" if value is None else f"{value:.3f}"
    if ci is not None and None not in ci:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    text += f" n={e.n}"
    return _Figure(value, ci, _int(e.n), None, text)


HEADLINE_METRICS: tuple[Metric, ...] = (
    Metric("d50", "D50", "estimate", "higher", _d50),
    Metric("false_belief", "false-belief accuracy", "proportion", "higher",
           _proportion("false_belief_accuracy", false_belief=True), percent=True),
    Metric("leakage_resistance", "leakage resistance", "proportion", "higher",
           _proportion("leakage_resistance", false_belief=True), percent=True),
    Metric("skill", "skill S (self)", "estimate", "higher", _skill),
    Metric("true_belief", "true-belief control accuracy", "proportion", "higher",
           _proportion("true_belief_control_accuracy"), percent=True),
    Metric("K_B", "K_B (depth by action)", "estimate", "higher", _depth("K_B")),
    Metric("K_L", "K_L (depth by stated belief)", "estimate", "higher", _depth("K_L")),
    Metric("ece", "calibration ECE", "estimate", "lower", _ece),
)
"""Every figure the history follows, in the order the reports show them."""

METRICS: Mapping[str, Metric] = {m.key: m for m in HEADLINE_METRICS}


def metric_keys() -> list[str]:
    return [m.key for m in HEADLINE_METRICS]


def _select(metrics: Iterable[str] | None) -> tuple[Metric, ...]:
    if metrics is None:
        return HEADLINE_METRICS
    wanted = list(metrics)
    unknown = [k for k in wanted if k not in METRICS]
    if unknown:
        from mindledger.errors import InputError

        raise InputError(f"unknown metric {unknown[0]!r} (known: {', '.join(METRICS)})",
                         where="metric")
    return tuple(m for m in HEADLINE_METRICS if m.key in wanted)


# -- the rule -----------------------------------------------------------------------------------


def _fisher_less(k: int, n: int, k0: int, n0: int) -> float:
    """One-sided Fisher exact p of "the run's success probability is lower than the
    baseline's" for k/n against k0/n0."""
    from scipy.stats import fisher_exact

    res = fisher_exact([[k, n - k], [k0, n0 - k0]], alternative="less")
    return float(min(1.0, res.pvalue))


def _se(ci: Interval | None) -> float | None:
    if ci is None or ci[0] is None or ci[1] is None:
        return None
    se = (ci[1] - ci[0]) / (2.0 * Z95)
    return se if se > 0.0 and math.isfinite(se) else None


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@dataclass(frozen=True)
class _Test:
    p: float
    baseline: float
    baseline_n: int
    what: str


def _s(n: int) -> str:
    """The plural ending for ``n`` of something: ``1 run``, ``0 runs``, ``3 runs``."""
    return "" if n == 1 else "s"


def _test(metric: Metric, fig: _Figure, prior: Sequence[_Figure], rule: RegressionRule
          ) -> _Test | str:
    """The one-sided test of ``fig`` against ``prior`` (already the window), or why not."""
    if fig.value is None:
        return "no value"
    if metric.kind == "proportion":
        if fig.k is None or not fig.n:
            return "no k/n"
        usable = [f for f in prior if f.k is not None and f.n]
        if len(usable) < rule.min_history:
            return (f"history too short ({len(usable)} earlier run{_s(len(usable))}; "
                    f"{rule.min_history} needed)")
        k0 = sum(f.k or 0 for f in usable)
        n0 = sum(f.n or 0 for f in usable)
        p = _fisher_less(fig.k, fig.n, k0, n0)
        return _Test(p, k0 / n0, len(usable),
                     f"{fig.k}/{fig.n} against {k0}/{n0} over the previous {len(usable)} "
                     f"run{_s(len(usable))}, one-sided Fisher")
    se = _se(fig.ci)
    if se is None:
        return "no interval"
    usable2 = [(f.value, s) for f in prior
               if f.value is not None and (s := _se(f.ci)) is not None]
    if len(usable2) < rule.min_history:
        return (f"history too short ({len(usable2)} earlier run{_s(len(usable2))} with an "
                f"interval; {rule.min_history} needed)")
    weights = [1.0 / (s * s) for _, s in usable2]
    mean = sum(w * v for w, (v, _) in zip(weights, usable2, strict=True)) / sum(weights)
    se0 = math.sqrt(1.0 / sum(weights))
    z = (fig.value - mean) / math.sqrt(se * se + se0 * se0)
    p = _phi(z) if metric.better == "higher" else _phi(-z)
    return _Test(p, mean, len(usable2),
                 f"{fig.value:.3g} against {mean:.3g} over the previous {len(usable2)} "
                 f"run{_s(len(usable2))}, one-sided z = {z:+.2f}")


def history_of(
    agent: str,
    profiles: Sequence[RunProfile | Mapping[str, Any]],
    *,
    metrics: Iterable[str] | None = None,
    rule: RegressionRule = DEFAULT_RULE,
    forecasts: Sequence[ForecastLine] = (),
) -> AgentHistory:
    """The history of ``agent`` over ``profiles`` (its runs' profiles, oldest first; a profile
    without the agent is skipped), every figure tested by ``rule``; ``metrics`` (keys of
    :data:`METRICS`) chooses the figures returned, not the tests. ``forecasts``: the agent's
    self-forecasts (:func:`reports.self_forecast.forecast_line`); those of the history's runs
    are kept, in run order. Pure."""
    chosen = _select(metrics)
    parsed = [p if isinstance(p, RunProfile) else RunProfile.of(p) for p in profiles]
    parsed = [p for p in parsed if agent in p.agents]
    runs = tuple(RunRef(p.run.id, p.run.created_at, p.run.suite, p.held_out,
                        p.agents[agent].valid, _failed(p.agents[agent]),
                        _mostly_failed(p.agents[agent])) for p in parsed)
    # every figure is tested, whichever are shown, so that m (the Bonferroni count, per run)
    # and so every verdict is the same in every view
    # a figure too small for an interval is worded without "(no interval: n < 10)", said once
    # for the history instead (small_n)
    with small_n_said_once() as small:
        figures = {m.key: [m.read(p.agents[agent]) for p in parsed] for m in HEADLINE_METRICS}
    verdicts: dict[str, list[_Test | str]] = {m.key: [] for m in HEADLINE_METRICS}
    for i, run in enumerate(runs):
        for m in HEADLINE_METRICS:
            fig = figures[m.key][i]
            if not fig.counted:
                verdicts[m.key].append(fig.note or "not counted")
                continue
            prior = [f for f, r in zip(figures[m.key][:i], runs[:i], strict=True)
                     if r.suite == run.suite and f.counted and f.value is not None]
            verdicts[m.key].append(_test(m, fig, prior[-rule.window:], rule))
    out = []
    for m in chosen:
        points = []
        for i, run in enumerate(runs):
            fig, v = figures[m.key][i], verdicts[m.key][i]
            failed = fig.value is None and run.failed is not None
            point = HistoryPoint(
                run_id=run.id, created_at=run.created_at, suite=run.suite,
                held_out=run.held_out, value=fig.value, ci=fig.ci, n=fig.n, k=fig.k,
                text="run failed" if failed else fig.text, counted=fig.counted)
            if failed:
                points.append(replace(point, reason="not tested: the run failed"))
                continue
            if isinstance(v, str):
                note = fig.note if fig.value is None and fig.note else v
                points.append(replace(point, reason=note))
                continue
            tested_here = sum(isinstance(verdicts[x.key][i], _Test) for x in HEADLINE_METRICS)
            threshold = rule.alpha / tested_here
            flagged = v.p <= threshold
            word = "below" if m.better == "higher" else "above"
            verdict = f"{word} the recent level" if flagged else "within noise"
            points.append(replace(
                point, tested=True, flagged=flagged, baseline=v.baseline,
                baseline_n=v.baseline_n, p=v.p, threshold=threshold,
                reason=f"{verdict}: {v.what} p = {v.p:.2g} (flagged at p <= {threshold:.2g})",
            ))
        out.append(MetricHistory(m, tuple(points)))
    order = {r.id: i for i, r in enumerate(runs)}
    kept = sorted((f for f in forecasts if f.run in order), key=lambda f: order[f.run])
    return AgentHistory(agent, rule, runs, tuple(out), tuple(kept), small.note())


# -- from the database --------------------------------------------------------------------------


def _since_text(since: dt.date | dt.datetime | str) -> str:
    if isinstance(since, str):
        return since
    if isinstance(since, dt.datetime):
        if since.tzinfo is None:
            raise ValueError("since: expected an aware datetime")
        return since.astimezone(dt.UTC).isoformat()
    return since.isoformat()


def agent_history(
    store: Store,
    agent: str,
    *,
    metrics: Iterable[str] | None = None,
    since: dt.date | dt.datetime | str | None = None,
    suite: str | None = None,
    rule: RegressionRule = DEFAULT_RULE,
    n_boot: int = 2000,
    seed: int = 0,
    last: int | None = None,
    until: str | None = None,
) -> AgentHistory:
    """The history of ``agent`` over its finished runs as the agent under test (oldest first;
    matrix runs are not suite runs: S comes into the suite run's profile from the matrix beside
    it). ``since`` keeps the runs created on or after it (a date, an aware datetime or an ISO
    string; the rule still looks back at the earlier runs for a baseline); ``suite`` keeps one
    suite's runs; ``until`` ends the history at that run and ``last`` keeps its last runs only
    (``2 * rule.window + 1`` are all :meth:`AgentHistory.new_regressions` needs for the last
    one). Builds each run's profile as ``mindledger report`` does (``seed`` and ``n_boot`` are
    the bootstrap's)."""
    from reports.profile import build_profile
    from reports.self_forecast import forecast_line, read_agent_forecasts

    chosen = _select(metrics)
    run_ids = store.agent_runs(agent, suite=suite)
    if until is not None and until in run_ids:
        run_ids = run_ids[: run_ids.index(until) + 1]
    if last is not None:
        run_ids = run_ids[-last:] if last > 0 else []
    profiles = [build_profile(store, r, seed=seed, n_boot=n_boot) for r in run_ids]
    forecasts = [forecast_line(s) for s in read_agent_forecasts(store, agent)]
    history = history_of(agent, profiles, metrics=[m.key for m in chosen], rule=rule,
                         forecasts=forecasts)
    return history if since is None else history.since(since)
