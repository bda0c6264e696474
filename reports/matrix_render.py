"""The cross-model prediction matrix rendered (issue 14 item 6): the heatmap of S per predictor
× target in one self-contained HTML page, one CSV row per cell, and the grids the dashboard
shows. Every renderer reads the summary (:func:`reports.matrix_summary.stored_summary`) through
the typed views here, :class:`MatrixCell` and :class:`SkillGrid`, built once by
:func:`matrix_cells` and :func:`skill_grids`.

A cell whose S has no value is *marked* (hatched), never coloured: ``not divergent`` when the
run's pilot found its items not divergent (no skill is reported), ``not estimable: 40 of 40
answers of T unreadable`` when its target or predictor gave too few readable answers
(:mod:`reports.matrix_unreadable`), else ``not estimable`` (with the reason in its tooltip and
the CSV). Every cell says how many of its target's answers and of its predictor's predictions
were unreadable. A cell with a value but no interval is coloured and says "no interval". Colours run from red (S = −1) through white (S = 0) to blue (S = +1), clipped
beyond; the printed value is never clipped.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mindledger.disclosure import seed_phrase
from reports.matrix import METRICS
from reports.matrix_cells import CellFigure, CellRow, SelfAdvantageFigure, SkillFigure
from reports.matrix_json import as_summary
from reports.matrix_model import MatrixSummary
from reports.matrix_records import Contrast, Estimate, SelfAdvantage
from reports.matrix_unreadable import Unreadable

__all__ = [
    "CSV_COLUMNS",
    "NOT_DIVERGENT",
    "NOT_ESTIMABLE",
    "Figure",
    "MatrixCell",
    "SkillGrid",
    "depth_cells",
    "heatmap_png",
    "matrix_cells",
    "render_matrix_csv",
    "render_matrix_html",
    "skill_colour",
    "skill_grids",
    "skill_text",
    "unreadable_text",
]

NOT_DIVERGENT = "not divergent"
NOT_ESTIMABLE = "not estimable"
MISSING = "—"
LOW, MID, HIGH = (0xD1, 0x49, 0x5B), (0xFF, 0xFF, 0xFF), (0x00, 0x79, 0x8C)
"""The heatmap's colours at S = −1, 0 and +1."""


@dataclass(frozen=True)
class Figure:
    """One figure of a cell: its value, interval and status, or the reason it has none."""

    value: float | None
    lo: float | None
    hi: float | None
    interval: str | None
    status: str | None
    reason: str | None

    @classmethod
    def of(cls, f: CellFigure | SkillFigure) -> Figure:
        """A figure of a cell."""
        return cls(f.value, f.lo, f.hi, f.interval, f.status, f.reason)

    @classmethod
    def of_estimate(cls, e: Estimate | Contrast | SelfAdvantage) -> Figure:
        """A mean over items or a paired figure."""
        status = "estimated" if e.lo is not None and e.reason is None else "not_estimable"
        return cls(e.value, e.lo, e.hi, e.interval, status, e.reason)

    @classmethod
    def of_advantage(cls, a: SelfAdvantageFigure) -> Figure:
        """A self-advantage (with the paired interval, when it has a value)."""
        if a.value is None:
            return cls(None, None, None, None, "not_estimable", a.reason)
        return replace(cls.of_estimate(a.paired), value=a.value)


@dataclass(frozen=True)
class MatrixCell:
    """One (predictor, target) cell of one condition, with every figure the summary has."""

    condition: str
    predictor: str
    target: str
    n: int
    log_score: Figure
    brier: Figure
    top1_accuracy: Figure
    skill: Figure
    base: float | None
    base_kind: str | None
    ceiling: float | None
    test: str | None
    p: float | None
    p_holm: float | None
    predictor_errors: int
    unparsed: int
    unscored: int
    rejected: int
    not_divergent: bool
    """The run's pilot found its items not divergent: S is not reported."""
    depth: str | None = None
    """The belief depth of the items the cell is restricted to (``by_depth``); None: all."""
    unreadable: Unreadable | None = None
    """The target's unreadable answers and the predictor's unreadable predictions (None in a
    summary stored before they were counted)."""
    unreadable_reason: str | None = None
    """Why the cell is not estimable for what it could not read, or None."""

    @property
    def is_self(self) -> bool:
        return self.predictor == self.target

    @property
    def mark(self) -> str | None:
        """Why the cell is not coloured (:data:`NOT_DIVERGENT`, :data:`NOT_ESTIMABLE`), or None."""
        if self.not_divergent:
            return NOT_DIVERGENT
        if self.unreadable_reason:
            return f"{NOT_ESTIMABLE}: {self.unreadable_reason}"
        return NOT_ESTIMABLE if self.skill.value is None else None

    def figure(self, metric: str) -> Figure:
        out: Figure = getattr(self, metric)
        return out


