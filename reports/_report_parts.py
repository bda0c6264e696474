"""The pieces every rendering of a profile shares (:mod:`reports.render`, :mod:`reports._html`):
formatting of figures, the rows of each section's tables and an agent's Markdown section."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mindledger.disclosure import seed_phrase, shown_seed
from reports._data import depth_sort_key
from reports._estimates import MIN_N
from reports.model import (
    AbcSection,
    AgentProfile,
    ApiErrors,
    AppliedGap,
    ByDepth,
    Calibration,
    Coefficient,
    Contrast,
    ContrastFigure,
    ContrastMetrics,
    ContrastSection,
    Ece,
    Estimate,
    GamesSection,
    GapFigures,
    KMean,
    LengthSweep,
    PopulationC,
    ProxySection,
    R2Self,
    RepeatedFigure,
    RepeatedSection,
    RunProfile,
    Slope,
)
from reports.present import (
    HEADLINE_COLUMNS,
    INVALID,
    MISSING,
    abc_contrast_rows,
    agent_headline,
    contrast_label,
    depth_signals_lines,
    difference_text,
    every_trial_failed,
    headline_columns,
    headlines,
    marked_invalid,
    no_interval,
    p_text,
    proportion_text,
    role_order,
    small_n_said_once,
)
from reports.self_forecast_render import self_forecast_markdown
from reports.verdicts import REFERENCES_HEADING, Verdict, contrast_note

TAGS = {
    "wilson-95": "W",
    "wilson-deff-95": "W-deff",
    "wilson-strat-95": "W-strat",
    "newcombe-paired-95": "NP",
    "newcombe-95": "N2",
    "paired-t-95": "Pt",
    "t-95": "t",
    "cluster-bootstrap-95": "CB",
    "paired-bootstrap-percentile-95": "PB",
    "independent-bootstrap-95": "IB",
    "mover-95": "MOVER",
    "normal-95": "N",
    "wald-95": "Wald",
    "wald-cluster-robust-95": "Wald-CR",
}
TAG_TITLES = {
    "W": "Wilson 95% interval",
    "W-deff": "Wilson 95% at the design-effect-adjusted n (trials that share a game cell)",
    "W-strat": "Wilson 95% at the stratification-adjusted n (pooled over depth cells)",
    "NP": "Newcombe's paired 95% interval, exact McNemar test",
    "N2": "Newcombe's hybrid score 95% interval",
    "Pt": "paired t 95% interval, sign-flip permutation test",
    "t": "t 95% interval",
    "CB": "cluster bootstrap 95% within the design's strata",
    "PB": "paired bootstrap 95%, label-permutation test",
    "IB": "independent bootstrap 95%",
    "MOVER": "square-and-add (MOVER) 95% interval",
    "N": "normal approximation 95%",
    "Wald": "Wald 95% interval",
    "Wald-CR": "Wald 95% interval, cluster-robust",
}
"""Each interval tag's meaning, the title an HTML reader sees on hovering over the tag (the
glossary at the end of the report says it in full)."""
_TAG_RE = re.compile(
    r"(?<=[\]\d] )(" + "|".join(re.escape(t) for t in sorted(TAG_TITLES, key=len, reverse=True))
    + r")(?=$|[\s,;.)])"
)
"""An interval tag where it follows a figure: after its interval or its n."""

LEGEND = (
    "Intervals are 95%. W = Wilson (W-strat: at the stratification-adjusted n, for proportions "
    "pooled over the design's depth cells; W-deff: at the design-effect-adjusted n, for trials "
    "that share a game cell); NP = Newcombe's paired interval with the exact McNemar test; Pt = "
    "paired t interval with the sign-flip permutation test; t = t interval; CB = cluster "
    "bootstrap within the design's strata; PB = paired bootstrap of the D50 difference with a "
    "label-permutation test; N = normal approximation; Wald(-CR) = Wald (cluster-robust). "
    f"Below n = {MIN_N} a figure has no interval and a contrast no test. p(Holm) is adjusted "
    "across every testable contrast in the report. API errors are excluded from accuracy and "
    "counted."
)


# -- formatting ----------------------------------------------------------------------------


def _f(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, int | float):
        return f"{v:.{digits}f}"
    return str(v)


def _pct(v: Any) -> str:
    return "—" if v is None else f"{100 * v:.1f}%"


def _ci(ci: Any, pct: bool = True, digits: int = 3) -> str:
    if not ci:
        return ""
    lo, hi = ci

    def shown(x: float | None) -> str:
        if pct:
            return "—" if x is None else f"{100 * x:.1f}"
        return "open" if x is None else f"{x:.{digits}f}"

    return f" [{shown(lo)}, {shown(hi)}]"


class _Tagged(Protocol):
    """A figure that names its interval's method."""

    @property
    def interval(self) -> str | None: ...


