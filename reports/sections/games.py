"""The one-shot games' section of an agent (``games``): level-k play by game and condition,
the K_B and K_L curves, best-response consistency, and the A/B/C conditions — C against
scripted populations and, apart, against the run's own agents (:mod:`reports._population`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from games import POPULATION_MIN_ANSWERS
from reports._estimates import MetricSample, paired_binary, proportion
from reports._population import score_predictions
from reports._stats import holm
from reports.model import AbcContrast, GamesSection, PopulationC
from reports.sections._columns import AgentColumns
from reports.sections._design import RunDesign, ratio
from reports.sections._figures import mean_figure
from reports.sections._inputs import AgentInputs, Measured, RunInputs

__all__ = ["abc_contrast_figures", "abc_holm", "games_section"]


def games_section(inp: AgentInputs) -> Measured:
    """The one-shot games: level-k accuracy by game and condition, the K_B/K_L curves and
    best-response consistency; A/B/C (C against scripted populations, and against the run's
    own agents in ``abc.c_llm``); the A − B and B − C contrasts those of
    :func:`abc_holm` when the run has them."""
    rd, c, p = inp.design, inp.cols, inp.prefix
    samples: dict[str, MetricSample] = {}
    games = _games(inp, rd, c, p, samples, inp.abc_contrasts)
    return Measured({"games": games}, samples)


def _games(
    inp: AgentInputs,
    rd: RunDesign,
    c: AgentColumns,
    p: str,
    samples: dict[str, MetricSample],
    abc_contrasts: Mapping[str, AbcContrast] | None,
) -> GamesSection:
    it = inp.data.items
    ex = inp.ex
    if not (rd.gm & c.has).any():
        return GamesSection.of({"available": False, "reason": "no game items answered in this run"})
    out: dict[str, Any] = {"available": True}
    rows = []
    m_lk = c.ok & rd.lk
    cells = sorted({(str(it.game[i]), str(it.condition[i])) for i in np.flatnonzero(m_lk).tolist()})
    w1 = ex.within_one
    for game, cond in cells:
        m = m_lk & rd.is_("game", game) & rd.is_("condition", cond)
        wm = m & np.isfinite(w1)
        rows.append(
            {
                "game": game,
                "condition": cond,
                "accuracy": rd.p(c.cor, m).to_dict(),
                "within_one": rd.p(np.nan_to_num(w1), wm).to_dict()
                if wm.any()
                else {"value": None, "n": 0, "reason": "no within_one in scores"},
            }
        )
    out["by_game_condition"] = rows
    if rd.lk.any():
        ga = rd.p(c.cor, m_lk)
        out["accuracy"] = ga.to_dict()
        if ga.n:
            samples["games_accuracy"] = MetricSample.of(ga)
    # K_B / K_L curves
    curves = []
    keys = sorted(
        {
            (it.condition[i], float(it.target_depth[i]))
            for i in np.flatnonzero(m_lk & np.isfinite(it.target_depth))
        },
        key=lambda t: (t[0], t[1]),
    )
    for cond, td in keys:
        m = m_lk & rd.is_("condition", cond) & rd.is_("target_depth", td)
        entry: dict[str, Any] = {"condition": cond, "target_depth": td, "n": int(m.sum())}
        for key in ("K_B", "K_L"):
            km = mean_figure(ex.column(key), m)
            entry[key] = {
                "mean": km.value,
                "ci": km.ci,
                "n": km.n,
                "unresolved": int(m.sum()) - km.n,
                "interval": km.interval,
                "identifiable": ex.level_fit[key].identifiable,
            } | ({"reason": km.reason} if km.reason else {})
            if ex.level_fit[key].identifiable is False and km.n:
                # the agent's choices are no level's: a point of its curve is noise too
                entry[key] |= {
                    "mean": None,
                    "ci": None,
                    "interval": None,
                    "reason": f"not identifiable: {ex.level_fit[key].reason}",
                }
        entry["accuracy"] = float(c.cor[m].mean())
        curves.append(entry)
    out["k_curves"] = curves
    out["excluded_trials"] = int((c.has & rd.lk_excluded).sum())
    out["excluded_note"] = (
        "level-k trials whose target action also matches another depth (K_B ambiguous) are "
        "left out of every games figure, as in the games summary"
    )
    if not curves:
        out["k_curves_reason"] = "no level-k trials with a target depth"
    brc = ex.signals["br_consistent"]
    bm = m_lk & np.isfinite(brc)
    out["br_consistency"] = (
        proportion(brc[bm]).to_dict()
        if bm.any()
        else {"value": None, "n": 0, "reason": "no br_consistent in scores"}
    )
    # A/B/C: C against scripted populations (accuracy.C, log_score_c, brier_c) and, apart,
    # against the run's own agents (c_llm)
    abc: dict[str, Any] = {}
    if (rd.abc & c.has).any():
        abc["accuracy"] = {}
        for qq in "ABCK":
            qm = rd.abc & rd.is_("question", qq) & c.ok
            if qq != "K" or qm.any():
                abc["accuracy"][qq] = rd.p(c.cor, qm).to_dict()
        if "K" in abc["accuracy"]:
            abc["opponent_type_inference"] = abc["accuracy"]["K"] | {
                "definition": "accuracy of the inferred level k of a scripted opponent (K items)"
            }
        if rd.abc_set.triples:
            tri = ex.triple
            dp = rd.p(np.nan_to_num(tri), np.isfinite(tri))
            d = dp.to_dict() | {
                "definition": "share of scenarios whose A, B and C answers are all correct "
                "where the three correct answers differ",
                "scenarios_skipped_equal_answers": rd.abc_set.equal_truths,
            }
            if rd.abc_set.unknown_truths:
                d["note"] = (
                    f"{rd.abc_set.unknown_truths} scenarios lack stored answers; they are "
                    "assumed to differ"
                )
            abc["dissociation"] = d
            if dp.n:
                samples["abc_dissociation"] = MetricSample.of(dp)
        else:
            abc["dissociation"] = {
                "value": None,
                "n": 0,
                "reason": "no complete A/B/C scenario (the items carry no group key "
                "tying A, B and C together, or one of them is missing)",
            }
        abc["contrasts"] = (
            dict(abc_contrasts) if abc_contrasts is not None else abc_contrast_figures(inp)
        )
        ls = ex.log_score
        mean = mean_figure(ls)
        if mean.n and mean.value is not None:
            _, csr = inp.res.sum(p + "cs")
            _, cnr = inp.res.sum(p + "cn")
            samples["log_score_c"] = MetricSample(
                mean.value, mean.n, mean.status == "estimated", replicates=ratio(csr, cnr)
            )
            abc["log_score_c"] = mean.to_dict()
        else:
            abc["log_score_c"] = {
                "value": None,
                "n": 0,
                "reason": "no log_score in the C items' scores",
            }
        bd = mean_figure(ex.brier)
        abc["brier_c"] = (
            bd.to_dict()
            if bd.n
            else {"value": None, "n": 0, "reason": "no brier in the C items' scores"}
        )
    else:
        abc = {"available": False, "reason": "no A/B/C items in this run"}
    if (rd.abc_llm & c.has).any():
        abc["c_llm"] = _abc_llm(inp)
    out["abc"] = abc
    return GamesSection.of(out)


def _abc_llm(inp: AgentInputs) -> PopulationC:
    """C against the run's own LLM population (:mod:`reports._population`): the agent's
    C-llm predictions scored against the other agents' plays of the same scenario, one per
    scenario — mean log and Brier scores (t interval) and top-1 (Wilson), each with its n."""
    rd, c = inp.design, inp.cols
    items = np.flatnonzero(rd.abc_llm & c.ok)
    scored = score_predictions(
        inp.data, rd.population, c.name, items.tolist(), c.rows[items].tolist()
    )
    out: dict[str, Any] = {
        "available": True,
        "population": "every agent of the run (agents, controls, ablations, reference "
        "players), K plays each; the predictor's own plays left out",
        "samples": sorted(
            {
                int(s)
                for s in (inp.data.items.meta[i].get("samples") for i in items.tolist())
                if isinstance(s, int)
            }
        ),
        "min_population": POPULATION_MIN_ANSWERS,
        "scenarios": int((rd.abc_llm & c.has).sum()),
        "predictions": len(scored),
    }
    est = [s for s in scored if s.reason is None]
    reasons = Counter(s.reason for s in scored if s.reason is not None)
    out["not_estimable_scenarios"] = len(scored) - len(est)
    if reasons:
        out["not_estimable_reasons"] = dict(reasons)
    if not est:
        why = (
            "not estimable: " + "; ".join(reasons)
            if reasons
            else "not estimable: no C-llm trial without an API error"
        )
        for key in ("log_score", "brier", "top1"):
            out[key] = {"value": None, "n": 0, "status": "not_estimable", "reason": why}
        out["reason"] = why
        return PopulationC.of(out)
    out["population_plays"] = {
        "mean": float(np.mean([s.population for s in est])),
        "min": min(s.population for s in est),
    }
    logs = np.asarray([np.nan if s.log_score is None else s.log_score for s in est])
    briers = np.asarray([np.nan if s.brier is None else s.brier for s in est])
    uni = [s.uniform_log_score for s in est if s.uniform_log_score is not None]
    unread = (
        "not estimable: no readable C-llm prediction in the scored scenarios (an "
        "unreadable one counts as wrong in top1)"
    )
    out["log_score"] = mean_figure(logs).to_dict() | {
        "definition": "mean log probability the prediction gave the other agents' plays "
        "(per scenario; floored at 1e-9)"
    }
    if uni:
        out["uniform_log_score"] = float(np.mean(uni))
    out["brier"] = mean_figure(briers).to_dict() | {
        "definition": "mean Brier score against the other agents' plays (per scenario)"
    }
    for key in ("log_score", "brier"):
        if not out[key]["n"]:
            out[key]["reason"] = unread
    out["top1"] = proportion(np.asarray([float(bool(s.top1)) for s in est])).to_dict() | {
        "definition": "share of scenarios whose prediction has a unique most likely "
        "choice that is a modal choice of the other agents' plays"
    }
    return PopulationC.of(out)


def abc_contrast_figures(inp: AgentInputs) -> dict[str, AbcContrast]:
    """A − B and B − C accuracy on the same scenarios (those whose three truths differ):
    one pair per scenario, Newcombe's paired interval and the exact McNemar test (p_holm
    None: :func:`abc_holm` adjusts them over the run)."""
    rd, c = inp.design, inp.cols
    out: dict[str, AbcContrast] = {}
    for j, (x, y) in enumerate((("A", "B"), ("B", "C"))):
        pos = {"A": 0, "B": 1, "C": 2}
        pairs = [
            (t[pos[x]], t[pos[y]])
            for t in rd.abc_set.triples
            if c.ok[t[pos[x]]] and c.ok[t[pos[y]]]
        ]
        ix = np.asarray([a for a, _ in pairs], dtype=np.int64)
        iy = np.asarray([b for _, b in pairs], dtype=np.int64)
        out[f"{x}_minus_{y}"] = AbcContrast.of(paired_binary(
            c.cor[ix], c.cor[iy], (x, y), inp.rng(0xABC, j)
        ).to_dict() | {
            "definition": f"accuracy on {x} minus accuracy on {y}, paired by "
            "scenario (scenarios whose A, B and C truths differ)"
        })
    return out


def abc_holm(run: RunInputs) -> tuple[dict[str, dict[str, AbcContrast]], int]:
    """Every agent's A − B and B − C contrasts (``games.abc.contrasts``), Holm-adjusted over
    all the testable ones: a family of its own, within-agent effects, kept apart from the
    between-agent family of ``contrasts``; and the family's size."""
    figures: dict[str, dict[str, AbcContrast]] = {}
    for i, a in enumerate(run.agents):
        if (run.design.abc & run.cols[a.name].has).any():
            figures[a.name] = abc_contrast_figures(run.agent(i))
    members = [
        (name, key, d.p)
        for name, fig in figures.items()
        for key, d in fig.items()
        if d.p is not None and math.isfinite(d.p)
    ]
    for (name, key, _), ph in zip(members, holm([p for _, _, p in members]), strict=True):
        figures[name][key] = figures[name][key].model_copy(update={"p_holm": float(ph)})
    return figures, len(members)
