"""The simulation study behind the profile's statistics: do its intervals cover, and do two
identical agents ever differ?

:func:`run_study` simulates runs of the shipped suites' designs (:func:`reports.synthetic.
suite_design`) with synthetic agents whose D50s, agent − control differences and ablation effects
are known, profiles each run exactly as ``mindledger report`` does (:func:`reports.profile.
analyse`), and counts, for every figure, how often its 95% interval covers the value it
estimates (:func:`reports.synthetic.expected_figures`) — or how often it was honestly reported as
not estimable. Each seed also profiles a *null* run in which agent, control and ablation are the
same agent with independent randomness, and records whether any contrast came out significant
after Holm: the family-wise false-positive rate.

Pure (seeded generators only); ``bench/bench_stats.py`` runs it at scale and prints the table,
``tests/reports/test_reports_simulation.py`` runs a small version in CI.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from reports._blocks import Block, block_at, field_of
from reports._data import ItemTable
from reports._stats import wilson_interval
from reports.model import AgentProfile
from reports.profile import analyse
from reports.synthetic import (
    SyntheticAgent,
    expected_figures,
    logistic_accuracy,
    simulate,
    suite_design,
)

__all__ = [
    "AGENT_FIGURES",
    "CONTRASTS",
    "CoverageRow",
    "StudyResult",
    "null_agents",
    "run_study",
    "study_agents",
]

CHANCE = 0.25
SLOPE = -1.2
LENGTH_SLOPE = -0.05


def _agent(name: str, d50: float, **kw: Any) -> SyntheticAgent:
    base: dict[str, Any] = {"behaviour_accuracy": 0.6, "length_slope": LENGTH_SLOPE,
                            "confidence_noise": 0.1}
    return SyntheticAgent(name, logistic_accuracy(d50, SLOPE, CHANCE), d50=d50, **(base | kw))


def study_agents() -> list[SyntheticAgent]:
    """An agent under test (D50 2.7), its control (D50 1.8, leaks more, uses beliefs less) and
    an ablation that matters (D50 2.2)."""
    return [
        _agent("agent", 2.7),
        _agent("agent-control", 1.8, role="control", base_agent="agent", leak_share=0.7,
               behaviour_accuracy=0.5),
        _agent("agent-ablated", 2.2, role="ablation", base_agent="agent",
               spec={"ablated": "module"}),
    ]


def null_agents() -> list[SyntheticAgent]:
    """Agent, control and ablation that are one and the same agent (independent randomness)."""
    return [
        _agent("agent", 2.7),
        _agent("agent-control", 2.7, role="control", base_agent="agent"),
        _agent("agent-ablated", 2.7, role="ablation", base_agent="agent",
               spec={"ablated": "module"}),
    ]


AGENT_FIGURES: tuple[tuple[str, str], ...] = (
    ("D50", "d50"),
    ("false-belief accuracy (B1)", "false_belief_accuracy"),
    ("accuracy R1 (false belief)", "accuracy_by_depth.false.R1"),
    ("accuracy R3 (false belief)", "accuracy_by_depth.false.R3"),
    ("accuracy R5 (false belief)", "accuracy_by_depth.false.R5"),
    ("true-belief control accuracy", "true_belief_control_accuracy"),
    ("R0 reality check", "reality_check"),
    ("leakage resistance", "leakage_resistance"),
    ("R2-self own-belief leak", "r2_self.own_belief_leak"),
    ("accuracy, mechanism = lie", "by_mechanism.lie"),
    ("accuracy, surface form = chat", "by_form.chat"),
    ("accuracy at 6 events (B2)", "length_sweep.false.6"),
    ("accuracy at 20 events (B2)", "length_sweep.false.20"),
    ("depth coefficient (depth + length fit)", "slope.depth"),
    ("length coefficient (depth + length fit)", "slope.length"),
    ("applied gap (B4)", "applied_gap"),
    ("applied gap at R2 (B4)", "applied_gap.by_depth.R2"),
    ("games accuracy", "games_accuracy"),
)
"""(label, key) of the agent's figures in the coverage table."""