class _Figure(_Tagged, Protocol):
    """A figure with a value and the interval its design allows (or none)."""

    @property
    def value(self) -> float | None: ...
    @property
    def ci(self) -> tuple[float | None, float | None] | None: ...
    @property
    def status(self) -> str | None: ...


def _tag_of(interval: str | None) -> str:
    return TAGS.get(str(interval), str(interval)) if interval else ""


def _tag(d: _Tagged) -> str:
    return _tag_of(d.interval)


def fmt_prop(d: _Figure | None) -> str:
    """``58.1% [51.2, 64.8] n=420 W``; ``57.1% n=7 (no interval: …)`` when not estimable; the
    reason when there is no value (:func:`reports.present.proportion_text` plus the interval's
    tag)."""
    text = proportion_text(d)
    if d is not None and d.status != "not_estimable" and d.ci and d.value is not None:
        text = f"{text} {_tag(d)}".rstrip()
    return text


def fmt_diff(d: _Tagged | None, pct: bool = True) -> str:
    if d is None:
        return MISSING
    return difference_text(d, proportion=pct, tag=_tag(d))


fmt_p = p_text


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


def _seed_sentence(profile: RunProfile, reveal_held_out: bool) -> str:
    """``seed 12, development seeds``; ``seed 7, held-out seeds`` for an operator; else
    ``seed withheld (held-out run)``."""
    held = profile.held_out or profile.run.held_out
    seed = shown_seed(profile.run.seed, held_out=held, reveal_held_out=reveal_held_out)
    if seed is None:
        return seed_phrase(None, held_out=held)
    return f"seed {seed}, {'held-out' if held else 'development'} seeds"


# -- shared section builders (rows), used by Markdown and HTML ------------------------------


PROXY_HEAD = ["agent", "calls", "with a prediction", "refused", "refusals by reason",
              "obligations opened", "met", "abandoned", "owes a prediction to"]


def _proxy_rows(proxy: ProxySection) -> list[list[str]]:
    """Per agent: calls through the query proxy, how many carried a prediction, refusals by
    reason, obligations opened, met and abandoned (still open 24 h after the sampled call, as
    of the ledger's last entry) and open obligations (counts, no interval: they are the record,
    not an estimate)."""
    rows = []
    for name, t in sorted((proxy.agents or {}).items()):
        reasons = ", ".join(f"{k} {v}" for k, v in t.refusals.items()) or "—"
        owed = ", ".join(t.open_obligations) or "nobody"
        ob = t.obligations
        rows.append([name, str(t.calls), str(t.predicted), str(t.refused), reasons,
                     str(ob.opened), str(ob.met), str(ob.abandoned), owed])
    return rows


def _headline_rows(profile: RunProfile) -> list[list[str]]:
    columns = headline_columns(profile)
    return [h.cells(columns) for h in headlines(profile, beside_valid=True)]


HEADLINE_HEAD = [title for _, title in HEADLINE_COLUMNS]


def _headline_head(profile: RunProfile) -> list[str]:
    """The headline table's titles: skill S only when the run measured it."""
    return [title for _, title in headline_columns(profile)]


def _top_notices(profile: RunProfile) -> list[str]:
    """The profile's notices shown under the verdict: each INVALID agent's own notice is in
    the verdict (worded once) and at the head of its section, not repeated at the top."""
    return [n for n in profile.notices if not n.startswith(INVALID)]


