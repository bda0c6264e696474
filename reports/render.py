"""Renderings of a profile: Markdown, one self-contained HTML file, JSON and CSV; and
:func:`compare`, what changed between two runs of the same agents.

Every number is printed with its interval and n, and every table says which interval it shows
(``W`` Wilson 95%, ``W-deff`` Wilson at the design-effect-adjusted n, ``NP`` Newcombe paired,
``t`` / ``Pt`` t intervals, ``CB`` cluster bootstrap 95%, ``PB`` paired bootstrap 95%, ``N``
normal approximation 95%; the profile's ``intervals`` key has the full definitions, and the
report's last section the glossary). A figure whose n cannot carry a claim is printed with its
value and n; each section says once that such figures have no interval and why
(:func:`reports.present.small_n_said_once`). The report opens with the verdict
(:mod:`reports.verdicts`).

A held-out run's seed (and anything its items regenerate from) is shown to operators only:
every entry point takes ``reveal_held_out`` (default False) and, without it, says "seed withheld
(held-out run)" where a development run shows its seed — even when handed a profile that an
operator path built with the seed in it.
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ledger.store import Store
from mindledger.disclosure import TrialRowRedactor, seed_phrase, shown_seed, withholds
from reports._data import RunData, depth_sort_key, load_run
from reports._disclosure import disclosed_profile, held_out_of
from reports._estimates import MIN_N
from reports.matrix_summary import accompanying_summary
from reports.model import AgentProfile
from reports.present import (
    FALSE_BELIEF_FIGURES,
    HEADLINE_COLUMNS,
    INVALID,
    MISSING,
    abc_contrast_rows,
    agent_headline,
    contrast_label,
    depth_signals_lines,
    difference_text,
    headline_columns,
    headlines,
    marked_invalid,
    no_interval,
    number,
    p_text,
    proportion_text,
    role_order,
    small_n_said_once,
)
from reports.profile import analyse
from reports.trials import AgentExamples, TrialView, value_text, wrong_examples
from reports.verdicts import REFERENCES_HEADING, Verdict, contrast_note, verdict

__all__ = [
    "CSV_COLUMNS",
    "compare",
    "compare_runs",
    "render_compare_markdown",
    "render_csv",
    "render_headline_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "report",
]

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


def _tag(d: Mapping[str, Any]) -> str:
    t = d.get("interval")
    return TAGS.get(str(t), str(t)) if t else ""


def fmt_prop(d: Mapping[str, Any] | None) -> str:
    """``58.1% [51.2, 64.8] n=420 W``; ``57.1% n=7 (no interval: …)`` when not estimable; the
    reason when there is no value (:func:`reports.present.proportion_text` plus the interval's
    tag)."""
    text = proportion_text(d)
    if d and d.get("status") != "not_estimable" and d.get("ci") and d.get("value") is not None:
        text = f"{text} {_tag(d)}".rstrip()
    return text


def fmt_diff(d: Mapping[str, Any] | None, pct: bool = True) -> str:
    if not d:
        return MISSING
    return difference_text(d, proportion=pct, tag=_tag(d))


fmt_p = p_text


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


def _seed_sentence(profile: Mapping[str, Any], reveal_held_out: bool) -> str:
    """``seed 12, development seeds``; ``seed 7, held-out seeds`` for an operator; else
    ``seed withheld (held-out run)``."""
    held = held_out_of(profile)
    seed = shown_seed(profile["run"].get("seed"), held_out=held, reveal_held_out=reveal_held_out)
    if seed is None:
        return seed_phrase(None, held_out=held)
    return f"seed {seed}, {'held-out' if held else 'development'} seeds"


# -- shared section builders (rows), used by Markdown and HTML ------------------------------


PROXY_HEAD = ["agent", "calls", "with a prediction", "refused", "refusals by reason",
              "obligations opened", "met", "abandoned", "owes a prediction to"]


def _proxy_rows(proxy: Mapping[str, Any]) -> list[list[str]]:
    """Per agent: calls through the query proxy, how many carried a prediction, refusals by
    reason, obligations opened, met and abandoned (still open 24 h after the sampled call, as
    of the ledger's last entry) and open obligations (counts, no interval: they are the record,
    not an estimate)."""
    rows = []
    for name, t in sorted((proxy.get("agents") or {}).items()):
        reasons = ", ".join(f"{k} {v}" for k, v in t["refusals"].items()) or "—"
        owed = ", ".join(t["open_obligations"]) or "nobody"
        ob = t.get("obligations") or {}
        rows.append([name, str(t["calls"]), str(t["predicted"]), str(t["refused"]), reasons,
                     str(ob.get("opened", 0)), str(ob.get("met", 0)),
                     str(ob.get("abandoned", 0)), owed])
    return rows


def _headline_rows(profile: Mapping[str, Any]) -> list[list[str]]:
    columns = headline_columns(profile)
    return [h.cells(columns) for h in headlines(profile)]


HEADLINE_HEAD = [title for _, title in HEADLINE_COLUMNS]


def _headline_head(profile: Mapping[str, Any]) -> list[str]:
    """The headline table's titles: skill S only when the run measured it."""
    return [title for _, title in headline_columns(profile)]


def _top_notices(profile: Mapping[str, Any]) -> list[str]:
    """The profile's notices shown under the verdict: each INVALID agent's own notice is in
    the verdict (worded once) and at the head of its section, not repeated at the top."""
    return [str(n) for n in profile.get("notices", []) if not str(n).startswith(INVALID)]


def _agent_order(profile: Mapping[str, Any]) -> list[str]:
    """Agents under test first, then controls, ablation variants, references."""
    agents = profile["agents"]
    return sorted(agents, key=lambda n: role_order(str(agents[n].get("role")), n))


def _agent_section(name: str, a: Mapping[str, Any], *, contrasts: bool = True,
                   forests: Mapping[str, str] | None = None) -> list[str]:
    """An agent's Markdown section (:func:`_agent_markdown`); figures without an interval for
    their size are said to be so once, under its title."""
    with small_n_said_once() as tally:
        lines = _agent_markdown(name, a, contrasts=contrasts, forests=forests)
    if tally:
        at = 2 + 2 * len(a.get("notices") or [])  # under its title and notices
        lines[at:at] = [tally.note(), ""]
    return lines


