"""Two runs of the same agents compared: what changed from run A to run B, every figure worded
as the profile words it (:mod:`reports.present`).

    compare(store, run_a, run_b) -> Comparison      # mindledger report --compare; the dashboard
    compare_runs(a, b) -> Comparison                # pure: from two analyses
    render_compare_markdown(cmp) -> str
    Comparison.to_json() / Comparison.of(json)      # the one serialiser and its parser

The comparison (schema ``mindledger.compare/1``) keeps every figure's machine keys (``a``,
``b``, ``difference``, ``ci``, ``n_a``, ``p``, ``p_holm``, ``status``, ``reason``) for scripts
and adds beside them the words every rendering shows, decided here once: the figure's
``title`` and ``unit``; each run's figure with its interval and n, or ``not measured (why)``
(``a_text``, ``b_text``); the change with its interval (``change_text``, ``—`` when there is
none); and its ``verdict``, judged from the interval and never from the point estimate
(:func:`reports.present.change_verdict`), or why the runs are not compared on it. An agent's
validity reads ``valid → invalid`` with the reason (``validity``), its role and settings
changes read as words (``changes``). The records are :mod:`reports._compared`'s.

The runs' profiles are read as :class:`~reports.model.RunProfile`, by attribute. Four compared
figures sit in sections the model leaves untyped (``games.accuracy``, ``games.abc``'s
``log_score_c`` and ``dissociation`` are extra keys of typed sections; ``calibration`` and
``applied_gap`` are plain objects): :func:`reports._blocks.field_of` is the one place that
reads them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel

from ledger.store import Store
from reports._blocks import Block, field_of
from reports._compared import (
    AgentComparison,
    Comparison,
    FigureChange,
    FigureWords,
    ValidityChange,
)
from reports._data import depth_sort_key, load_run
from reports._disclosure import disclosed_run_info
from reports._estimates import MetricSample, not_estimable_reason
from reports._stats import (
    bootstrap_pvalue,
    fisher_exact,
    holm,
    newcombe_interval,
    percentile_interval,
)
from reports.matrix_summary import accompanying_summary
from reports.model import AgentProfile, Skill
from reports.present import (
    MISSING,
    NOT_ESTIMABLE,
    NOT_MEASURED,
    agent_headline,
    change_verdict,
    d50_text,
    depth_text,
    difference_text,
    figure_title,
    marked_invalid,
    number,
    p_text,
    proportion_text,
    validity_word,
)
from reports.profile import Analysis, analyse

__all__ = [
    "COMPARED_FIGURES",
    "COMPARE_METRICS",
    "AgentComparison",
    "ComparedFigure",
    "Comparison",
    "FigureChange",
    "ValidityChange",
    "compare",
    "compare_runs",
    "compared_figure",
    "render_compare_markdown",
]

Kind = Literal["proportion", "d50", "gap", "score"]


@dataclass(frozen=True)
class ComparedFigure:
    """A figure of an agent's profile that two runs are compared on: its key (in the
    comparison and the profile's samples), how it is worded (``kind``), where the agent's
    profile holds it (``path``), and whether the agent's validity check withholds it."""

    key: str
    kind: Kind
    path: tuple[str, ...]
    false_belief: bool = False

    @property
    def proportion(self) -> bool:
        """Shown as a percentage, its changes in percentage points."""
        return self.kind in ("proportion", "gap")

    @property
    def title(self) -> str:
        return figure_title(self.key)

    @property
    def unit(self) -> str | None:
        """``%`` (a change in percentage points), ``levels`` (D50), None for a score."""
        return {"proportion": "%", "gap": "%", "d50": "levels"}.get(self.kind)

    def text(self, agent: AgentProfile, *, compact: bool = False) -> str:
        """The figure in one run as the profile words it, with its interval and n (marked
        INVALID when the agent failed its validity check and the figure is a false-belief
        one); ``not measured (why)`` when the run has no value for it. ``compact`` (a table
        cell): the value and n alone, ``INVALID`` alone, ``not measured`` alone."""
        block, why = _block(agent, self.path)
        if block is None or (self.kind != "d50" and number(field_of(block, "value")) is None):
            why = why or (None if block is None else field_of(block, "reason"))
            return f"{NOT_MEASURED} ({why})" if why and not compact else NOT_MEASURED
        if self.kind == "d50":
            text = d50_text(block, with_ci=not compact)
        elif self.kind == "proportion":
            text = proportion_text(block, with_ci=not compact)
        elif compact:  # a gap or a score: its value and n
            value = number(field_of(block, "value")) or 0.0
            shown = f"{100.0 * value:+.1f} pts" if self.kind == "gap" else f"{value:.3f}"
            text = f"{shown} n={field_of(block, 'n')}"
        elif self.kind == "gap":  # a paired difference (applied_gap), worded as a contrast
            gap = block.model_dump() if isinstance(block, BaseModel) else block
            text = difference_text({**gap, "difference": gap.get("value")}, with_n=True)
        else:
            text = depth_text(block, digits=3)
        if self.false_belief and agent.valid is False:
            return marked_invalid(text, compact=compact)
        return text