def _agent_order(profile: RunProfile) -> list[str]:
    """Agents under test first, then controls, ablation variants, references."""
    agents = profile.agents
    return sorted(agents, key=lambda n: role_order(agents[n].role, n))


def _agent_section(name: str, a: AgentProfile, *, contrasts: bool = True,
                   forests: Mapping[str, str] | None = None) -> list[str]:
    """An agent's Markdown section (:func:`_agent_markdown`); figures without an interval for
    their size are said to be so once, under its title."""
    with small_n_said_once() as tally:
        lines = _agent_markdown(name, a, contrasts=contrasts, forests=forests)
    if tally:
        at = 2 + 2 * len(a.notices)  # under its title and notices
        lines[at:at] = [tally.note(), ""]
    return lines


def _verdict_markdown(v: Verdict) -> list[str]:
    out = ["## Verdict", ""]
    if v.unfinished:
        out += [f"**{v.unfinished}**", ""]
    for a in v.agents:
        out += [" ".join(a.sentences()), ""]
    for o in v.others:
        out += [o, ""]
    if v.references:
        out += [REFERENCES_HEADING, "", *(f"- {r.text}" for r in v.references), ""]
    for n in v.notes:
        out += [n, ""]
    return out


def _legend(profile: RunProfile) -> str:
    return (f"{LEGEND} Bootstrap: B={profile.intervals.bootstrap_replicates}, seed "
            f"{profile.intervals.bootstrap_seed}.")


def _depth_rows(a: AgentProfile) -> list[list[str]]:
    acc = a.accuracy_by_depth
    joint = a.joint_accuracy_by_depth
    labels = sorted(set(acc.false) | set(acc.true), key=depth_sort_key)
    rows = []
    rc = a.reality_check
    if rc.n:
        rows.append(["R0", f"reality check (both cells): {fmt_prop(rc)}", "—", "—"])
    invalid = a.valid is False
    for lab in labels:
        fb = fmt_prop(acc.false.get(lab))
        rows.append([
            lab,
            marked_invalid(fb) if invalid else fb,
            fmt_prop(acc.true.get(lab)),
            fmt_prop(joint.false.get(lab)),
        ])
    return rows


DEPTH_HEAD = ["depth", "false belief", "true belief", "joint (false belief)"]


def _error_rows(a: AgentProfile) -> tuple[list[str], list[list[str]]]:
    cells = a.error_types_by_depth.false if a.error_types_by_depth is not None else {}
    codes = sorted({k for c in cells.values() for k in c.counts})
    head = ["depth", "n", "wrong", *codes]
    rows = []
    for lab in sorted(cells, key=depth_sort_key):
        c = cells[lab]
        rows.append([lab, str(c.n), str(c.n_wrong), *[str(c.counts.get(k, 0)) for k in codes]])
    return head, rows


CONTRAST_LABELS = {
    "false_belief_accuracy": ("false-belief accuracy", True),
    "d50": ("D50", False),
    "leakage_resistance": ("leakage resistance", True),
    "applied_gap": ("applied-ToM gap", True),
    "games_accuracy": ("games accuracy", True),
    "log_score_c": ("log score of C", False),
    "abc_dissociation": ("A/B/C dissociation", True),
    "opponent_type_inference": ("opponent-type inference", True),
    "agent_prediction_skill": ("agent-prediction skill S", False),
    "repeated_exploitation": ("repeated-game exploitation", False),
}
NOT_PCT_METRICS = ("d50", "log_score", "repeated_exploitation")
"""Contrast metrics that are not proportions (printed as numbers, not percentage points)."""