CONTRASTS: tuple[tuple[str, str, str], ...] = (
    ("agent − control: false-belief accuracy", "minus_control", "false_belief_accuracy"),
    ("agent − control: accuracy R3", "minus_control", "accuracy_by_depth.R3"),
    ("agent − control: D50", "minus_control", "d50"),
    ("agent − control: leakage resistance", "minus_control", "leakage_resistance"),
    ("agent − control: applied gap", "minus_control", "applied_gap"),
    ("agent − control: games accuracy", "minus_control", "games_accuracy"),
    ("ablation credit: false-belief accuracy", "ablation", "false_belief_accuracy"),
    ("ablation credit: D50", "ablation", "d50"),
    ("ablation credit: leakage resistance", "ablation", "leakage_resistance"),
)
"""(label, kind, metric) of the contrasts in the coverage table."""


def _get(block: Block | None, path: str) -> Block | None:
    return block_at(block, path.split("."))


def _figure(agent: AgentProfile, key: str) -> Block | None:
    """The profile block of figure ``key`` (the keys of :func:`expected_figures`)."""
    if key.startswith("by_mechanism.") or key.startswith("by_form."):
        group, level = key.split(".", 1)
        return _get(agent, f"{group}.false_belief_accuracy.{level}") if level else None
    if key.startswith("length_sweep."):
        _, belief, length = key.split(".")
        return block_at(agent, ("length_sweep", "accuracy_by_length", belief, length))
    if key.startswith("slope."):
        return _get(agent, f"degradation_slope.terms.{key.split('.', 1)[1]}")
    if key.startswith("applied_gap.by_depth."):
        return block_at(agent, ("applied_gap", "by_depth", key.rsplit(".", 1)[1]))
    if key == "games_accuracy":
        return _get(agent, "games.accuracy")
    return _get(agent, key)


def _contrast(agent: AgentProfile, kind: str, metric: str) -> Block | None:
    if kind == "minus_control":
        metrics = _get(agent.minus_control, "metrics")
    else:
        credit = agent.ablation_credit
        metrics = _get(next(iter(credit.values()), None), "metrics")
    if metric.startswith("accuracy_by_depth."):
        return block_at(metrics, ("accuracy_by_depth", metric.split(".", 1)[1]))
    return block_at(metrics, (metric,))


def _interval(d: Block | None, value_key: str) -> tuple[bool, float, float, float]:
    """(estimable, estimate, lo, hi) of a figure; open interval ends are ±inf."""
    value = None if d is None else field_of(d, value_key)
    ci = None if d is None else field_of(d, "ci")
    if d is None or value is None or not ci:
        return (False, math.nan, math.nan, math.nan)
    if field_of(d, "status") == "not_estimable":
        return (False, math.nan, math.nan, math.nan)
    lo, hi = ci
    return (True, float(value), -math.inf if lo is None else float(lo),
            math.inf if hi is None else float(hi))


@dataclass
class Tally:
    """Counts for one row of the table."""

    runs: int = 0
    estimable: int = 0
    covered: int = 0
    width: float = 0.0
    truth: float = math.nan

    def add(self, estimable: bool, lo: float, hi: float) -> None:
        self.runs += 1
        if estimable:
            self.estimable += 1
            self.covered += int(lo <= self.truth <= hi)
            if math.isfinite(hi - lo):
                self.width += hi - lo

    def row(self, figure: str, kind: Literal["estimate", "contrast"]) -> CoverageRow:
        est = self.estimable
        return CoverageRow(
            figure=figure,
            kind=kind,
            runs=self.runs,
            estimable=est,
            coverage=self.covered / est if est else None,
            coverage_mc_interval=wilson_interval(self.covered, est) if est else None,
            mean_width=self.width / est if est else None,
            truth=self.truth,
        )