COMPARED_FIGURES: tuple[ComparedFigure, ...] = (
    ComparedFigure("false_belief_accuracy", "proportion", ("false_belief_accuracy",), True),
    ComparedFigure("true_belief_control_accuracy", "proportion", ("true_belief_control_accuracy",)),
    ComparedFigure("reality_check", "proportion", ("reality_check",)),
    ComparedFigure("d50", "d50", ("d50",), True),
    ComparedFigure("leakage_resistance", "proportion", ("leakage_resistance",), True),
    ComparedFigure("applied_gap", "gap", ("applied_gap",)),
    ComparedFigure("games_accuracy", "proportion", ("games", "accuracy")),
    ComparedFigure("log_score_c", "score", ("games", "abc", "log_score_c")),
    ComparedFigure("abc_dissociation", "proportion", ("games", "abc", "dissociation")),
    ComparedFigure("ece", "score", ("calibration", "ece")),
)
"""The figures compared for every agent, in order; accuracy at each depth (false belief)
follows them."""

COMPARE_METRICS: tuple[tuple[str, bool], ...] = tuple(
    (f.key, f.proportion) for f in COMPARED_FIGURES
)
"""(key, shown as a proportion) of :data:`COMPARED_FIGURES`."""

_DEPTH = "accuracy_by_depth."


def compared_figure(key: str) -> ComparedFigure:
    """The figure a comparison's key names: one of :data:`COMPARED_FIGURES`, or the accuracy
    at one depth (``accuracy_by_depth.false.R1``)."""
    for f in COMPARED_FIGURES:
        if f.key == key:
            return f
    if key.startswith(_DEPTH):
        belief, _, label = key.removeprefix(_DEPTH).partition(".")
        return ComparedFigure(
            key, "proportion", ("accuracy_by_depth", belief, label), belief == "false"
        )
    raise KeyError(f"no compared figure {key!r}")


def _block(agent: AgentProfile, path: Sequence[str]) -> tuple[Block | None, str | None]:
    """The profile block at ``path`` and, when a section on the way is unavailable, its
    reason (``no game items answered in this run``)."""
    node: Any = agent
    for step in path:
        if not isinstance(node, BaseModel | Mapping):
            return None, None
        if field_of(node, "available") is False:
            return None, field_of(node, "reason")
        node = field_of(node, step)
    if not isinstance(node, BaseModel | Mapping):
        return None, None
    if field_of(node, "available") is False:
        return None, field_of(node, "reason")
    return node, None


# -- comparing ---------------------------------------------------------------------------------