def _verdict_markdown(v: Verdict) -> list[str]:
    out = ["## Verdict", ""]
    for a in v.agents:
        out += [" ".join(a.sentences()), ""]
    for o in v.others:
        out += [o, ""]
    if v.references:
        out += [REFERENCES_HEADING, "", *(f"- {r.text}" for r in v.references), ""]
    for n in v.notes:
        out += [n, ""]
    return out


def _legend(profile: Mapping[str, Any]) -> str:
    return (f"{LEGEND} Bootstrap: B={profile['intervals']['bootstrap_replicates']}, seed "
            f"{profile['intervals']['bootstrap_seed']}.")


def _depth_rows(a: Mapping[str, Any]) -> list[list[str]]:
    acc = a.get("accuracy_by_depth") or {}
    joint = a.get("joint_accuracy_by_depth") or {}
    labels = sorted(set(acc.get("false", {})) | set(acc.get("true", {})), key=depth_sort_key)
    rows = []
    rc = a.get("reality_check") or {}
    if rc.get("n"):
        rows.append(["R0", f"reality check (both cells): {fmt_prop(rc)}", "—", "—"])
    invalid = a.get("valid") is False
    for lab in labels:
        fb = fmt_prop(acc.get("false", {}).get(lab))
        rows.append([
            lab,
            marked_invalid(fb) if invalid else fb,
            fmt_prop(acc.get("true", {}).get(lab)),
            fmt_prop(joint.get("false", {}).get(lab)),
        ])
    return rows


DEPTH_HEAD = ["depth", "false belief", "true belief", "joint (false belief)"]