def _contrast_rows(
    metrics: ContrastMetrics,
    sides: Callable[[ContrastFigure], tuple[float | str | None, float | str | None]],
) -> list[list[str]]:
    """A contrast block's table: per metric the two agents' figures (``sides``: agent and
    control, or full and ablated), the difference, n and the tests."""
    rows = []
    for key, (label, pct) in CONTRAST_LABELS.items():
        d = metrics.figure(key)
        if d is None:
            continue
        if d.available is False:
            rows.append([label, "—", "—", f"— ({d.reason})", "—", "—", "—"])
            continue

        def val(v: float | str | None, pct: bool = pct) -> str:
            if isinstance(v, str):
                return v
            return _pct(v) if pct else _f(v, 2)

        first, second = sides(d)
        n = str(d.n) if "n" in d.model_fields_set else "—"
        rows.append([label, val(first), val(second), fmt_diff(d, pct), n, fmt_p(d.p),
                     fmt_p(d.p_holm)])
        if key == "false_belief_accuracy":
            for lab, dd in (metrics.accuracy_by_depth or {}).items():
                first, second = sides(dd)
                rows.append([f"  FB accuracy {lab}", val(first), val(second),
                             fmt_diff(dd, True), str(dd.n), fmt_p(dd.p), fmt_p(dd.p_holm)])
    return rows


def _games_rows(g: GamesSection) -> list[list[str]]:
    return [[r.game, r.condition, fmt_prop(r.accuracy), fmt_prop(r.within_one)]
            for r in g.by_game_condition or []]


def _k_mean(d: KMean) -> str:
    # imported here, not at the top, to keep this change apart from the verdict's imports
    from reports.present import NOT_IDENTIFIABLE

    if d.identifiable is False and d.mean is None:
        # the reason is said once, in the depth signals under the table
        return NOT_IDENTIFIABLE
    if d.mean is None:
        return f"— (unresolved {d.unresolved})"
    if not d.ci:
        return f"{d.mean:.2f} n={d.n}{no_interval(d)} (unresolved {d.unresolved})"
    return (f"{d.mean:.2f}{_ci(d.ci, pct=False, digits=2)} n={d.n} "
            f"{_tag(d)} (unresolved {d.unresolved})")


def _kcurve_rows(g: GamesSection) -> list[list[str]]:
    return [[c.condition, _f(c.target_depth, 0), _k_mean(c.K_B), _k_mean(c.K_L),
             f"{_pct(c.accuracy)} n={c.n}"] for c in g.k_curves or []]


REPEATED_HEAD = ["game", "counterfactual", "episodes", "exploitation [N]",
                 "comprehension (m ≤ rounds) [W]", "median m", "points / 1k tokens [N]",
                 "invalid moves", "B6 latency [N]", "B6 adapted [W]"]
REPEATED_GAP_HEAD = ["game", "counterfactual", "default", "counterfactual value",
                     "gap default − counterfactual [N]", "n (default / cf)"]


def _fmt_mean(d: RepeatedFigure | Estimate | None, digits: int = 2) -> str:
    """``0.93 [0.85, 1.01] n=12 N`` (or the reason when there is no value)."""
    if d is None or d.value is None:
        return "—" if d is None or not d.reason else f"— ({d.reason})"
    if d.status == "not_estimable":
        return f"{d.value:.{digits}f} n={d.n}{no_interval(d)}"
    ci = d.ci
    return (f"{d.value:.{digits}f}{_ci(ci, pct=False, digits=digits) if ci else ''} "
            f"n={d.n} {_tag(d)}").rstrip()


def _c_llm_line(c: PopulationC) -> str:
    """Condition C against the run's own agents, one line: its scores with n, or why none."""
    head = "C against the run's agents (each agent's plays, the predictor's own left out): "
    if c.reason:
        return head + str(c.reason)
    text = (head + f"log score {_fmt_mean(c.log_score, 3)} (uniform "
            + (f"{c.uniform_log_score:.3f}" if c.uniform_log_score is not None else MISSING)
            + f"); Brier {_fmt_mean(c.brier, 3)}; top-1 {fmt_prop(c.top1)}")
    if c.not_estimable_scenarios:
        text += (f"; {c.not_estimable_scenarios} scenarios not estimable ("
                 + "; ".join(c.not_estimable_reasons or {}) + ")")
    return text