def compare_runs(a: Analysis, b: Analysis, *, reveal_held_out: bool = False) -> Comparison:
    """What changed from run ``a`` to run ``b`` for every agent present in both (pure).

    The runs have different items, so the contrasts are unpaired. A proportion's change gets
    Newcombe's hybrid score interval and Fisher's exact test (at the design-effect-adjusted
    counts where trials share clusters); D50, ECE and the C log score get the percentile interval
    of differences between the runs' independent bootstrap replicates and the percentile p-value
    (never below 2/(B+1)). A change is not estimable when either run's own figure is not (too
    few items for an interval). Agent-prediction skill S (each run's headline S) is shown for
    both runs, its change with the square-and-add interval of the runs' own intervals (no
    test), and a side where S was not measured with its reason instead of a number. A figure
    one run measured and the other did not is shown with the other side's reason and no
    change. Differences are ``b − a``; p-values are Holm-adjusted across the table. A held-out
    run's seed is withheld from ``run_a``/``run_b`` unless ``reveal_held_out``.
    """
    pa, pb = a.profile, b.profile
    common = [n for n in pa.agents if n in pb.agents]
    notes = []
    if pa.run.suite != pb.run.suite:
        notes.append(
            f"the runs used different suites ({pa.run.suite} vs "
            f"{pb.run.suite}): differences mix agent and item changes"
        )
    if pa.held_out != pb.held_out:
        notes.append("one run used held-out seeds and the other did not")
    numbers: dict[str, dict[str, FigureChange]] = {}
    for name in common:
        numbers[name] = _changes_of(
            pa.agents[name],
            pb.agents[name],
            a.metric_samples.get(name, {}),
            b.metric_samples.get(name, {}),
        )
    tested = [(name, key) for name, m in numbers.items() for key, d in m.items() if d.p is not None]
    adjusted = holm([numbers[name][key].p or 0.0 for name, key in tested])
    for (name, key), ph in zip(tested, adjusted, strict=True):
        numbers[name][key] = numbers[name][key].but(p_holm=ph)
    agents = {
        name: _agent_comparison(name, pa.agents[name], pb.agents[name], numbers[name])
        for name in common
    }
    ra = disclosed_run_info(pa.run, reveal_held_out=reveal_held_out)
    rb = disclosed_run_info(pb.run, reveal_held_out=reveal_held_out)
    return Comparison(
        title=f"mindledger compare — {ra.id} → {rb.id}",
        run_a=ra,
        run_b=rb,
        direction="b − a",
        interval="proportions: Newcombe hybrid score interval and Fisher's exact test; D50, "
        "ECE and log score: percentile interval of differences of independent bootstrap "
        "replicates (95%) and the percentile p-value; Holm-adjusted across the table",
        agents=agents,
        only_in_a=tuple(n for n in pa.agents if n not in pb.agents),
        only_in_b=tuple(n for n in pb.agents if n not in pa.agents),
        notes=tuple(notes),
    )


def _changes_of(
    ga: AgentProfile,
    gb: AgentProfile,
    sa: Mapping[str, MetricSample],
    sb: Mapping[str, MetricSample],
) -> dict[str, FigureChange]:
    """Every figure of one agent compared, numbers only (not yet Holm-adjusted nor worded),
    in the order the reports show them; S comes last, already worded (it has no test)."""
    out: dict[str, FigureChange] = {}
    depths = sorted(
        {k for k in (*sa, *sb) if k.startswith(_DEPTH + "false.")},
        key=lambda k: depth_sort_key(k.rsplit(".", 1)[1]),
    )
    for fig in (*COMPARED_FIGURES, *map(compared_figure, depths)):
        key = fig.key
        if key in sa and key in sb:
            out[key] = _change(sa[key], sb[key])
        elif key in sa or key in sb or key == "d50":
            out[key] = _one_sided(fig, ga, gb, sa.get(key), sb.get(key))
    return out


def _agent_comparison(
    name: str, ga: AgentProfile, gb: AgentProfile, numbers: Mapping[str, FigureChange]
) -> AgentComparison:
    """One agent in both runs: its figures worded (their p-values already adjusted), S, its
    validity and its role and settings changes."""
    metrics = {key: d.worded(_words(compared_figure(key), d, ga, gb)) for key, d in numbers.items()}
    metrics["agent_prediction_skill"] = _skill_change(name, ga, gb)
    spec_a, spec_b = ga.spec, gb.spec
    spec_changes = {
        k: (spec_a.get(k), spec_b.get(k))
        for k in sorted(set(spec_a) | set(spec_b))  # one order, whatever the process
        if spec_a.get(k) != spec_b.get(k)
    }
    return AgentComparison(
        role=(ga.role, gb.role),
        valid=(ga.valid, gb.valid),
        validity=_validity(ga, gb),
        spec_changes=spec_changes,
        changes=tuple(_changes(ga.role, gb.role, spec_changes)),
        metrics=metrics,
    )