def _error_rows(a: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    cells = (a.get("error_types_by_depth") or {}).get("false", {})
    codes = sorted({k for c in cells.values() for k in c["counts"]})
    head = ["depth", "n", "wrong", *codes]
    rows = []
    for lab in sorted(cells, key=depth_sort_key):
        c = cells[lab]
        rows.append([lab, str(c["n"]), str(c["n_wrong"]),
                     *[str(c["counts"].get(k, 0)) for k in codes]])
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


def _contrast_rows(metrics: Mapping[str, Any], names: tuple[str, str]) -> list[list[str]]:
    rows = []
    for key, (label, pct) in CONTRAST_LABELS.items():
        d = metrics.get(key)
        if d is None:
            continue
        if d.get("available") is False:
            rows.append([label, "—", "—", f"— ({d.get('reason')})", "—", "—", "—"])
            continue

        def val(v: Any, pct: bool = pct) -> str:
            if isinstance(v, str):
                return v
            return _pct(v) if pct else _f(v, 2)

        rows.append([label, val(d.get(names[0])), val(d.get(names[1])), fmt_diff(d, pct),
                     str(d.get("n", "—")), fmt_p(d.get("p")), fmt_p(d.get("p_holm"))])
        if key == "false_belief_accuracy":
            for lab, dd in (metrics.get("accuracy_by_depth") or {}).items():
                rows.append([f"  FB accuracy {lab}", val(dd.get(names[0])),
                             val(dd.get(names[1])), fmt_diff(dd, True), str(dd.get("n")),
                             fmt_p(dd.get("p")), fmt_p(dd.get("p_holm"))])
    return rows


def _games_rows(g: Mapping[str, Any]) -> list[list[str]]:
    return [[r["game"], r["condition"], fmt_prop(r["accuracy"]), fmt_prop(r["within_one"])]
            for r in g.get("by_game_condition", [])]


def _kcurve_rows(g: Mapping[str, Any]) -> list[list[str]]:
    # imported here, not at the top, to keep this change apart from the verdict's imports
    from reports.present import NOT_IDENTIFIABLE

    rows = []
    for c in g.get("k_curves", []):
        def m(d: Mapping[str, Any]) -> str:
            if d.get("identifiable") is False and d.get("mean") is None:
                # the reason is said once, in the depth signals under the table
                return NOT_IDENTIFIABLE
            if d.get("mean") is None:
                return f"— (unresolved {d.get('unresolved')})"
            if not d.get("ci"):
                return (f"{d['mean']:.2f} n={d['n']}{no_interval(d)}"
                        f" (unresolved {d['unresolved']})")
            return (f"{d['mean']:.2f}{_ci(d.get('ci'), pct=False, digits=2)} n={d['n']} "
                    f"{_tag(d)} (unresolved {d['unresolved']})")

        rows.append([c["condition"], _f(c["target_depth"], 0), m(c["K_B"]), m(c["K_L"]),
                     f"{_pct(c['accuracy'])} n={c['n']}"])
    return rows


REPEATED_HEAD = ["game", "counterfactual", "episodes", "exploitation [N]",
                 "comprehension (m ≤ rounds) [W]", "median m", "points / 1k tokens [N]",
                 "invalid moves", "B6 latency [N]", "B6 adapted [W]"]
REPEATED_GAP_HEAD = ["game", "counterfactual", "default", "counterfactual value",
                     "gap default − counterfactual [N]", "n (default / cf)"]


def _fmt_mean(d: Mapping[str, Any] | None, digits: int = 2) -> str:
    """``0.93 [0.85, 1.01] n=12 N`` (or the reason when there is no value)."""
    if not d or d.get("value") is None:
        return "—" if not d or not d.get("reason") else f"— ({d['reason']})"
    if d.get("status") == "not_estimable":
        return f"{d['value']:.{digits}f} n={d.get('n')}{no_interval(d)}"
    ci = d.get("ci")
    return (f"{d['value']:.{digits}f}{_ci(ci, pct=False, digits=digits) if ci else ''} "
            f"n={d.get('n')} {_tag(d)}").rstrip()


def _c_llm_line(c: Mapping[str, Any]) -> str:
    """Condition C against the run's own agents, one line: its scores with n, or why none."""
    head = "C against the run's agents (each agent's plays, the predictor's own left out): "
    if c.get("reason"):
        return head + str(c["reason"])
    text = (head + f"log score {_fmt_mean(c.get('log_score'), 3)} (uniform "
            + (f"{c['uniform_log_score']:.3f}" if c.get("uniform_log_score") is not None
               else MISSING)
            + f"); Brier {_fmt_mean(c.get('brier'), 3)}; top-1 {fmt_prop(c.get('top1'))}")
    if c.get("not_estimable_scenarios"):
        text += (f"; {c['not_estimable_scenarios']} scenarios not estimable ("
                 + "; ".join(c.get("not_estimable_reasons") or {}) + ")")
    return text


def _repeated_rows(r: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for c in r.get("by_game_counterfactual", []):
        ex = c["exploitation"]
        ex_s = _fmt_mean(ex)
        if ex.get("n_undefined") and ex.get("value") is not None:
            ex_s += f" ({ex['n_undefined']} undefined)"
        comp = c["comprehension"]
        inv = c["invalid_moves"]
        b6 = c["b6"]
        rows.append([
            c["game"], c["counterfactual"], str(c["n_episodes"]), ex_s, fmt_prop(comp),
            _f(comp.get("median_m"), 1), _fmt_mean(c["efficiency"]),
            (f"{_pct(inv['value'])} ({inv['invalid_rounds']}/{inv['rounds']} rounds)"
             if inv.get("value") is not None else f"— ({inv.get('reason')})"),
            _fmt_mean(b6["adaptation_latency"], 1) if b6.get("available") else "—",
            fmt_prop(b6["adapted"]) if b6.get("available") else "—",
        ])
    return rows


def _repeated_gap_rows(r: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for g in r.get("counterfactual_gap", []):
        if not g.get("available"):
            rows.append([g["game"], g["counterfactual"], "—", "—", f"— ({g.get('reason')})",
                         "—"])
            continue
        ci = g.get("ci")
        rows.append([g["game"], g["counterfactual"], _f(g["default"], 2), _f(g["value"], 2),
                     f"{g['difference']:+.2f}{_ci(ci, pct=False, digits=2) if ci else ''} N",
                     f"{g['n_default']} / {g['n_counterfactual']}"])
    return rows


def _repeated_markdown(r: Mapping[str, Any]) -> list[str]:
    """The section's Markdown, one line per list element (tables too: the HTML renderer reads
    a table line by line)."""
    out = ["### Repeated games", "",
           f"{r['n_episodes']} scored episodes ({r.get('api_errors', 0)} API errors); mean "
           f"exploitation {_fmt_mean(r.get('exploitation'))}. Exploitation: 1 = best response "
           "to the opponent's script, 0 = random play; N = normal 95%, W = Wilson 95%; B6 = "
           "switching bots (latency in rounds after the switch, adapted episodes).", "",
           _table(REPEATED_HEAD, _repeated_rows(r)), ""]
    if r.get("counterfactual_gap"):
        out += ["Counterfactual gap on exploitation (default − counterfactual, matched pairs: "
                "same opponent and draws in both settings):", "",
                _table(REPEATED_GAP_HEAD, _repeated_gap_rows(r)), ""]
    b6 = r.get("b6") or {}
    if b6.get("available"):
        out += [f"B6 (switching bots, apart from the counterfactual cells): {b6['n']} episodes; "
                f"exploitation {_fmt_mean(b6['exploitation'])}; adaptation latency "
                f"{_fmt_mean(b6['adaptation_latency'], 1)}; adapted {fmt_prop(b6['adapted'])}.",
                ""]
    notes = [f"{c['game']}/{c['counterfactual']}: {c['exploitation']['note']}"
             for c in r.get("by_game_counterfactual", []) if c["exploitation"].get("note")]
    if notes:
        out += ["Notes: " + "; ".join(notes) + ".", ""]
    return [line for part in out for line in part.split("\n")]


# -- Markdown --------------------------------------------------------------------------------


def render_markdown(
    profile: Mapping[str, Any],
    *,
    figures_dir: str | Path | None = None,
    figures_link_prefix: str = "",
    figures: Sequence[tuple[str, str, str]] | None = None,
    reveal_held_out: bool = False,
) -> str:
    """The profile as Markdown. With ``figures_dir`` the figures (and each agent's contrast
    forest plots) are written there as SVG files and linked (``figures_link_prefix`` + file
    name); without it they are left out, and the report says so. ``figures`` reuses figures
    already drawn by :func:`reports._plots.figures`. A held-out run's seed is printed only
    with ``reveal_held_out`` (operators)."""
    run = profile["run"]
    out: list[str] = [f"# mindledger profile — run `{run['id']}`", ""]
    out += _verdict_markdown(verdict(profile))
    out += [f"> **{n}**" if n.startswith(("HELD-OUT", "UNCHECKED")) else f"> {n}"
            for n in _top_notices(profile)]
    out += [
        "",
        f"Suite `{run.get('suite')}`, {_seed_sentence(profile, reveal_held_out)}, status "
        f"{run.get('status')}; {run.get('n_items')} items, {run.get('n_trials')} trials.",
        "",
        "## Headline",
        "",
    ]
    with small_n_said_once() as tally:
        out += [_table(_headline_head(profile), _headline_rows(profile)), ""]
    if tally:
        out += [tally.note(), ""]
    figs: dict[str, str] = {}
    forests: dict[str, str] = {}
    if figures_dir is not None:
        if figures is None:
            from reports._plots import figures as draw

            figures = draw(profile)
        d = Path(figures_dir)
        d.mkdir(parents=True, exist_ok=True)
        for key, caption, svg in figures:
            (d / f"{key}.svg").write_text(svg, encoding="utf-8")
            figs[key] = f"![{caption}]({figures_link_prefix}{key}.svg)"
        for name, a in profile["agents"].items():
            for block in _contrast_blocks(name, a):
                forest = _forest_svg(block)
                if forest is not None:
                    (d / f"{block.fig_id}.svg").write_text(forest, encoding="utf-8")
                    forests[block.fig_id] = (f"![{block.title}: forest plot]"
                                             f"({figures_link_prefix}{block.fig_id}.svg)")
    else:
        out += ["_Figures: not included (render with an output path to write them)._", ""]
    for key in ("headline", "depth_curves", "error_types", "reliability"):
        if key in figs:
            out += [figs[key], ""]
    for name in _agent_order(profile):
        out += _agent_section(name, profile["agents"][name], forests=forests)
    if (profile.get("proxy") or {}).get("agents"):
        out += ["## Query proxy", "", f"_{profile['proxy']['scope']}._", "",
                _table(PROXY_HEAD, _proxy_rows(profile["proxy"])), ""]
    out += _all_contrasts_markdown(profile)
    out += ["## How to read the figures", "", _legend(profile), ""]
    return "\n".join(out) + "\n"


def _all_contrasts_markdown(profile: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    if profile.get("contrasts"):
        out += ["## All contrasts (Holm-adjusted)", "",
                f"Family: {profile['multiple_comparisons']['family']}; "
                f"m = {profile['multiple_comparisons']['m']}.", ""]
        rows = []
        for c in profile["contrasts"]:
            label = contrast_label(c["kind"], c.get("module"), c["metric"])
            pct = not c["metric"].startswith(NOT_PCT_METRICS)
            rows.append([c["agent"], label, c["metric"], fmt_diff(c, pct), str(c["n"]),
                         fmt_p(c["p"]), fmt_p(c["p_holm"])])
        out += [_table(["agent", "contrast", "metric", "difference [PB]", "n", "p", "p (Holm)"],
                       rows), ""]
    return out


def _agent_markdown(name: str, a: Mapping[str, Any], *, contrasts: bool = True,
                    forests: Mapping[str, str] | None = None) -> list[str]:
    """One agent's section. ``contrasts=False`` leaves out its contrast blocks (the HTML draws
    them itself); ``forests`` links each block's forest plot by its figure id."""
    forests = forests or {}
    out = [f"## {name} ({a.get('role')})", ""]
    for n in a.get("notices", []):
        out += [f"> **{n}**", ""]
    h = agent_headline(name, AgentProfile.model_validate(a))
    d50 = a.get("d50") or {}
    out += [
        f"- True-belief control accuracy: {h.true_belief} — valid: {h.valid}",
        f"- D50: {h.d50}"
        + (f" (chance {_f(d50.get('chance'))}, ceiling {_f(d50.get('ceiling'))})"
           if d50.get("chance") is not None and a.get("valid") is not False else ""),
        "- Degradation slope (log-odds per level, controlling for length): "
        + _slope_text(a.get("degradation_slope") or {}),
        f"- Leakage resistance: {h.leakage_resistance}",
        f"- False-belief accuracy (B1, R1 and deeper): {h.false_belief}",
        f"- R0 reality check: {fmt_prop(a.get('reality_check'))}",
        *_r2_self_lines(a.get("r2_self") or {}),
        "",
    ]
    rows = _depth_rows(a)
    if rows:
        out += ["### Accuracy by depth (B1)", "", _table(DEPTH_HEAD, rows), ""]
    frows = _factor_rows(a)
    if frows:
        out += ["### False-belief accuracy by mechanism and surface form (B1)", "",
                _table(["factor", "level", "accuracy"], frows), ""]
    out += _length_sweep_lines(a.get("length_sweep") or {})
    head, erows = _error_rows(a)
    if erows:
        out += ["### Error types by depth (false belief; counts)", "",
                _table(head, erows), ""]
    ap = a.get("applied_gap") or {}
    if ap.get("available"):
        out += ["### Applied-ToM gap (B4)", "",
                f"Belief {_pct(ap['belief_accuracy'])} − behaviour "
                f"{_pct(ap['behaviour_accuracy'])} on the same {ap['n']} stories = "
                f"{fmt_diff(ap | {'difference': ap['value']})}; judgment "
                f"{_pct(ap.get('judgment_accuracy'))} (n={ap.get('judgment_n')}).", ""]
        by = ap.get("by_depth") or {}
        if by:
            out += [_table(["depth", "belief", "behaviour", "gap [95%]", "n"],
                           [[lab, _pct(g.get("belief_accuracy")),
                             _pct(g.get("behaviour_accuracy")),
                             fmt_diff(g | {"difference": g.get("value")}), str(g.get("n"))]
                            for lab, g in by.items()]), ""]
    g = a.get("games") or {}
    if g.get("available"):
        out += ["### Strategic", ""]
        if g.get("by_game_condition"):
            out += [_table(["game", "condition", "accuracy", "within one"], _games_rows(g)), ""]
        if g.get("k_curves"):
            out += [_table(["condition", "target depth", "K_B", "K_L", "accuracy"],
                           _kcurve_rows(g)), ""]
        signals = depth_signals_lines(a.get("depth_signals"))
        if signals:
            out += [*(f"- {line}" for line in signals), ""]
        abc = g.get("abc") or {}
        if abc.get("accuracy"):
            out += [
                "A/B/C: " + "; ".join(f"{q} {fmt_prop(abc['accuracy'][q])}" for q in "ABC")
                + f"; dissociation {fmt_prop(abc.get('dissociation'))}; log score of C "
                "(scripted populations) " + _fmt_mean(abc.get("log_score_c"), 3),
                "",
            ]
            abc_rows = abc_contrast_rows(abc, tag=_tag)
            if abc_rows:
                out += ["A/B/C contrasts (accuracy, paired by scenario; p (Holm) over the "
                        "report's contrasts):", "",
                        _table(["contrast", "first", "second", "difference [95%]", "n", "p",
                                "p (Holm)"], abc_rows), ""]
        if abc.get("c_llm"):
            out += [_c_llm_line(abc["c_llm"]), ""]
    rp = a.get("repeated") or {}
    if rp.get("available"):
        out += _repeated_markdown(rp)
    cal = a.get("calibration") or {}
    if cal.get("available"):
        e = cal["ece"]
        s = cal["confidence_depth_slope"]
        out += ["### Calibration", "",
                f"ECE {_f(e['value'])}{_ci(e.get('ci'), False)} n={e['n']} CB ({e['bins']} "
                f"bins); confidence slope on depth {_f(s.get('value'))}"
                f"{_ci(s.get('ci'), False)} per level CB; Brier {_f(cal['brier']['value'])}."
                + (f" {cal['note']}." if cal.get("note") else ""), ""]
    cost = (a.get("cost") or {}).get("by_depth") or {}
    if cost:
        out += ["### Cost per correct answer (descriptive)", "",
                _table(["depth", "trials", "correct", "tokens / correct", "latency s / correct"],
                       [[lab, str(c["n_trials"]), str(c["n_correct"]),
                         _f(c["tokens_per_correct"], 0), _f(c["latency_s_per_correct"], 2)]
                        for lab, c in cost.items()]), ""]
    fam = a.get("families") or {}
    if fam:
        out += ["### Accuracy by item family", "",
                _table(["family", "accuracy"],
                       [[f"{f.get('title') or name} (`{name}`)", fmt_prop(f)]
                        for name, f in fam.items()]), ""]
    api = a.get("api_errors") or {}
    out += [f"API errors: {api.get('count', 0)} of {api.get('trials', 0)} trials (excluded from "
            f"accuracy){'; by family ' + json.dumps(api['by_family']) if api.get('count') else ''}"
            + (f"; {api['ok_without_score']} ok trials without a score counted as wrong"
               if api.get("ok_without_score") else "") + ".", ""]
    if contrasts:
        for block in _contrast_blocks(name, a):
            out += list(block.lead)
            if block.fig_id in forests:
                out += [forests[block.fig_id], ""]
            if block.rows:
                out += [_table(block.head, block.rows), ""]
    return out


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
    metrics: Mapping[str, Any] | None = None


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) or "x"


def _contrast_blocks(name: str, a: Mapping[str, Any]) -> list[_ContrastBlock]:
    """The agent's base-model subtraction and its ablation credits, in report order."""
    out = []
    mc = a.get("minus_control") or {}
    fig = f"forest-{_slug(name)}-minus-control"
    command = (a.get("spec") or {}).get("adapter") == "command"
    zero = contrast_note(mc, agent=name, command=command)
    if zero:  # zero by construction: one sentence, no table and no plot
        out.append(_ContrastBlock(
            fig, "Agent − control",
            (f"Base-model subtraction ({mc['direction']}): {zero}", "")))
    elif mc.get("available"):
        lead = [f"### Base-model subtraction: {mc['direction']}", ""]
        if mc.get("note"):
            lead += [f"> {mc['note']}", ""]
        rows = _contrast_rows(mc["metrics"], ("agent", "control"))
        out.append(_ContrastBlock(
            fig, f"Agent − control: {mc['direction']}", tuple(lead),
            ("metric", "agent", "control", "difference [95%]", "n", "p", "p (Holm)"),
            tuple(tuple(r) for r in rows), mc["metrics"]))
    else:
        out.append(_ContrastBlock(
            fig, "Agent − control",
            (f"Base-model subtraction: {mc.get('reason', 'not available')}.", "")))
    for module, blk in (a.get("ablation_credit") or {}).items():
        zero = contrast_note(blk, agent=name)
        if zero:
            out.append(_ContrastBlock(
                f"forest-{_slug(name)}-ablation-{_slug(module)}",
                f"Ablation credit of {module}",
                (f"Ablation credit of {module} ({blk['direction']}): {zero}", "")))
            continue
        rows = _contrast_rows(blk["metrics"], ("full", "ablated"))
        out.append(_ContrastBlock(
            f"forest-{_slug(name)}-ablation-{_slug(module)}",
            f"Ablation credit of {module}: {blk['direction']}",
            (f"### Ablation credit: {module} ({blk['direction']})", ""),
            ("metric", "full", "ablated", "credit [95%]", "n", "p", "p (Holm)"),
            tuple(tuple(r) for r in rows), blk["metrics"]))
    return out


def _forest_svg(block: _ContrastBlock) -> str | None:
    """The block's forest plot (:mod:`reports._forest`); None when it has nothing to draw."""
    if block.metrics is None:
        return None
    from reports._forest import forest_plot, forest_rows

    return forest_plot(forest_rows(block.metrics, CONTRAST_LABELS), title=block.title,
                       fig_id=block.fig_id)


def _r2_self_lines(r: Mapping[str, Any]) -> list[str]:
    if not r.get("available"):
        return []
    return [f"- R2-self: accuracy {fmt_prop(r.get('accuracy'))}; own-belief leak "
            f"{fmt_prop(r.get('own_belief_leak'))}"]


def _factor_rows(a: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for key, label in (("by_mechanism", "mechanism"), ("by_form", "surface form")):
        block = a.get(key) or {}
        for level, d in (block.get("false_belief_accuracy") or {}).items():
            rows.append([label, level, fmt_prop(d)])
    return rows


def _length_sweep_lines(ls: Mapping[str, Any]) -> list[str]:
    if not ls.get("available"):
        return []
    by = ls.get("accuracy_by_length") or {}
    lengths = sorted(set(by.get("false", {})) | set(by.get("true", {})), key=float)
    rows = [[lab, fmt_prop(by.get("false", {}).get(lab)), fmt_prop(by.get("true", {}).get(lab))]
            for lab in lengths]

    def coef(d: Mapping[str, Any]) -> str:
        if d.get("value") is None:
            return f"not estimable ({d.get('reason')})"
        return (f"{d['value']:+.3f}{_ci(d.get('ci'), False)} "
                f"{TAGS.get(str(d.get('interval')), d.get('interval'))}")

    return ["### Length sweep (B2)", "", _table(["events", "false belief", "true belief"], rows),
            "", f"Fit {ls.get('model')} over B1 and B2 false-belief items: depth "
            f"{coef(ls.get('depth') or {})} and length {coef(ls.get('length') or {})} "
            "(log-odds per level and per event).", ""]


def _slope_text(s: Mapping[str, Any]) -> str:
    if s.get("value") is None:
        return f"not estimable ({s.get('reason')})"
    notes = ("; " + "; ".join(s["notes"])) if s.get("notes") else ""
    return (f"{s['value']:+.3f}{_ci(s.get('ci'), False)} n={s['n']} "
            f"{TAGS.get(s.get('interval', ''), s.get('interval'))}{notes}")


# -- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1180px;color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.86rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}.notice{background:#fdecea;border-left:5px solid #d1495b;
padding:.6rem 1rem;margin:.6rem 0;font-weight:600}.info{background:#eef5fb;
border-left:5px solid #00798c;padding:.6rem 1rem;margin:.6rem 0}
.legend{color:#555;font-size:.85rem}figure{margin:1rem 0}figure>svg{max-width:100%;
height:auto;border:1px solid #eee;background:#fff}figcaption{color:#555;font-size:.85rem}
details>summary{cursor:pointer;color:#333}
.verdict{background:#fafafa;border:1px solid #ddd;padding:.2rem 1rem .4rem;margin:.6rem 0}
.verdict h2{margin-top:.4rem}.verdict .agent{border-left:5px solid #888;padding-left:.6rem;
font-size:1.02rem}.verdict .invalid{border-left-color:#d1495b}.verdict .valid{
border-left-color:#2e8b57}.verdict ul{margin:.2rem 0}.verdict li.problem{color:#b00020;
font-weight:600}.verdict .note{color:#555;font-size:.9rem}
"""


def _h(s: Any) -> str:
    return html.escape(str(s))


def _abbr(escaped: str) -> str:
    """Escaped text with each interval tag that follows a figure (``… n=420 W``, ``…] CB``)
    wrapped in ``<abbr title=…>``: the method's name on hover."""
    return _TAG_RE.sub(
        lambda m: f"<abbr title='{_h(TAG_TITLES[m.group(1)])}'>{m.group(1)}</abbr>", escaped)


def _html_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(v: Any) -> str:
        return _abbr(_h(v).replace("**", ""))

    h = "".join(f"<th>{_h(x)}</th>" for x in head)
    b = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def render_html(
    profile: Mapping[str, Any],
    *,
    figures: Sequence[tuple[str, str, str]] | None = None,
    reveal_held_out: bool = False,
    examples: Sequence[AgentExamples] = (),
) -> str:
    """The profile as ONE self-contained HTML file: tables plus every figure as inline SVG
    (no external resources); each agent's contrasts as forest plots, their tables collapsed
    under them. ``figures`` reuses figures already drawn (:func:`reports._plots.figures`). A
    held-out run's seed is printed only with ``reveal_held_out`` (operators). ``examples``
    (:func:`reports.trials.wrong_examples`) adds, per agent, a few wrong and failed trials per
    cause, collapsed; never of a held-out run without ``reveal_held_out``."""
    if figures is None:
        from reports._plots import figures as draw

        figures = draw(profile)

    run = profile["run"]
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>mindledger profile — {_h(run['id'])}</title><style>{_CSS}</style></head><body>",
        f"<h1>mindledger profile — run <code>{_h(run['id'])}</code></h1>",
    ]
    parts.append(_verdict_html(verdict(profile)))
    for n in _top_notices(profile):
        cls = "notice" if n.startswith("UNCHECKED") else "info"
        parts.append(f"<div class='{cls}'>{_h(n)}</div>")
    parts.append(
        f"<p>Suite <code>{_h(run.get('suite'))}</code>, "
        f"{_h(_seed_sentence(profile, reveal_held_out))}, status {_h(run.get('status'))}; "
        f"{_h(run.get('n_items'))} items, {_h(run.get('n_trials'))} trials.</p>"
    )
    with small_n_said_once() as tally:
        parts += ["<h2>Headline</h2>",
                  _html_table(_headline_head(profile), _headline_rows(profile))]
    if tally:
        parts.append(f"<p class='legend'>{_h(tally.note())}</p>")
    for key, caption, svg in figures:
        parts.append(f"<figure id='fig-{key}'>{svg}<figcaption>{_h(caption)}</figcaption>"
                     "</figure>")
    md_agent = {name: _agent_section(name, a, contrasts=False)
                for name, a in profile["agents"].items()}
    for name in _agent_order(profile):
        a = profile["agents"][name]
        parts.append(f"<h2>{_h(name)} ({_h(a.get('role'))})</h2>")
        for n in a.get("notices", []):
            parts.append(f"<div class='notice'>{_h(n)}</div>")
        parts.append(_md_to_html(md_agent[name][2:]))
        parts += [_contrast_html(block) for block in _contrast_blocks(name, a)]
    if (profile.get("proxy") or {}).get("agents"):
        parts += ["<h2>Query proxy</h2>", f"<p class='legend'>{_h(profile['proxy']['scope'])}.</p>",
                  _html_table(PROXY_HEAD, _proxy_rows(profile["proxy"]))]
    if profile.get("contrasts"):
        parts.append("<h2>All contrasts (Holm-adjusted)</h2>")
        parts.append("<p class='legend'>" + _h(
            f"Family: {profile['multiple_comparisons']['family']}; "
            f"m = {profile['multiple_comparisons']['m']}.") + "</p>")
        rows = [[c["agent"], contrast_label(c["kind"], c.get("module"), c["metric"]),
                 c["metric"],
                 fmt_diff(c, not c["metric"].startswith(NOT_PCT_METRICS)), c["n"],
                 fmt_p(c["p"]), fmt_p(c["p_holm"])] for c in profile["contrasts"]]
        parts.append(_html_table(["agent", "contrast", "metric", "difference [PB]", "n", "p",
                                  "p (Holm)"], rows))
    if examples and (reveal_held_out or not held_out_of(profile)):
        parts.append(_examples_html(examples))
    parts += ["<h2 id='glossary'>How to read the figures</h2>",
              f"<p class='legend'>{_h(_legend(profile))}</p>", "</body></html>"]
    return "\n".join(parts)


def _code(escaped: str) -> str:
    """Escaped text with its `backquoted` names as ``<code>``."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)


def _verdict_html(v: Verdict) -> str:
    """The verdict, first on the page: each agent under test (INVALID in red, valid in
    green), the other agents, the references, the notes."""
    out = ["<section id='verdict' class='verdict'><h2>Verdict</h2>"]
    for a in v.agents:
        cls = {True: "valid", False: "invalid", None: "unchecked"}[a.valid]
        out.append(f"<p class='agent {cls}' data-agent='{_h(a.agent)}'>"
                   + _code(" ".join(_h(s) for s in a.sentences())) + "</p>")
    out += [f"<p class='other'>{_code(_h(o))}</p>" for o in v.others]
    if v.references:
        items = "".join(
            f"<li class='{'ok' if r.as_expected else 'problem' if r.as_expected is False else ''}'>"
            f"{_h(r.text)}</li>" for r in v.references)
        out.append(f"<p class='references'>{_h(REFERENCES_HEADING)}</p>"
                   f"<ul class='references'>{items}</ul>")
    out += [f"<p class='note'>{_code(_h(n))}</p>" for n in v.notes]
    out.append("</section>")
    return "".join(out)


def _contrast_html(block: _ContrastBlock) -> str:
    """A contrast block in HTML: its heading and notes (a quoted note as a box), its forest
    plot in place of the long table, and the table itself collapsed under the plot."""
    out = [f"<div class='info'>{_h(line[2:])}</div>" if line.startswith("> ")
           else _md_to_html([line]) for line in block.lead if line.strip()]
    svg = _forest_svg(block)
    if svg is not None:
        out.append(f"<figure class='forest'>{svg}<figcaption>Each difference with its 95% "
                   "interval (each metric's own method, named in the table); the vertical "
                   "line marks no difference. Hover a row for its exact figure."
                   "</figcaption></figure>")
    if block.rows:
        out.append(f"<details><summary>{_h(block.title)}: the table ({len(block.rows)} rows)"
                   f"</summary>{_html_table(block.head, block.rows)}</details>")
    return "\n".join(out)


def _examples_html(examples: Sequence[AgentExamples]) -> str:
    """Per agent, a collapsed section with a few of its wrong and failed trials per cause:
    the question as the item put it, the reply and the answer read from it beside the expected
    one (every text escaped)."""
    pre = "<pre style='white-space:pre-wrap;margin:0;max-height:18rem;overflow:auto'>"
    parts = ["<h2 id='examples'>Examples of wrong and failed answers</h2>"]
    for agent in examples:
        total = sum(c.count for c in agent.causes)
        parts.append(
            f"<details class='examples'><summary><b>{_h(agent.agent)}</b>: {total} wrong or "
            f"failed trial(s), {len(agent.causes)} cause(s): "
            + ", ".join(f"{_h(c.cause)} ({c.count})" for c in agent.causes)
            + "</summary>"
        )
        for cause in agent.causes:
            shown = len(cause.trials)
            parts.append(f"<h3>{_h(cause.cause)} — {cause.count} trial(s) ({_h(cause.outcome)})"
                         + (f", {shown} shown" if shown < cause.count else "") + "</h3>")
            parts += [_example_html(t, pre) for t in cause.trials]
        parts.append("</details>")
    return "\n".join(parts)


def _example_html(t: TrialView, pre: str) -> str:
    def value(v: Any) -> str:
        return _h(value_text(v))

    where = " ".join(p for p in (t.family, t.label) if p)
    detail = f"<p>{_h(t.detail)}</p>" if t.detail else ""
    return (
        f"<p>item <code>{_h(t.item_id)}</code> · {_h(where)}</p>{detail}"
        f"<table><tr><th>question</th><td colspan='2'>{pre}{value(t.prompt)}</pre></td></tr>"
        f"<tr><th></th><th>{_h(t.agent)}</th><th>expected</th></tr>"
        f"<tr><th>reply</th><td>{pre}{value(t.raw_text)}</pre></td><td></td></tr>"
        f"<tr><th>answer</th><td>{value(t.answer)}</td><td>{value(t.expected)}</td></tr></table>"
    )


def _md_to_html(lines: Sequence[str]) -> str:
    """The small subset of Markdown the agent sections use: headings, tables, lists, quotes.
    An entry may hold several lines (a whole table): they are split first."""
    lines = [ln for part in lines for ln in part.split("\n")]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("### "):
            out.append(f"<h3>{_h(line[4:])}</h3>")
        elif line.startswith("> "):
            pass  # notices are rendered as boxes by the caller
        elif line.startswith("| "):
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            head = [c.strip() for c in block[0].strip("|").split(" | ")]
            rows = [[c.strip().replace("\\|", "|") for c in r.strip().strip("|").split(" | ")]
                    for r in block[2:]]
            out.append(_html_table(head, rows))
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_abbr(_h(lines[i][2:]))}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_abbr(_h(line))}</p>")
        i += 1
    return "\n".join(out)


# -- JSON and CSV ----------------------------------------------------------------------------


def render_json(
    profile: Mapping[str, Any], *, indent: int | None = 2, reveal_held_out: bool = False
) -> str:
    """The profile as strict JSON (no NaN: missing numbers are null with a reason), with the
    verdict every rendering opens with under ``verdict`` (a key the schema allows). A held-out
    run's ``run.seed`` is null with ``run.seed_withheld`` true unless ``reveal_held_out``
    (operators)."""
    shown = disclosed_profile(profile, reveal_held_out=reveal_held_out)
    return json.dumps(
        {**shown, "verdict": verdict(profile).to_json()},
        indent=indent, ensure_ascii=False, allow_nan=False,
    )


CSV_COLUMNS = (
    "run_id", "agent", "role", "item_id", "family", "depth", "depth_n", "belief", "question",
    "story_id", "length", "game", "condition", "target_depth", "lambda", "status", "correct",
    "score_value", "primary_error", "confidence", "tokens_in", "tokens_out", "latency_s",
    "answer_json", "score_json", "error",
)


def render_csv(data: RunData, *, reveal_held_out: bool = False) -> str:
    """One row per trial with the item's factors, for people who want their own analysis.

    No column holds a seed or an item's parameters. A held-out run's rows are withheld as
    :class:`mindledger.disclosure.TrialRowRedactor` says (item and story ids become ``item N``
    and ``story N``, no answer, error text or score details but an A/B/C scenario's label)
    unless ``reveal_held_out`` (operators)."""
    buf = io.StringIO()
    write_csv(data, buf, reveal_held_out=reveal_held_out)
    return buf.getvalue()


def write_csv(data: RunData, fp: Any, *, reveal_held_out: bool = False) -> None:
    """Write :func:`render_csv`'s rows to a text file object."""
    w = csv.writer(fp, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    it = data.items
    tr = data.trials
    roles = {a.name: a.role for a in data.agents}
    run_id = data.run.get("id")

    def num(v: float) -> str:
        return "" if not math.isfinite(v) else f"{v:g}"

    factors = [
        [it.family[i], it.depth[i], num(it.depth_n[i]), it.belief[i], it.question[i],
         it.story[i], num(it.length[i]), it.game[i], it.condition[i], num(it.target_depth[i]),
         num(it.lam[i])]
        for i in range(len(it))
    ]
    factors.append([""] * 11)  # index -1: a trial whose item is not in the run
    correct = ["" if math.isnan(v) else str(int(v)) for v in tr.correct.tolist()]
    score_value = [num(v) for v in tr.score_value.tolist()]
    confidence = [num(v) for v in tr.confidence.tolist()]
    latency = [f"{v:.6g}" for v in tr.latency.tolist()]
    tin = tr.tokens_in.astype(np.int64).tolist()
    tout = tr.tokens_out.astype(np.int64).tolist()
    items = tr.item.tolist()
    prim = tr.primary_error.tolist()
    item_ids, scores, answers, errors = tr.item_id, tr.score_json, tr.answer_json, tr.error
    if withholds(held_out=bool(data.run.get("held_out")), reveal_held_out=reveal_held_out):
        redact = TrialRowRedactor({iid: n for n, iid in enumerate(it.ids, 1)})
        for f in factors:
            f[5] = redact.story(f[5])
        item_ids = [redact.item(i) for i in item_ids]
        scores = [redact.score(s) for s in scores]
        answers = [redact.text(a) for a in answers]
        errors = [redact.text(e) for e in errors]
    w.writerows(
        [run_id, tr.agent[r], roles.get(tr.agent[r], ""), item_ids[r], *factors[items[r]],
         tr.status[r], correct[r], score_value[r], prim[r] or "", confidence[r], tin[r],
         tout[r], latency[r], answers[r] or "", scores[r] or "", errors[r] or ""]
        for r in range(len(tr))
    )


HEADLINE_CSV_NUMBERS = (
    ("d50", "d50"),
    ("false_belief", "false_belief_accuracy"),
    ("leakage_resistance", "leakage_resistance"),
    ("true_belief", "true_belief_control_accuracy"),
)


def render_headline_csv(profile: Mapping[str, Any]) -> str:
    """One row per agent: the headline figures worded as every rendering words them
    (:mod:`reports.present`), then each figure's value, interval ends, n and status for
    scripts. An invalid agent's false-belief numbers are left empty: they do not count."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    numbers = [f"{key}_{part}" for key, _ in HEADLINE_CSV_NUMBERS
               for part in ("value", "lo", "hi", "n", "status")]
    w.writerow([key for key, _ in HEADLINE_COLUMNS] + numbers)
    agents = profile["agents"]

    def num(v: Any) -> str:
        f = number(v)
        return "" if f is None else f"{f:.6g}"

    for h in headlines(profile):
        a = agents[h.agent]
        row = h.cells()
        for key, field in HEADLINE_CSV_NUMBERS:
            d = a.get(field) or {}
            withheld = a.get("valid") is False and key in FALSE_BELIEF_FIGURES
            ci = d.get("ci") or [None, None]
            row += ["", "", "", "", "invalid"] if withheld else [
                num(d.get("value")), num(ci[0]), num(ci[1]),
                "" if d.get("n") is None else str(d.get("n")), str(d.get("status") or "")]
        w.writerow(row)
    return buf.getvalue()


# -- one entry point for the CLI -------------------------------------------------------------


def report(
    store: Store,
    run_id: str,
    fmt: str = "md",
    *,
    seed: int = 0,
    n_boot: int = 2000,
    figures_dir: str | Path | None = None,
    figures_link_prefix: str = "",
    reveal_held_out: bool = False,
) -> str:
    """Render run ``run_id`` as ``md``, ``html``, ``json``, ``csv`` (trials) or
    ``headline-csv`` (one row per agent). ``seed`` is the
    bootstrap's; a held-out run's own seed is shown only with ``reveal_held_out`` (operators:
    it regenerates the held-out items)."""
    data = load_run(store, run_id)
    reveal = reveal_held_out
    if fmt == "csv":
        return render_csv(data, reveal_held_out=reveal)
    matrix = accompanying_summary(store, run_id, n_boot=n_boot, stats_seed=seed)
    profile = analyse(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal,
                      matrix=matrix).profile
    if fmt == "headline-csv":
        return render_headline_csv(profile)
    if fmt == "json":
        return render_json(profile, reveal_held_out=reveal)
    if fmt == "html":
        examples = wrong_examples(store, run_id, reveal_held_out=reveal)
        return render_html(profile, reveal_held_out=reveal, examples=examples)
    if fmt == "md":
        return render_markdown(profile, figures_dir=figures_dir,
                               figures_link_prefix=figures_link_prefix, reveal_held_out=reveal)
    raise ValueError(f"unknown format {fmt!r} (md, html, json, csv, headline-csv)")


# -- comparing two runs: reports.comparison (its names stay importable from here) -----------

from reports.comparison import (  # noqa: E402
    compare,
    compare_runs,
    render_compare_markdown,
)