def _repeated_rows(r: RepeatedSection) -> list[list[str]]:
    rows = []
    for c in r.by_game_counterfactual or []:
        ex = c.exploitation
        ex_s = _fmt_mean(ex)
        if ex.n_undefined and ex.value is not None:
            ex_s += f" ({ex.n_undefined} undefined)"
        comp = c.comprehension
        inv = c.invalid_moves
        b6 = c.b6
        rows.append([
            c.game, c.counterfactual, str(c.n_episodes), ex_s, fmt_prop(comp),
            _f(comp.median_m, 1), _fmt_mean(c.efficiency),
            (f"{_pct(inv.value)} ({inv.invalid_rounds}/{inv.rounds} rounds)"
             if inv.value is not None else f"— ({inv.reason})"),
            _fmt_mean(b6.adaptation_latency, 1) if b6.available else "—",
            fmt_prop(b6.adapted) if b6.available else "—",
        ])
    return rows


def _repeated_gap_rows(r: RepeatedSection) -> list[list[str]]:
    rows = []
    for g in r.counterfactual_gap or []:
        if not g.available:
            rows.append([g.game, str(g.counterfactual), "—", "—", f"— ({g.reason})", "—"])
            continue
        ci = g.ci
        diff = MISSING if g.difference is None else f"{g.difference:+.2f}"
        rows.append([g.game, str(g.counterfactual), _f(g.default, 2), _f(g.value, 2),
                     f"{diff}{_ci(ci, pct=False, digits=2) if ci else ''} N",
                     f"{g.n_default} / {g.n_counterfactual}"])
    return rows


def _repeated_markdown(r: RepeatedSection) -> list[str]:
    """The section's Markdown, one line per list element (tables too: the HTML renderer reads
    a table line by line)."""
    api_errors = r.api_errors if "api_errors" in r.model_fields_set else 0
    out = ["### Repeated games", "",
           f"{r.n_episodes} scored episodes ({api_errors} API errors); mean "
           f"exploitation {_fmt_mean(r.exploitation)}. Exploitation: 1 = best response "
           "to the opponent's script, 0 = random play; N = normal 95%, W = Wilson 95%; B6 = "
           "switching bots (latency in rounds after the switch, adapted episodes).", "",
           _table(REPEATED_HEAD, _repeated_rows(r)), ""]
    if r.counterfactual_gap:
        out += ["Counterfactual gap on exploitation (default − counterfactual, matched pairs: "
                "same opponent and draws in both settings):", "",
                _table(REPEATED_GAP_HEAD, _repeated_gap_rows(r)), ""]
    b6 = r.b6
    if b6 is not None and b6.available:
        out += [f"B6 (switching bots, apart from the counterfactual cells): {b6.n} episodes; "
                f"exploitation {_fmt_mean(b6.exploitation)}; adaptation latency "
                f"{_fmt_mean(b6.adaptation_latency, 1)}; adapted {fmt_prop(b6.adapted)}.",
                ""]
    notes = [f"{c.game}/{c.counterfactual}: {c.exploitation.note}"
             for c in r.by_game_counterfactual or [] if c.exploitation.note]
    if notes:
        out += ["Notes: " + "; ".join(notes) + ".", ""]
    return [line for part in out for line in part.split("\n")]


CONTRASTS_HEAD = ["agent", "contrast", "metric", "difference [PB]", "n", "p", "p (Holm)"]


def _contrast_row(c: Contrast) -> list[Any]:
    """One row of the table of every contrast (the n as given)."""
    pct = not c.metric.startswith(NOT_PCT_METRICS)
    return [c.agent, contrast_label(c.kind, c.module, c.metric), c.metric,
            fmt_diff(c, pct), c.n, fmt_p(c.p), fmt_p(c.p_holm)]


def _contrasts_family(profile: RunProfile) -> str:
    mc = profile.multiple_comparisons
    return f"Family: {mc.family}; m = {mc.m}."


def _all_contrasts_markdown(profile: RunProfile) -> list[str]:
    out: list[str] = []
    if profile.contrasts:
        out += ["## All contrasts (Holm-adjusted)", "", _contrasts_family(profile), ""]
        rows = []
        for c in profile.contrasts:
            row = _contrast_row(c)
            row[4] = str(row[4])
            rows.append(row)
        out += [_table(CONTRASTS_HEAD, rows), ""]
    return out