def _one_sided(
    fig: ComparedFigure,
    ga: AgentProfile,
    gb: AgentProfile,
    sa: MetricSample | None,
    sb: MetricSample | None,
) -> FigureChange:
    """A figure not measured as a number in both runs: each side's value (D50: its display,
    a bound or a bracket, when it has no point estimate), no change, and why."""

    def side(s: MetricSample | None, g: AgentProfile) -> float | str | None:
        if s is not None:
            return s.value
        return g.d50.display if fig.kind == "d50" else None

    lacks = [(run, _lacks(fig, g)) for run, s, g in (("a", sa, ga), ("b", sb, gb)) if s is None]
    return FigureChange(
        a=side(sa, ga),
        b=side(sb, gb),
        difference=None,
        n_a=sa.n if sa else None,
        n_b=sb.n if sb else None,
        ci=None,
        interval=None,
        test=None,
        p=None,
        p_holm=None,
        status="not_estimable",
        reason=_runs_lacking(lacks),
    )


def _lacks(fig: ComparedFigure, agent: AgentProfile) -> str:
    """Why a run has no number to compare: not measured, not estimable, or (D50: a bound or
    a bracket) no point estimate."""
    block, _ = _block(agent, fig.path)
    if fig.kind == "d50" and block is not None:
        return NOT_ESTIMABLE if field_of(block, "status") == "not_estimable" else "no point estimate"
    return NOT_MEASURED


def _runs_lacking(lacks: Sequence[tuple[str, str]], what: str = "") -> str:
    """``not measured in run b``; ``not measured in either run`` when both runs lack the
    figure alike; ``what`` names the figure (``S``)."""
    lead = f"{what} " if what else ""
    if len(lacks) == 2 and lacks[0][1] == lacks[1][1]:
        return f"{lead}{lacks[0][1]} in either run"
    return "; ".join(f"{lead}{why} in run {run}" for run, why in lacks)


def _words(fig: ComparedFigure, d: FigureChange, ga: AgentProfile, gb: AgentProfile) -> FigureWords:
    """How every rendering words one figure's comparison (see the module docstring)."""
    has_change = number(d.difference) is not None
    return FigureWords(
        title=fig.title,
        unit=fig.unit,
        a_text=fig.text(ga),
        b_text=fig.text(gb),
        a_compact=fig.text(ga, compact=True),
        b_compact=fig.text(gb, compact=True),
        change_text=difference_text(d, proportion=fig.proportion) if has_change else MISSING,
        verdict=_verdict(d, has_change, _invalid_in(ga, gb) if fig.false_belief else ""),
    )


def _invalid_in(ga: AgentProfile, gb: AgentProfile) -> str:
    """``""``, ``"run A"``, ``"run B"`` or ``"both runs"``: where the agent is invalid."""
    bad = [run for run, g in (("A", ga), ("B", gb)) if g.valid is False]
    return "" if not bad else "both runs" if len(bad) == 2 else f"run {bad[0]}"


def _verdict(d: FigureChange, has_change: bool, invalid_in: str) -> str:
    if not has_change:
        return f"not compared ({_capital_runs(str(d.reason or NOT_MEASURED))})"
    if invalid_in:
        return f"not counted (invalid in {invalid_in})"
    return change_verdict(d)


def _capital_runs(reason: str) -> str:
    """The comparison's reasons name runs ``a`` and ``b`` (scripts match them); people read
    ``run A`` and ``run B``."""
    return reason.replace("in run a", "in run A").replace("in run b", "in run B")


def _validity(ga: AgentProfile, gb: AgentProfile) -> ValidityChange:
    """The agent's validity in both runs in words: ``valid → invalid`` (``valid`` alone when
    it did not change) and, for a run where it is invalid or unchecked, why."""
    a, b = validity_word(ga.valid), validity_word(gb.valid)
    why = []
    for run, g in (("A", ga), ("B", gb)):
        message = g.validity.message
        if g.valid is not True and message:
            why.append(f"run {run}: {message}")
    return ValidityChange(a=a, b=b, text=a if a == b else f"{a} → {b}", why=tuple(why))


def _setting_text(value: Any) -> str:
    if value is None:
        return f"{MISSING} (not set)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _changes(role_a: str, role_b: str, spec_changes: Mapping[str, Sequence[Any]]) -> list[str]:
    """The agent's role and settings changes in words: ``policy: oracle → not-reality``."""
    out = [f"role: {role_a} → {role_b}"] if role_a != role_b else []
    out += [
        f"{k}: {_setting_text(v[0])} → {_setting_text(v[1])}"
        for k, v in sorted(spec_changes.items())
    ]
    return out