@dataclass(frozen=True)
class CoverageRow:
    """One row of the study's table: a figure (``estimate``) or contrast, the runs it was
    profiled in, in how many it had an interval (``estimable``), the share of those intervals
    that covered the true value (``coverage``, None when none had one) with its Monte Carlo
    95% interval, the intervals' mean width, and the true value."""

    figure: str
    kind: Literal["estimate", "contrast"]
    runs: int
    estimable: int
    coverage: float | None
    coverage_mc_interval: tuple[float, float] | None
    mean_width: float | None
    truth: float


@dataclass
class StudyResult:
    """The outcome of :func:`run_study` on one design."""

    design: str
    seeds: int
    n_boot: int
    figures: dict[str, Tally] = field(default_factory=dict)
    contrasts: dict[str, Tally] = field(default_factory=dict)
    null_runs: int = 0
    null_any_significant: int = 0
    null_raw_significant: int = 0
    null_tests: int = 0
    null_m: list[int] = field(default_factory=list)

    @property
    def fwer(self) -> float:
        return self.null_any_significant / self.null_runs if self.null_runs else math.nan

    def rows(self) -> list[CoverageRow]:
        return [self.figures[label].row(label, "estimate") for label, _ in AGENT_FIGURES] + [
            self.contrasts[label].row(label, "contrast") for label, _, _ in CONTRASTS
        ]


def _truths(items: Sequence[Any]) -> tuple[dict[str, float], dict[str, float]]:
    agents = {a.name: a for a in study_agents()}
    ex = {name: expected_figures(a, items) for name, a in agents.items()}
    fig = dict(ex["agent"])
    fig["slope.depth"] = SLOPE
    fig["slope.length"] = LENGTH_SLOPE
    con: dict[str, float] = {}
    for label, kind, metric in CONTRASTS:
        other = "agent-control" if kind == "minus_control" else "agent-ablated"
        key = "accuracy_by_depth.false." + metric.split(".", 1)[1] \
            if metric.startswith("accuracy_by_depth.") else metric
        if key in ex["agent"] and key in ex[other]:
            con[label] = ex["agent"][key] - ex[other][key]
    return fig, con


def run_study(
    design: str,
    seeds: Sequence[int],
    *,
    n_boot: int = 1000,
    blocks_in_meta: bool = True,
    progress: Callable[[int], None] | None = None,
) -> StudyResult:
    """Simulate and profile one effect run and one null run per seed on ``design``."""
    items = suite_design(design, blocks_in_meta=blocks_in_meta)
    table = ItemTable.from_bodies([it.to_dict() for it in items])
    fig_truth, con_truth = _truths(suite_design(design))
    res = StudyResult(design, len(seeds), n_boot)
    for label, key in AGENT_FIGURES:
        res.figures[label] = Tally(truth=fig_truth.get(key, math.nan))
    for label, _, _ in CONTRASTS:
        res.contrasts[label] = Tally(truth=con_truth.get(label, math.nan))
    effect, null = study_agents(), null_agents()
    for count, seed in enumerate(seeds, start=1):
        rd = simulate(np.random.default_rng([seed, 1]), effect, items, table)
        prof = analyse(rd, seed=seed, n_boot=n_boot).profile
        agent = prof.agents["agent"]
        for label, key in AGENT_FIGURES:
            ok, _, lo, hi = _interval(_figure(agent, key), "value")
            res.figures[label].add(ok, lo, hi)
        for label, kind, metric in CONTRASTS:
            ok, _, lo, hi = _interval(_contrast(agent, kind, metric), "difference")
            res.contrasts[label].add(ok, lo, hi)
        rd0 = simulate(np.random.default_rng([seed, 2]), null, items, table)
        prof0 = analyse(rd0, seed=seed, n_boot=n_boot).profile
        ps = [c.p_holm for c in prof0.contrasts if c.p_holm is not None]
        raw = [c.p for c in prof0.contrasts if c.p is not None]
        res.null_runs += 1
        res.null_any_significant += int(any(p < 0.05 for p in ps))
        res.null_raw_significant += sum(p < 0.05 for p in raw)
        res.null_tests += len(raw)
        res.null_m.append(prof0.multiple_comparisons.m)
        if progress is not None:
            progress(count)
    return res