def _agent_markdown(name: str, a: AgentProfile, *, contrasts: bool = True,
                    forests: Mapping[str, str] | None = None) -> list[str]:
    """One agent's section. ``contrasts=False`` leaves out its contrast blocks (the HTML draws
    them itself); ``forests`` links each block's forest plot by its figure id."""
    forests = forests or {}
    out = [f"## {name} ({a.role})", ""]
    for n in a.notices:
        out += [f"> **{n}**", ""]
    failed = every_trial_failed(a)
    if failed is not None:  # said once, not as a reason each figure is missing
        return [*out, f"No figures: {failed} (the verdict says where to see why).", "",
                *_api_errors_lines(a.api_errors)]  # fmt: skip
    h = agent_headline(name, a)
    d50 = a.d50
    out += [
        f"- True-belief control accuracy: {h.true_belief} — valid: {h.valid}",
        f"- D50: {h.d50}"
        + (f" (chance {_f(d50.chance)}, ceiling {_f(d50.ceiling)})"
           if d50.chance is not None and a.valid is not False else ""),
        "- Degradation slope (log-odds per level, controlling for length): "
        + _slope_text(a.degradation_slope),
        f"- Leakage resistance: {h.leakage_resistance}",
        f"- False-belief accuracy (B1, R1 and deeper): {h.false_belief}",
        f"- R0 reality check: {fmt_prop(a.reality_check)}",
        *_r2_self_lines(a.r2_self),
        "",
    ]
    rows = _depth_rows(a)
    if rows:
        out += ["### Accuracy by depth (B1)", "", _table(DEPTH_HEAD, rows), ""]
    frows = _factor_rows(a)
    if frows:
        out += ["### False-belief accuracy by mechanism and surface form (B1)", "",
                _table(["factor", "level", "accuracy"], frows), ""]
    out += _length_sweep_lines(a.length_sweep)
    head, erows = _error_rows(a)
    if erows:
        out += ["### Error types by depth (false belief; counts)", "",
                _table(head, erows), ""]
    out += _applied_gap_lines(a.applied_gap)
    if a.games is not None and a.games.available:
        out += _games_lines(a.games, a)
    if a.repeated is not None and a.repeated.available:
        out += _repeated_markdown(a.repeated)
    out += _calibration_lines(a.calibration)
    cost = a.cost.by_depth if a.cost is not None else {}
    if cost:
        out += ["### Cost per correct answer (descriptive)", "",
                _table(["depth", "trials", "correct", "tokens / correct", "latency s / correct"],
                       [[lab, str(c.n_trials), str(c.n_correct),
                         _f(c.tokens_per_correct, 0), _f(c.latency_s_per_correct, 2)]
                        for lab, c in cost.items()]), ""]
    fam = a.families or {}
    if fam:
        out += ["### Accuracy by item family", "",
                _table(["family", "accuracy"],
                       [[f"{f.title or name} (`{name}`)", fmt_prop(f)]
                        for name, f in fam.items()]), ""]
    out += self_forecast_markdown(a.self_forecast)
    out += _api_errors_lines(a.api_errors)
    if contrasts:
        for block in _contrast_blocks(name, a):
            out += list(block.lead)
            if block.fig_id in forests:
                out += [forests[block.fig_id], ""]
            if block.rows:
                out += [_table(block.head, block.rows), ""]
    return out


def _gap_figure(g: GapFigures) -> ContrastFigure:
    """A belief − behaviour gap as a difference (:func:`fmt_diff`)."""
    return ContrastFigure(difference=g.value, ci=g.ci, n=g.n, interval=g.interval,
                          status=g.status, reason=g.reason)


def _applied_gap_lines(ap: AppliedGap | None) -> list[str]:
    if ap is None or not ap.available:
        return []
    out = ["### Applied-ToM gap (B4)", "",
           f"Belief {_pct(ap.belief_accuracy)} − behaviour "
           f"{_pct(ap.behaviour_accuracy)} on the same {ap.n} stories = "
           f"{fmt_diff(_gap_figure(ap))}; judgment "
           f"{_pct(ap.judgment_accuracy)} (n={ap.judgment_n}).", ""]
    by = ap.by_depth or {}
    if by:
        out += [_table(["depth", "belief", "behaviour", "gap [95%]", "n"],
                       [[lab, _pct(g.belief_accuracy), _pct(g.behaviour_accuracy),
                         fmt_diff(_gap_figure(g)), str(g.n)]
                        for lab, g in by.items()]), ""]
    return out