def _skill_text(name: str, agent: AgentProfile, *, compact: bool = False) -> str:
    """The agent's headline S as the profile words it (``not measured: why`` when it is not);
    ``compact``: its values alone."""
    return agent_headline(name, agent, with_ci=not compact).skill


def _skill_sample(skill: Skill) -> MetricSample | None:
    """The headline S (the agent predicting a fresh copy of itself) as a sample to compare;
    None when it was not measured or has no value."""
    value = number(skill.value)
    if not skill.available or value is None:
        return None
    lo, hi = (number(x) for x in skill.ci) if skill.ci is not None else (None, None)
    interval = (lo, hi) if lo is not None and hi is not None else None
    estimable = skill.status != "not_estimable" and interval is not None
    return MetricSample(value, skill.n or 0, estimable, ci=interval if estimable else None)


def _skill_change(name: str, ga: AgentProfile, gb: AgentProfile) -> FigureChange:
    """Agent-prediction skill S (the profile's headline, from the matrix run that accompanies
    each run) in both runs: the change with the square-and-add interval of the runs' own
    intervals (no test) where both are estimated; otherwise each side as the profile words it,
    a not-measured side with its reason, and no difference."""
    ska, skb = ga.agent_prediction_skill, gb.agent_prediction_skill
    sa, sb = _skill_sample(ska), _skill_sample(skb)
    a_text, b_text = _skill_text(name, ga), _skill_text(name, gb)

    def words(change_text: str, verdict: str) -> FigureWords:
        return FigureWords(
            title=figure_title("agent_prediction_skill"),
            unit=None,
            a_text=a_text,
            b_text=b_text,
            a_compact=_skill_text(name, ga, compact=True),
            b_compact=_skill_text(name, gb, compact=True),
            change_text=change_text,
            verdict=verdict,
        )

    if sa is None or sb is None:
        lacks = [
            (run, NOT_MEASURED if not sk.available else NOT_ESTIMABLE)
            for run, sk, smp in (("a", ska, sa), ("b", skb, sb))
            if smp is None
        ]
        why = _runs_lacking(lacks, "S")
        # the one record without interval and test keys (the schema as it has been written)
        d = FigureChange(
            a=a_text,
            b=b_text,
            difference=None,
            n_a=ska.n,
            n_b=skb.n,
            ci=None,
            p=None,
            p_holm=None,
            status="not_estimable",
            reason=why + " (no change to show)",
        )
        return d.worded(words(MISSING, f"not compared ({_capital_runs(why)})"))
    d = _change(sa, sb)
    if not (sa.estimable and sb.estimable):
        small, sk = ("a", ska) if not sa.estimable else ("b", skb)
        # _change's not-estimable record, with S's own reason for having no interval
        d = d.but(
            reason=f"in run {small}: S has no interval" + (f" ({sk.reason})" if sk.reason else "")
        )
    return d.worded(words(difference_text(d, proportion=False), change_verdict(d)))