Summary = MatrixSummary | Mapping[str, Any]
"""A matrix as the renderers take it: typed, or its JSON (:func:`reports.matrix_json.summary_of`
reads it)."""


def _cell(row: CellRow, condition: str, *, not_divergent: bool,
          depth: str | None = None) -> MatrixCell:
    sk = row.skill
    return MatrixCell(
        condition=condition, predictor=row.predictor, target=row.target, n=row.n,
        log_score=Figure.of(row.log_score), brier=Figure.of(row.brier),
        top1_accuracy=Figure.of(row.top1_accuracy), skill=Figure.of(sk), base=sk.base,
        base_kind=sk.base_kind, ceiling=sk.ceiling.value, test=sk.test, p=sk.p,
        p_holm=sk.p_holm, predictor_errors=row.predictor_errors, unparsed=row.unparsed,
        unscored=row.unscored, rejected=row.rejected, not_divergent=not_divergent, depth=depth,
        unreadable=row.unreadable, unreadable_reason=row.unreadable_reason,
    )  # fmt: skip


def matrix_cells(summary: Summary) -> list[MatrixCell]:
    """Every cell of every condition, condition by condition in the run's order."""
    s = as_summary(summary)
    out = []
    for c in s.conditions:
        cs = s.condition_summary(c)
        rows = cs.cells if cs is not None else ()
        out += [_cell(row, c, not_divergent=bool(s.not_divergent)) for row in rows]
    return out


def depth_cells(summary: Summary) -> list[MatrixCell]:
    """The primary condition's cells restricted to the items of each belief depth
    (``by_depth``: NestToM items), depth by depth."""
    s = as_summary(summary)
    return [
        _cell(row, s.condition, not_divergent=False, depth=entry.depth)
        for entry in s.by_depth
        for row in entry.cells
    ]


@dataclass(frozen=True)
class SkillGrid:
    """S of one condition as a grid: predictors down, targets across."""

    condition: str
    predictors: tuple[str, ...]
    targets: tuple[str, ...]
    cells: Mapping[tuple[str, str], MatrixCell]

    def cell(self, predictor: str, target: str) -> MatrixCell | None:
        return self.cells.get((predictor, target))


def skill_grids(summary: Summary) -> list[SkillGrid]:
    """One :class:`SkillGrid` per condition, agents in the run's order."""
    s = as_summary(summary)
    agents = tuple(s.agents)
    cells = matrix_cells(s)
    return [
        SkillGrid(c, agents, agents,
                  {(x.predictor, x.target): x for x in cells if x.condition == c})
        for c in s.conditions
    ]


def _num(v: float | None, spec: str = ".2f") -> str:
    return MISSING if v is None or not math.isfinite(v) else format(v, spec)


def skill_text(cell: MatrixCell | None, spec: str = ".2f") -> str:
    """``0.52 [0.40, 0.63]``; ``0.52 (no interval)``; the cell's mark; ``—`` with no cell."""
    if cell is None:
        return MISSING
    if cell.mark:
        return cell.mark
    s = cell.skill
    if s.lo is None or s.hi is None:
        return f"{_num(s.value, spec)} (no interval)"
    return f"{_num(s.value, spec)} [{_num(s.lo, spec)}, {_num(s.hi, spec)}]"


def unreadable_text(cell: MatrixCell | None) -> str:
    """``unreadable: 3 of 40 answers, 0 of 10 predictions``; empty when not counted."""
    return "" if cell is None or cell.unreadable is None else cell.unreadable.text()


def skill_colour(value: float | None) -> str | None:
    """The heatmap's colour of S as ``#rrggbb`` (clipped to [−1, 1]); None without a value."""
    if value is None or not math.isfinite(value):
        return None
    x = max(-1.0, min(1.0, value))
    end = HIGH if x >= 0 else LOW
    return "#" + "".join(f"{round(m + (e - m) * abs(x)):02x}" for m, e in zip(MID, end,
                                                                              strict=True))


def _figure_text(f: Figure, spec: str = ".3f") -> str:
    if f.value is None:
        return f"{MISSING} ({f.reason})" if f.reason else MISSING
    if f.lo is None or f.hi is None:
        why = f"no interval: {f.reason}" if f.reason else "no interval"
        return f"{_num(f.value, spec)} ({why})"
    return f"{_num(f.value, spec)} [{_num(f.lo, spec)}, {_num(f.hi, spec)}]"


