"""The pieces every rendering of a profile shares (:mod:`reports.render`, :mod:`reports._html`):
formatting of figures, the rows of each section's tables and an agent's Markdown section."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mindledger.disclosure import seed_phrase, shown_seed
from reports._data import depth_sort_key
from reports._estimates import MIN_N
from reports.model import AgentProfile, Contrast, RunProfile
from reports.present import (
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


def _headline_rows(profile: RunProfile) -> list[list[str]]:
    columns = headline_columns(profile)
    return [h.cells(columns) for h in headlines(profile)]


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


def _legend(profile: RunProfile) -> str:
    return (f"{LEGEND} Bootstrap: B={profile.intervals.bootstrap_replicates}, seed "
            f"{profile.intervals.bootstrap_seed}.")


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


CONTRASTS_HEAD = ["agent", "contrast", "metric", "difference [PB]", "n", "p", "p (Holm)"]


def _contrast_row(c: Contrast) -> list[Any]:
    """One row of the table of every contrast (the n as given)."""
    pct = not c.metric.startswith(NOT_PCT_METRICS)
    figure = c.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return [c.agent, contrast_label(c.kind, c.module, c.metric), c.metric,
            fmt_diff(figure, pct), c.n, fmt_p(c.p), fmt_p(c.p_holm)]


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
    out += self_forecast_markdown(a.get("self_forecast"))
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