def _change(sa: MetricSample, sb: MetricSample) -> FigureChange:
    """One metric's change between two runs (b − a), by the method its kind allows."""
    d = FigureChange(
        a=sa.value,
        b=sb.value,
        difference=sb.value - sa.value,
        n_a=sa.n,
        n_b=sb.n,
        ci=None,
        interval=None,
        test=None,
        p=None,
        p_holm=None,
    )
    if not (sa.estimable and sb.estimable):
        small = sa if not sa.estimable else sb
        return d.but(
            status="not_estimable",
            reason="in run " + ("a" if small is sa else "b") + ": " + not_estimable_reason(small.n),
        )
    if sa.k is not None and sb.k is not None and sa.n_eff and sb.n_eff:
        lo, hi = newcombe_interval(sb.k, sb.n_eff, sa.k, sa.n_eff)
        p = fisher_exact(round(sb.k), round(sb.n_eff), round(sa.k), round(sa.n_eff))
        return d.but(
            ci=(lo, hi), interval="newcombe-95", test="Fisher exact", p=p, status="estimated"
        )
    if sa.ci is not None and sb.ci is not None and sa.replicates is None:
        # MOVER (square-and-add) on the two runs' own intervals; no test
        da, db = sa.value, sb.value
        lo = (db - da) - math.hypot(db - sb.ci[0], sa.ci[1] - da)
        hi = (db - da) + math.hypot(sb.ci[1] - db, da - sa.ci[0])
        return d.but(
            ci=(lo, hi),
            interval="mover-95",
            status="estimated",
            note="interval only (square-and-add of the runs' own intervals); no test",
        )
    if sa.replicates is None or sb.replicates is None:
        return d.but(status="not_estimable", reason="no replicates to compare")
    with np.errstate(invalid="ignore"):
        diff = sb.replicates - sa.replicates
    lo, hi, _ = percentile_interval(diff)
    return d.but(
        ci=(lo if math.isfinite(lo) else None, hi if math.isfinite(hi) else None),
        interval="independent-bootstrap-95",
        test="bootstrap percentile",
        p=bootstrap_pvalue(diff),
        status="estimated",
    )


def compare(
    store: Store,
    run_a: str,
    run_b: str,
    *,
    seed: int = 0,
    n_boot: int = 2000,
    reveal_held_out: bool = False,
) -> Comparison:
    """:func:`compare_runs` for two stored runs (independent bootstrap seeds per run), each
    with the matrix run that accompanies it (for S); a held-out run's seed only with
    ``reveal_held_out`` (operators)."""
    reveal = reveal_held_out
    ma = accompanying_summary(store, run_a, n_boot=n_boot, stats_seed=seed)
    mb = accompanying_summary(store, run_b, n_boot=n_boot, stats_seed=seed + 1)
    a = analyse(load_run(store, run_a), seed=seed, n_boot=n_boot, reveal_held_out=reveal, matrix=ma)
    b = analyse(
        load_run(store, run_b), seed=seed + 1, n_boot=n_boot, reveal_held_out=reveal, matrix=mb
    )
    return compare_runs(a, b, reveal_held_out=reveal)


# -- Markdown ------------------------------------------------------------------------------------

COMPARE_HEAD = ("figure", "run A", "run B", "change B − A [95%]", "verdict", "p (Holm)")


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


def render_compare_markdown(cmp: Comparison) -> str:
    """The comparison as Markdown: per agent its validity and changed settings in words, then
    one row per figure (its title, each run's figure with its interval and n, the change and
    its verdict). It names the runs by id and prints no seed, so it needs no
    ``reveal_held_out``: :func:`compare` decided what ``cmp`` holds."""
    ra, rb = cmp.run_a, cmp.run_b
    out = [
        f"# mindledger compare — `{ra.id}` → `{rb.id}`",
        "",
        f"Run A is `{ra.id}` (suite {ra.suite or MISSING}), run B `{rb.id}` "
        f"(suite {rb.suite or MISSING}). Each run's figure is shown with its 95% "
        f"interval and n; a change is B − A with its 95% interval ({cmp.interval}), "
        "called clearly higher or lower only when that interval excludes 0 and, where the "
        "change has a test, its Holm-adjusted p is below 0.05.",
        "",
    ]
    for n in cmp.notes:
        out += [f"> {n}", ""]
    if cmp.only_in_a or cmp.only_in_b:
        out += [
            f"Only in run A: {', '.join(cmp.only_in_a) or MISSING}; only in run B: "
            f"{', '.join(cmp.only_in_b) or MISSING}.",
            "",
        ]
    if not cmp.agents:
        out += ["No agent is in both runs: nothing to compare.", ""]
    for name, ag in cmp.agents.items():
        out += [f"## {name}", ""]
        validity = ag.validity
        if validity.a != validity.b or validity.why:
            out += [f"> **Validity: {validity.text}.** " + " ".join(validity.why), ""]
        if ag.changes:
            out += ["Changed: " + "; ".join(ag.changes) + ".", ""]
        rows = [
            [d.title, d.a_text, d.b_text, d.change_text, d.verdict, p_text(d.p_holm)]
            for d in ag.metrics.values()
        ]
        out += [_table(COMPARE_HEAD, rows), ""]
    return "\n".join(out) + "\n"
