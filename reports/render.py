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
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ledger.store import Store
from mindledger.disclosure import TrialRowRedactor, withholds
from reports._data import RunData, load_run
from reports._disclosure import disclosed_profile
from reports._html import render_html
from reports._report_parts import (
    CONTRAST_LABELS,
    PROXY_HEAD,
    _agent_order,
    _agent_section,
    _all_contrasts_markdown,
    _contrast_blocks,
    _forest_svg,
    _headline_head,
    _headline_rows,
    _legend,
    _proxy_rows,
    _seed_sentence,
    _table,
    _top_notices,
    _verdict_markdown,
)
from reports.matrix_summary import accompanying_summary
from reports.model import D50, Estimate, RunProfile
from reports.present import (
    FALSE_BELIEF_FIGURES,
    HEADLINE_COLUMNS,
    headlines,
    number,
    small_n_said_once,
)
from reports.profile import analyse
from reports.self_forecast import attach_self_forecasts
from reports.self_forecast_render import render_self_forecast_csv
from reports.trials import wrong_examples
from reports.verdicts import verdict

__all__ = [
    "CONTRAST_LABELS",
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

# -- Markdown --------------------------------------------------------------------------------


def render_markdown(
    profile: RunProfile,
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
    run = profile.run
    out: list[str] = [f"# mindledger profile — run `{run.id}`", ""]
    out += _verdict_markdown(verdict(profile))
    out += [f"> **{n}**" if n.startswith(("HELD-OUT", "UNCHECKED")) else f"> {n}"
            for n in _top_notices(profile)]
    out += [
        "",
        f"Suite `{run.suite}`, {_seed_sentence(profile, reveal_held_out)}, status "
        f"{run.status}; {run.n_items} items, {run.n_trials} trials.",
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
        for name, a in profile.agents.items():
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
        out += _agent_section(name, profile.agents[name], forests=forests)
    proxy = profile.proxy
    if proxy.agents:
        out += ["## Query proxy", "", f"_{proxy.scope}._", "",
                _table(PROXY_HEAD, _proxy_rows(proxy)), ""]
    out += _all_contrasts_markdown(profile)
    out += ["## How to read the figures", "", _legend(profile), ""]
    return "\n".join(out) + "\n"


# -- JSON and CSV ----------------------------------------------------------------------------


def render_json(
    profile: RunProfile, *, indent: int | None = 2, reveal_held_out: bool = False
) -> str:
    """The profile as strict JSON (no NaN: missing numbers are null with a reason), with the
    verdict every rendering opens with under ``verdict`` (a key the schema allows). A held-out
    run's ``run.seed`` is null with ``run.seed_withheld`` true unless ``reveal_held_out``
    (operators)."""
    shown = disclosed_profile(profile.to_json(), reveal_held_out=reveal_held_out)
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


def render_headline_csv(profile: RunProfile) -> str:
    """One row per agent: the headline figures worded as every rendering words them
    (:mod:`reports.present`), then each figure's value, interval ends, n and status for
    scripts. An invalid agent's false-belief numbers are left empty: they do not count."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    numbers = [f"{key}_{part}" for key, _ in HEADLINE_CSV_NUMBERS
               for part in ("value", "lo", "hi", "n", "status")]
    w.writerow([key for key, _ in HEADLINE_COLUMNS] + numbers)

    def num(v: Any) -> str:
        f = number(v)
        return "" if f is None else f"{f:.6g}"

    for h in headlines(profile):
        a = profile.agents[h.agent]
        row = h.cells()
        for key, field in HEADLINE_CSV_NUMBERS:
            d: D50 | Estimate = getattr(a, field)
            withheld = a.valid is False and key in FALSE_BELIEF_FIGURES
            lo, hi = d.ci or (None, None)
            n = d.n if "n" in d.model_fields_set else None
            row += ["", "", "", "", "invalid"] if withheld else [
                num(d.value), num(lo), num(hi), "" if n is None else str(n),
                str(d.status or "")]
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
    ``headline-csv`` (one row per agent) or ``forecasts-csv`` (one row per self-forecast
    the profile names: :mod:`reports.self_forecast_render`). ``seed`` is the
    bootstrap's; a held-out run's own seed is shown only with ``reveal_held_out`` (operators:
    it regenerates the held-out items)."""
    data = load_run(store, run_id)
    reveal = reveal_held_out
    if fmt == "csv":
        return render_csv(data, reveal_held_out=reveal)
    matrix = accompanying_summary(store, run_id, n_boot=n_boot, stats_seed=seed)
    profile = analyse(data, seed=seed, n_boot=n_boot, reveal_held_out=reveal,
                      matrix=matrix).profile
    profile = attach_self_forecasts(store, profile)
    if fmt == "headline-csv":
        return render_headline_csv(profile)
    if fmt == "forecasts-csv":
        return render_self_forecast_csv(profile)
    if fmt == "json":
        return render_json(profile, reveal_held_out=reveal)
    if fmt == "html":
        examples = wrong_examples(store, run_id, reveal_held_out=reveal)
        return render_html(profile, reveal_held_out=reveal, examples=examples)
    if fmt == "md":
        return render_markdown(profile, figures_dir=figures_dir,
                               figures_link_prefix=figures_link_prefix, reveal_held_out=reveal)
    raise ValueError(
        f"unknown format {fmt!r} (md, html, json, csv, headline-csv, forecasts-csv)")


# -- comparing two runs: reports.comparison (its names stay importable from here) -----------

from reports.comparison import (  # noqa: E402
    compare,
    compare_runs,
    render_compare_markdown,
)