def _tooltip(cell: MatrixCell) -> str:
    lines = [f"{cell.predictor} → {cell.target} ({cell.condition}), n = {cell.n}"]
    if cell.unreadable is not None:
        lines.append(unreadable_text(cell))
    lines += [f"{m}: {_figure_text(cell.figure(m))}" for m in METRICS]
    lines.append(f"base {_num(cell.base, '.3f')} ({cell.base_kind or MISSING}), ceiling "
                 f"{_num(cell.ceiling, '.3f')}, p {_num(cell.p, '.3g')}, "
                 f"p (Holm) {_num(cell.p_holm, '.3g')}")
    return "\n".join(lines)


# -- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1180px;color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem}h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.86rem}
th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f4f4f4}table.heatmap td{text-align:center;min-width:9rem}
td.marked{background:repeating-linear-gradient(45deg,#f4f4f4,#f4f4f4 6px,#e4e4e4 6px,
#e4e4e4 12px);color:#555;font-style:italic}td.self{outline:2px solid #222;outline-offset:-3px}
.n{color:#555;font-size:.78rem}.legend{color:#555;font-size:.85rem}
.info{background:#eef5fb;border-left:5px solid #00798c;padding:.6rem 1rem;margin:.6rem 0}
figure{margin:1rem 0}img{max-width:100%;border:1px solid #eee}
figcaption{color:#555;font-size:.85rem}
"""


def _h(s: Any) -> str:
    return html.escape(str(s))


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    h = "".join(f"<th>{_h(x)}</th>" for x in head)
    b = "".join("<tr>" + "".join(f"<td>{_h(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def _heatmap_html(grid: SkillGrid) -> str:
    head = "".join(f"<th scope='col'>{_h(t)}</th>" for t in grid.targets)
    rows = []
    for p in grid.predictors:
        tds = []
        for t in grid.targets:
            cell = grid.cell(p, t)
            if cell is None:
                tds.append(f"<td class='marked' data-cell='{_h(p)}|{_h(t)}'>{MISSING}</td>")
                continue
            cls = ["self"] if cell.is_self else []
            style = ""
            if cell.mark:
                cls.append("marked")
            else:
                style = f" style='background:{skill_colour(cell.skill.value)}'"
            reason = f"\nS: {cell.skill.reason}" if cell.mark and cell.skill.reason else ""
            counts = f" · {unreadable_text(cell)}" if cell.unreadable is not None else ""
            tds.append(
                f"<td class='{' '.join(cls)}'{style} data-cell='{_h(p)}|{_h(t)}' "
                f"title='{_h(_tooltip(cell) + reason)}'>{_h(skill_text(cell))}"
                f"<br><span class='n'>n = {cell.n}{_h(counts)}</span></td>"
            )
        rows.append(f"<tr><th scope='row'>{_h(p)}</th>{''.join(tds)}</tr>")
    return (f"<table class='heatmap' data-condition='{_h(grid.condition)}'><thead><tr>"
            f"<th>predictor ↓ target →</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
            "</table>")


CELL_HEAD = ("condition", "predictor → target", "n", "log score", "Brier", "top-1", "skill S",
             "base", "p", "p (Holm)", "unreadable answers", "unreadable predictions")


def render_matrix_html(summary: Summary, *, figures: bool = True) -> str:
    """The matrix as ONE self-contained HTML page: per condition the heatmap of S (an HTML
    table, each cell's figures in its tooltip) and, with ``figures``, the same heatmap as an
    embedded PNG; then every cell's figures and the self-advantage."""
    s = as_summary(summary)
    st = s.stored
    run = st.run if st is not None else ""
    seed = seed_phrase(None if st is None else st.seed, held_out=st is not None and st.held_out)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>mindledger matrix — {_h(run)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Cross-model prediction matrix — run <code>{_h(run)}</code></h1>",
        f"<p>{_h(s.primary.n_items)} items, {_h(s.primary.samples)} target samples "
        f"each ({_h(seed)}); status {_h(None if st is None else st.status)}. Intervals: 95% "
        "hierarchical "
        "bootstrap (items, then each target's samples); p: sign-flip test of S = 0, Holm "
        "over the cells of a condition.</p>",
        "<p class='legend'>Skill S = (top-1 match − base) / (ceiling − base): 0 is the better "
        "of the population-modal and projection baselines, 1 the target's test-retest ceiling. "
        "Cells are coloured from red (S ≤ −1) through white (0) to blue (S ≥ 1); hatched cells "
        "have no S (hover for the reason); the diagonal (outlined) is self-prediction. Under each "
        "value: n, and how many of the target's answers and of the predictor's predictions were "
        "unreadable (no readable answer; a prediction unparsed); a cell with more than half of "
        "either unreadable is not estimable.</p>",
    ]
    if s.pilot is not None:
        parts.append(f"<div class='info'>Pilot ({_h(s.pilot.method)}): "
                     f"{_h(s.pilot.verdict)}</div>")
    if s.not_divergent:
        parts.append(f"<div class='info'>No skill reported ({NOT_DIVERGENT}): "
                     f"{_h(s.not_divergent)}</div>")
    for grid in skill_grids(s):
        parts.append(f"<h2>Skill S — {_h(grid.condition)}</h2>")
        parts.append(_heatmap_html(grid))
        png = heatmap_png(grid) if figures else None
        if png is not None:
            b64 = base64.b64encode(png).decode("ascii")
            caption = f"Skill S per predictor × target, {grid.condition} [95% interval]"
            parts.append(f"<figure id='fig-heatmap-{_h(grid.condition)}'><img alt='{_h(caption)}'"
                         f" src='data:image/png;base64,{b64}'><figcaption>{_h(caption)}"
                         "</figcaption></figure>")
    rows = [[c.condition, f"{c.predictor} → {c.target}" + (" (self)" if c.is_self else ""), c.n,
             *(_figure_text(c.figure(m)) if m != "skill" or not c.mark else c.mark
               for m in METRICS),
             c.base_kind or MISSING, _num(c.p, ".3g"), _num(c.p_holm, ".3g"),
             *_unreadable_columns(c)]
            for c in matrix_cells(s)]
    parts += ["<h2>Every cell</h2>", _table(CELL_HEAD, rows)]
    by_depth = depth_cells(s)
    if by_depth:
        depths = list(dict.fromkeys(str(c.depth) for c in by_depth))
        pairs = list(dict.fromkeys((c.predictor, c.target) for c in by_depth))
        at = {(c.predictor, c.target, c.depth): c for c in by_depth}
        depth_rows = [[f"{p} → {t}" + (" (self)" if p == t else ""),
                       *(f"{_figure_text(at[p, t, d].skill)} (n = {at[p, t, d].n})"
                         for d in depths)]
                      for p, t in pairs]
        parts += ["<h2>Skill S by belief depth (NestToM items)</h2>",
                  _table(("predictor → target", *depths), depth_rows)]
    adv = s.primary.self_advantage
    if adv:
        head = ("target", "log score", "Brier", "top-1", "skill S")
        adv_rows = [[t, *(_figure_text(Figure.of_advantage(entry[m]), "+.3f")
                          + ("" if entry[m].p_holm is None
                             else f" (p Holm {entry[m].p_holm:.3g})")
                          for m in METRICS)]
                    for t, entry in adv.items()]
        parts += ["<h2>Self-advantage (T predicting T − others predicting T)</h2>",
                  _table(head, adv_rows)]
    parts.append("</body></html>")
    return "\n".join(parts)


def _unreadable_columns(cell: MatrixCell) -> tuple[str, str]:
    """The cell's unreadable answers and predictions, ``N of M`` each."""
    u = cell.unreadable
    if u is None:
        return MISSING, MISSING
    return (f"{u.target_answers} of {u.target_samples}",
            f"{u.predictions} of {u.predictions_asked}")


def heatmap_png(grid: SkillGrid) -> bytes | None:
    """The heatmap of one condition as PNG bytes (matplotlib's object API); None when the grid
    is empty. Marked cells are grey and say why."""
    if not grid.predictors or not grid.targets:
        return None
    from matplotlib.colors import LinearSegmentedColormap
    from matplotlib.figure import Figure as MplFigure

    cmap = LinearSegmentedColormap.from_list(
        "skill", [tuple(x / 255 for x in c) for c in (LOW, MID, HIGH)])
    values = [[math.nan if (c := grid.cell(p, t)) is None or c.mark or c.skill.value is None
               else max(-1.0, min(1.0, c.skill.value)) for t in grid.targets]
              for p in grid.predictors]
    w = 1.2 + 1.9 * len(grid.targets)
    h = 1.0 + 0.9 * len(grid.predictors)
    fig = MplFigure(figsize=(w, h), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.set_facecolor("#e4e4e4")
    image = ax.imshow(values, cmap=cmap, vmin=-1.0, vmax=1.0, aspect="auto")
    for i, p in enumerate(grid.predictors):
        for j, t in enumerate(grid.targets):
            cell = grid.cell(p, t)
            text = skill_text(cell).replace(" [", "\n[")
            if cell is not None and cell.unreadable_reason:
                text = f"{NOT_ESTIMABLE}:\ntoo much unreadable"
            if cell is not None:
                text += f"\nn = {cell.n}"
                if cell.unreadable is not None:
                    u = cell.unreadable
                    text += (f"\nunreadable {u.target_answers}/{u.target_samples} · "
                             f"{u.predictions}/{u.predictions_asked}")
            dark = not math.isnan(values[i][j]) and abs(values[i][j]) > 0.6
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="white" if dark else "black",
                    style="italic" if cell is None or cell.mark else "normal")
    ax.set_xticks(range(len(grid.targets)), list(grid.targets), fontsize=8)
    ax.set_yticks(range(len(grid.predictors)), list(grid.predictors), fontsize=8)
    ax.set_xlabel("target")
    ax.set_ylabel("predictor")
    ax.set_title(f"Skill S — {grid.condition}", fontsize=9)
    fig.colorbar(image, ax=ax, label="S (clipped to [−1, 1])")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


# -- CSV -------------------------------------------------------------------------------------

CSV_COLUMNS = (
    "run", "condition", "predictor", "target", "self", "n",
    *(f"{m}_{k}" for m in METRICS for k in ("value", "lo", "hi", "status", "reason")),
    "interval", "base", "base_kind", "ceiling", "test", "p", "p_holm",
    "predictor_errors", "unparsed", "unscored", "rejected", "not_divergent", "depth",
    "about", "vs_uniform_value", "vs_uniform_lo", "vs_uniform_hi",
    "unreadable_answers", "target_samples", "unreadable_predictions", "predictions_asked",
    "unreadable_reason",
)  # fmt: skip
"""One row per cell and condition: every figure with its interval, n, the test and its p;
then the primary condition's cells by belief depth (``depth`` set; empty on the others); then
the second-order cells (condition ``second-order``: P predicting the distribution ``about``
commits for ``target``; log score, Brier and top-1 against that distribution, no S, and the
gain over the uniform distribution with its test in ``test``/``p``/``p_holm``). Last, what
the cell could not read (the target's answers with no readable answer out of its samples, the
predictor's unparsed predictions out of its replies) and, when too much, why it is not
estimable."""

SECOND_ORDER_NO_SKILL = (
    "second-order prediction has no S: it is scored against the committed distribution of the "
    "predictor it is about (see vs_uniform)"
)


def _unreadable_csv(cell: MatrixCell) -> list[str | int]:
    u = cell.unreadable
    if u is None:
        return ["", "", "", "", ""]
    return [u.target_answers, u.target_samples, u.predictions, u.predictions_asked,
            cell.unreadable_reason or ""]


def render_matrix_csv(summary: Summary) -> str:
    """Every cell of every condition as one CSV row (:data:`CSV_COLUMNS`); empty fields where
    a figure has no value or interval (its ``_status`` and ``_reason`` say why)."""

    def num(v: float | None) -> str:
        return "" if v is None or not math.isfinite(v) else repr(float(v))

    s = as_summary(summary)
    run = s.stored.run if s.stored is not None else ""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in [*matrix_cells(s), *depth_cells(s)]:
        figs: list[str] = []
        for m in METRICS:
            f = c.figure(m)
            figs += [num(f.value), num(f.lo), num(f.hi), f.status or "", f.reason or ""]
        w.writerow([
            run, c.condition, c.predictor, c.target, int(c.is_self), c.n,
            *figs, c.skill.interval or c.log_score.interval or "", num(c.base),
            c.base_kind or "", num(c.ceiling), c.test or "", num(c.p), num(c.p_holm),
            c.predictor_errors, c.unparsed, c.unscored, c.rejected, int(c.not_divergent),
            c.depth or "", "", "", "", "", *_unreadable_csv(c),
        ])  # fmt: skip
    for row in s.second_order.cells if s.second_order is not None else ():
        figs = []
        for key in ("log_score", "brier", "top1_match"):
            f = Figure.of_estimate(row.figures[key])
            figs += [num(f.value), num(f.lo), num(f.hi), f.status or "", f.reason or ""]
        figs += ["", "", "", "not_estimable", SECOND_ORDER_NO_SKILL]
        tested = row.vs_uniform
        vs = Figure.of_estimate(tested.figure)
        w.writerow([
            run, "second-order", row.predictor, row.target, 0,
            row.n, *figs, row.figures["brier"].interval or "", "", "", "",
            tested.figure.test or "", num(tested.figure.p), num(tested.p_holm),
            row.counts["predictor_error"], row.counts["unparsed"], row.counts["unscored"], 0,
            0, "", row.about, num(vs.value), num(vs.lo), num(vs.hi), "", "", "", "", "",
        ])  # fmt: skip
    return buf.getvalue()