def _games_lines(g: GamesSection, a: AgentProfile) -> list[str]:
    out = ["### Strategic", ""]
    if g.by_game_condition:
        out += [_table(["game", "condition", "accuracy", "within one"], _games_rows(g)), ""]
    if g.k_curves:
        out += [_table(["condition", "target depth", "K_B", "K_L", "accuracy"],
                       _kcurve_rows(g)), ""]
    signals = depth_signals_lines(a.depth_signals)
    if signals:
        out += [*(f"- {line}" for line in signals), ""]
    abc = g.abc or AbcSection()
    acc = abc.accuracy
    if acc is not None and acc.model_fields_set | set(acc.model_extra or {}):
        out += [
            "A/B/C: " + "; ".join(f"{q} {fmt_prop(e)}"
                                  for q, e in (("A", acc.A), ("B", acc.B), ("C", acc.C)))
            + f"; dissociation {fmt_prop(abc.dissociation)}; log score of C "
            "(scripted populations) " + _fmt_mean(abc.log_score_c, 3),
            "",
        ]
        abc_rows = abc_contrast_rows(abc, tag=_tag_of)
        if abc_rows:
            out += ["A/B/C contrasts (accuracy, paired by scenario; p (Holm) over the "
                    "report's contrasts):", "",
                    _table(["contrast", "first", "second", "difference [95%]", "n", "p",
                            "p (Holm)"], abc_rows), ""]
    if abc.c_llm is not None:
        out += [_c_llm_line(abc.c_llm), ""]
    return out


def _calibration_lines(cal: Calibration | None) -> list[str]:
    if cal is None or not cal.available:
        return []
    e = cal.ece or Ece()
    s = cal.confidence_depth_slope or Slope()
    brier = cal.brier or Estimate()
    return ["### Calibration", "",
            f"ECE {_f(e.value)}{_ci(e.ci, False)} n={e.n} CB ({e.bins} "
            f"bins); confidence slope on depth {_f(s.value)}"
            f"{_ci(s.ci, False)} per level CB; Brier {_f(brier.value)}."
            + (f" {cal.note}." if cal.note else ""), ""]


def _api_errors_lines(api: ApiErrors | None) -> list[str]:
    count = api.count if api is not None else 0
    trials = api.trials if api is not None else 0
    by_family = "; by family " + json.dumps(api.by_family) if api is not None and count else ""
    without = (f"; {api.ok_without_score} ok trials without a score counted as wrong"
               if api is not None and api.ok_without_score else "")
    causes = [f"- {c.count} × {c.kind}: {c.example}" for c in (api.causes if api else [])]
    return [f"API errors: {count} of {trials} trials (excluded from accuracy){by_family}"
            f"{without}.", "", *causes, *([""] if causes else [])]


@dataclass(frozen=True)
class _ContrastBlock:
    """One of an agent's contrast blocks (agent − control, or one module's ablation credit):
    the Markdown before its table (heading, notes), the table, and what its forest plot
    draws. A block with no rows is a sentence saying why there is no contrast."""

    fig_id: str
    """``forest-<agent>-minus-control`` or ``forest-<agent>-ablation-<module>`` (slugs)."""
    title: str
    lead: tuple[str, ...]
    head: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    metrics: ContrastMetrics | None = None


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) or "x"


def _agent_and_control(d: ContrastFigure) -> tuple[float | str | None, float | str | None]:
    return d.agent, d.control


def _full_and_ablated(d: ContrastFigure) -> tuple[float | str | None, float | str | None]:
    return d.full, d.ablated


def _contrast_blocks(name: str, a: AgentProfile) -> list[_ContrastBlock]:
    """The agent's base-model subtraction and its ablation credits, in report order."""
    out = []
    mc = a.minus_control or ContrastSection()
    fig = f"forest-{_slug(name)}-minus-control"
    zero = contrast_note(mc, agent=name, command=a.adapter == "command")
    if zero:  # zero by construction: one sentence, no table and no plot
        out.append(_ContrastBlock(
            fig, "Agent − control",
            (f"Base-model subtraction ({mc.direction}): {zero}", "")))
    elif mc.available:
        lead = [f"### Base-model subtraction: {mc.direction}", ""]
        if mc.note:
            lead += [f"> {mc.note}", ""]
        metrics = mc.metrics or ContrastMetrics()
        rows = _contrast_rows(metrics, _agent_and_control)
        out.append(_ContrastBlock(
            fig, f"Agent − control: {mc.direction}", tuple(lead),
            ("metric", "agent", "control", "difference [95%]", "n", "p", "p (Holm)"),
            tuple(tuple(r) for r in rows), metrics))
    else:
        reason = mc.reason if "reason" in mc.model_fields_set else "not available"
        out.append(_ContrastBlock(
            fig, "Agent − control", (f"Base-model subtraction: {reason}.", "")))
    for module, blk in a.ablation_credit.items():
        zero = contrast_note(blk, agent=name)
        if zero:
            out.append(_ContrastBlock(
                f"forest-{_slug(name)}-ablation-{_slug(module)}",
                f"Ablation credit of {module}",
                (f"Ablation credit of {module} ({blk.direction}): {zero}", "")))
            continue
        metrics = blk.metrics or ContrastMetrics()
        rows = _contrast_rows(metrics, _full_and_ablated)
        out.append(_ContrastBlock(
            f"forest-{_slug(name)}-ablation-{_slug(module)}",
            f"Ablation credit of {module}: {blk.direction}",
            (f"### Ablation credit: {module} ({blk.direction})", ""),
            ("metric", "full", "ablated", "credit [95%]", "n", "p", "p (Holm)"),
            tuple(tuple(r) for r in rows), metrics))
    return out


def _forest_svg(block: _ContrastBlock) -> str | None:
    """The block's forest plot (:mod:`reports._forest`); None when it has nothing to draw."""
    if block.metrics is None:
        return None
    from reports._forest import forest_plot, forest_rows

    return forest_plot(forest_rows(block.metrics, CONTRAST_LABELS), title=block.title,
                       fig_id=block.fig_id)


def _r2_self_lines(r: R2Self | None) -> list[str]:
    if r is None or not r.available:
        return []
    return [f"- R2-self: accuracy {fmt_prop(r.accuracy)}; own-belief leak "
            f"{fmt_prop(r.own_belief_leak)}"]


def _factor_rows(a: AgentProfile) -> list[list[str]]:
    rows = []
    for block, label in ((a.by_mechanism, "mechanism"), (a.by_form, "surface form")):
        levels = (block.false_belief_accuracy if block is not None else None) or {}
        for level, d in levels.items():
            rows.append([label, level, fmt_prop(d)])
    return rows


def _coefficient_text(d: Coefficient | None) -> str:
    if d is None or d.value is None:
        return f"not estimable ({d.reason if d is not None else None})"
    return f"{d.value:+.3f}{_ci(d.ci, False)} {TAGS.get(str(d.interval), d.interval)}"


def _length_sweep_lines(ls: LengthSweep | None) -> list[str]:
    if ls is None or not ls.available:
        return []
    by = ls.accuracy_by_length or ByDepth()
    lengths = sorted(set(by.false) | set(by.true), key=float)
    rows = [[lab, fmt_prop(by.false.get(lab)), fmt_prop(by.true.get(lab))] for lab in lengths]
    return ["### Length sweep (B2)", "", _table(["events", "false belief", "true belief"], rows),
            "", f"Fit {ls.model} over B1 and B2 false-belief items: depth "
            f"{_coefficient_text(ls.depth)} and length {_coefficient_text(ls.length)} "
            "(log-odds per level and per event).", ""]


def _slope_text(s: Slope | None) -> str:
    if s is None or s.value is None:
        return f"not estimable ({s.reason if s is not None else None})"
    notes = ("; " + "; ".join(s.notes)) if s.notes else ""
    return (f"{s.value:+.3f}{_ci(s.ci, False)} n={s.n} "
            f"{TAGS.get(s.interval or '', str(s.interval))}{notes}")
