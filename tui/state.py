"""The dashboard's view-model: pure functions from stored records and profile dicts to the text
the screens show. No Textual, no I/O, no clock (the current time is passed in).

What a screen shows when a number cannot be given is decided here, once:

- a metric with no value shows :data:`NOT_ESTIMABLE` plus the profile's reason when it has one;
- an agent whose true-belief control accuracy is below the threshold is **invalid**: its
  false-belief figures (D50, leakage resistance, false-belief accuracy, the false-belief column
  by depth) are replaced by :data:`INVALID` in summary cells, and shown only in the detail pane
  marked "not counted";
- an empty cell (no trials, no answer) shows :data:`MISSING`;
- a held-out run's seed shows as "withheld" (:mod:`mindledger.disclosure`): it regenerates the
  held-out items, and the dashboard shows it in no view.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mindledger.disclosure import seed_cell, seed_phrase
from reports.present import (
    INVALID,
    MISSING,
    NOT_ESTIMABLE,
    agent_headline,
    d50_text,
    difference_text,
    marked_invalid,
    number,
    pct,
    proportion_text,
    run_status_text,
)
from tui.depth_view import DepthCurve, depth_curve

if TYPE_CHECKING:  # types only: this module never touches the database
    from ledger.chain import Verification
    from ledger.protocol import PredictionState
    from ledger.store import FailureCounts
    from reports.matrix_model import MatrixSummary
    from reports.model import RunProfile

__all__ = [
    "AGENT_COLUMNS",
    "COUNTING",
    "INVALID",
    "MISSING",
    "NOTE_MARK",
    "NOT_ESTIMABLE",
    "PREDICTION_COLUMNS",
    "PREDICTION_STATES",
    "RUN_COLUMNS",
    "RUN_COLUMNS_LEFT_OUT",
    "SUMMARY_CELL_WIDTH",
    "AgentCount",
    "AgentView",
    "ContrastRow",
    "DepthRow",
    "LedgerView",
    "MatrixGridView",
    "MatrixView",
    "PredictionRow",
    "RunHeader",
    "RunRow",
    "RunSummary",
    "VerifyView",
    "accuracy_cell",
    "agent_row",
    "agent_views",
    "calls_lines",
    "failed_cell",
    "fitted_columns",
    "fmt_d50",
    "fmt_difference",
    "fmt_pct",
    "fmt_proportion",
    "fmt_time",
    "ledger_view",
    "matrix_cell_lines",
    "matrix_view",
    "prediction_rows",
    "run_header",
    "run_rows",
    "state_counts",
    "verify_view",
]

ROLE_ORDER = {"agent": 0, "control": 1, "ablation": 2, "reference": 3}
PREDICTION_STATES = ("committed", "observed", "revealed", "scored", "expired", "rejected")
"""Every state a prediction can be shown in, in the order of its life."""

RUN_COLUMNS = (
    "Run", "Suite", "Seed", "Held-out", "Status", "Created", "Agents", "Trials", "Accuracy",
)  # fmt: skip
RUN_COLUMNS_LEFT_OUT = ("Seed", "Agents", "Held-out", "Created", "Suite")
"""The runs table's columns left out, in this order, while it is wider than its screen: the
status, trials and accuracy (what the table is for) stay."""


def fitted_columns(
    columns: Sequence[str],
    widths: Sequence[int],
    room: int,
    *,
    left_out: Sequence[str] = RUN_COLUMNS_LEFT_OUT,
    padding: int = 2,
) -> list[str]:
    """The ``columns`` (their cells ``widths`` wide, ``padding`` more each) a table ``room``
    cells wide shows: all of them when they fit, else without the first of ``left_out``, then
    the next, until they fit or none is left to leave out."""
    kept = list(columns)
    width = dict(zip(columns, widths, strict=True))
    for name in left_out:
        if sum(width[c] + padding for c in kept) <= room:
            break
        if name in kept:
            kept.remove(name)
    return kept


AGENT_COLUMNS = (
    "Valid", "Agent", "Role", "D50", "Leakage resist.", "True-belief ctrl", "False-belief", "n",
    "Failed",
)  # fmt: skip
PREDICTION_COLUMNS = (
    "Prediction", "Predictor", "Target", "Query", "State", "Observed", "Top-1", "Log score",
    "Committed",
)  # fmt: skip


# -- formatting ---------------------------------------------------------------------------


_number = number
fmt_pct = pct
fmt_proportion = proportion_text
fmt_d50 = d50_text


def fmt_difference(block: Mapping[str, Any] | None, *, proportion: bool = True) -> str:
    """A paired contrast: ``"+25.0 pts [+13.5, +35.2] n=52 p_holm=0.003"`` for proportions,
    ``"+1.14 [+0.39, +1.80] n=52 …"`` otherwise; the reason when it is not available."""
    return difference_text(block, proportion=proportion, with_n=True, with_p=True)


def fmt_time(iso: str | None) -> str:
    """An ISO 8601 timestamp as ``"2026-03-01 12:00:05"`` (its own zone, not converted)."""
    if not iso:
        return MISSING
    date, _, rest = iso.partition("T")
    return f"{date} {rest[:8]}".strip() if rest else date


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


# -- runs ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentCount:
    """One agent's trials in a run, as :meth:`ledger.store.Store.trial_counts` counts them."""

    name: str
    role: str
    ok: int = 0
    api_error: int = 0
    not_applicable: int = 0
    correct: int = 0

    @property
    def trials(self) -> int:
        return self.ok + self.api_error + self.not_applicable

    @property
    def accuracy(self) -> float | None:
        """Correct over trials answered without an API error (None before the first)."""
        return self.correct / self.ok if self.ok else None


@dataclass(frozen=True)
class RunSummary:
    """A stored run with its agents' trial counts (what the runs table is built from). ``seed``
    is None when withheld (a held-out run)."""

    id: str
    suite: str
    seed: int | None
    held_out: bool
    status: str
    created_at: str
    agents: tuple[AgentCount, ...] = ()
    last_trial_at: str | None = None
    """When its newest trial was stored: read for a run still marked running only."""
    over_limit: int = 0
    """Its agents whose share of failed trials (API errors, unreadable answers) is over the
    failure limit (``max_failure_share``): a complete run reads ``FAILED``."""


@dataclass(frozen=True)
class RunRow:
    """One row of the runs table: its key (the run id) and its cells in RUN_COLUMNS order;
    ``agents`` are the run's agents, agents under test first (whose history ``a`` opens)."""

    key: str
    cells: tuple[str, ...]
    agents: tuple[str, ...] = ()
    created_at: str = ""


def _role_key(role: str, name: str) -> tuple[int, str]:
    return (ROLE_ORDER.get(role, len(ROLE_ORDER)), name)


def accuracy_cell(agents: Iterable[AgentCount]) -> str:
    """Accuracy per agent, agents under test first: ``"piper 59% · piper-control 34%"``."""
    ordered = sorted(agents, key=lambda a: _role_key(a.role, a.name))
    parts = [f"{a.name} {fmt_pct(a.accuracy, 0)}" for a in ordered]
    return " · ".join(parts) if parts else MISSING


def run_rows(runs: Iterable[RunSummary], now: str | None = None) -> list[RunRow]:
    """The runs table, newest first (ties by id); a run marked running that has stored no
    trial for a while says so (``running · idle 2h14m``, counted from ``now``, ISO 8601;
    default: the clock's)."""
    at = dt.datetime.fromisoformat(now) if now else dt.datetime.now(dt.UTC)
    ordered = sorted(runs, key=lambda r: r.id)
    ordered.sort(key=lambda r: r.created_at or "", reverse=True)
    return [
        RunRow(
            r.id,
            (
                r.id,
                r.suite,
                seed_cell(r.seed, held_out=r.held_out),
                "held-out" if r.held_out else "dev",
                run_status_text(
                    r.status, r.created_at, r.last_trial_at, at, over_limit=r.over_limit
                ),
                fmt_time(r.created_at),
                str(len(r.agents)),
                str(sum(a.trials for a in r.agents)),
                accuracy_cell(r.agents),
            ),
            tuple(a.name for a in sorted(r.agents, key=lambda a: _role_key(a.role, a.name))),
            r.created_at or "",
        )
        for r in ordered
    ]


# -- one run's profile --------------------------------------------------------------------


@dataclass(frozen=True)
class RunHeader:
    title: str
    detail: str
    """The run's status and counts (:meth:`detail_line` adds what failed)."""
    notices: tuple[str, ...]
    """The profile-level notices but the INVALID ones: the verdict says each agent's validity
    once, and the agent's detail says why in full."""
    verdict: tuple[str, ...] = ()
    """The verdict (:mod:`reports.verdicts`), one paragraph a line, first on the run screen."""
    invalid: tuple[bool, ...] = ()
    """Per line of :attr:`verdict`: whether it is an INVALID agent's."""
    status: str = ""
    """The run's stored status (``complete``, ``running``, ``interrupted``…)."""

    def detail_line(self, over_limit: Sequence[str] = ()) -> str:
        """:attr:`detail`, or for a complete run with agents whose failed trials are over the
        failure limit (``over_limit``, as ``mindledger run`` exits 3 by and the runs table
        reads ``FAILED``), ``FAILED (garbage over the failure limit) · …`` in place of its
        status."""
        if not over_limit or self.status != "complete":
            return self.detail
        names = ", ".join(over_limit)
        rest = self.detail.removeprefix(self.status)
        return f"FAILED ({names} over the failure limit){rest}"


def run_header(profile: RunProfile) -> RunHeader:
    """The run's identity line, its counts, its verdict and the profile-level notices (a
    held-out run's seed withheld, whatever the profile holds)."""
    from reports.verdicts import verdict
    run = profile.run
    held_out = profile.held_out or run.held_out
    held = "held-out seeds" if held_out else "development seeds"
    seed = seed_phrase(run.seed, held_out=held_out)
    title = f"Run {run.id} · suite {run.suite} · {seed}"
    detail = (
        f"{run.status} · {held} · {run.n_items} items · "
        f"{run.n_trials} trials · created {fmt_time(run.created_at)}"
    )
    v = verdict(profile)
    lines = v.paragraphs()
    invalid = [a.valid is False for a in v.agents]
    return RunHeader(
        title,
        detail,
        tuple(n for n in profile.notices if not n.startswith(INVALID)),
        tuple(lines),
        tuple(invalid + [False] * (len(lines) - len(invalid))),
        run.status or "",
    )


@dataclass(frozen=True)
class DepthRow:
    depth: str
    false_belief: str
    true_belief: str


@dataclass(frozen=True)
class ContrastRow:
    """One line of agent − control or of a module's ablation credit."""

    contrast: str
    metric: str
    value: str


@dataclass(frozen=True)
class AgentView:
    """Everything the run screen shows about one agent."""

    name: str
    role: str
    valid: bool
    validity: str
    """One line, validity first: ``"VALID: …"`` or the profile's ``INVALID: …`` message."""
    d50: str
    leakage_resistance: str
    true_belief: str
    false_belief: str
    n: str
    notices: tuple[str, ...] = ()
    depth_rows: tuple[DepthRow, ...] = ()
    curve: DepthCurve | None = None
    """The same accuracy by depth as numbers, for the run screen's chart."""
    contrasts: tuple[ContrastRow, ...] = ()
    summary: tuple[str, ...] = field(default=())
    """The agent's row of the summary table from its profile, in AGENT_COLUMNS order up to n
    (cells no wider than :data:`SUMMARY_CELL_WIDTH`: a reason moves to :attr:`notes`);
    :func:`agent_row` adds its failures."""
    notes: tuple[str, ...] = ()
    """The reasons taken out of the summary cells: ``"piper D50: not estimable (…)"``."""
    self_forecast: tuple[str, ...] = ()
    """The agent's self-forecast section in a few lines
    (:func:`reports.self_forecast_render.self_forecast_text`); empty without forecasts."""


SUMMARY_CELL_WIDTH = 20
"""The widest a figure's cell in the run screen's agents table may be, so that every column
(the true-belief control accuracy and what follows it included) fits at 120 columns; longer
text moves to a note under the table."""
NOTE_MARK = "†"


def _summary_cell(text: str, column: str, name: str, notes: list[str]) -> str:
    """``text`` as a summary cell: a reason in parentheses (``"not estimable (accuracy does
    not decline …)"``) or anything too wide is cut to its head plus :data:`NOTE_MARK`, and the
    whole text goes to ``notes``."""
    if len(text) <= SUMMARY_CELL_WIDTH:
        return text
    notes.append(f"{name} {column}: {text}")
    head = text.split(" (")[0]
    if len(head) >= SUMMARY_CELL_WIDTH:
        head = head[: SUMMARY_CELL_WIDTH - 2] + "…"
    return head + NOTE_MARK


def _depth_rows(
    acc: Mapping[str, Any], valid: bool, reality: Mapping[str, Any] | None = None
) -> tuple[DepthRow, ...]:
    """One row per depth; R0 first, from the profile's reality check (R0 asks where the object
    really is: it has no false-belief cell, and is outside the false-belief figures)."""
    false = acc.get("false") or {}
    true = acc.get("true") or {}
    labels = list(true) + [d for d in false if d not in true]

    def key(label: str) -> tuple[float, str]:
        cell = true.get(label) or false.get(label) or {}
        depth = _number(cell.get("depth_n"))
        return (depth if depth is not None else math.inf, label)

    rows = []
    if isinstance(reality, Mapping) and reality.get("n") and "R0" not in labels:
        rows.append(DepthRow("R0", MISSING, f"{fmt_proportion(reality)} (reality check)"))
    for label in sorted(labels, key=key):
        fb = false.get(label)
        if fb is None:
            fb_text = MISSING
        elif (fb.get("n") or 0) == 0:
            fb_text = f"{MISSING} n=0"
        else:
            fb_text = fmt_proportion(fb) if valid else marked_invalid(fmt_proportion(fb))
        tb = true.get(label)
        tb_text = (
            MISSING
            if tb is None
            else (f"{MISSING} n=0" if (tb.get("n") or 0) == 0 else fmt_proportion(tb))
        )
        rows.append(DepthRow(label, fb_text, tb_text))
    return tuple(rows)


_CONTRAST_METRICS = (
    ("false_belief_accuracy", "false-belief accuracy", True),
    ("d50", "D50", False),
    ("leakage_resistance", "leakage resistance", True),
    ("applied_gap", "applied gap", True),
    ("games_accuracy", "games accuracy", True),
    ("agent_prediction_skill", "agent-prediction skill", False),
)


def _contrast_rows(label: str, block: Mapping[str, Any] | None) -> list[ContrastRow]:
    if not isinstance(block, Mapping):
        return []
    if block.get("available") is False:
        return [ContrastRow(label, MISSING, f"not available ({block.get('reason') or '?'})")]
    metrics = block.get("metrics") or {}
    rows = []
    for key, name, proportion in _CONTRAST_METRICS:
        m = metrics.get(key)
        if isinstance(m, Mapping) and m.get("available") is not False:
            rows.append(ContrastRow(label, name, fmt_difference(m, proportion=proportion)))
    for depth, m in (metrics.get("accuracy_by_depth") or {}).items():
        rows.append(ContrastRow(label, f"false-belief {depth}", fmt_difference(m)))
    return rows


def agent_views(profile: RunProfile) -> list[AgentView]:
    """One view per agent, agents under test first, then controls, ablations, references."""
    from reports.model import AgentProfile  # pydantic: not for the runs screen
    from reports.self_forecast_render import self_forecast_text

    agents: Mapping[str, Any] = profile.to_json()["agents"]
    out = []
    for name in sorted(agents, key=lambda n: _role_key(str(agents[n].get("role")), n)):
        a = agents[name]
        role = str(a.get("role") or "?")
        valid = a.get("valid") is not False
        validity = a.get("validity") or {}
        tb = a.get("true_belief_control_accuracy")
        if valid:
            vtext = (
                f"VALID: true-belief control accuracy {fmt_pct((tb or {}).get('value'))} "
                f"(n={(tb or {}).get('n', 0)}) meets the "
                f"{fmt_pct(validity.get('threshold', 0.9), 0)} threshold"
            )
        else:
            vtext = str(validity.get("message") or (a.get("notices") or [INVALID])[0])
            if not vtext.startswith(INVALID):
                vtext = f"{INVALID}: {vtext}"
        typed = AgentProfile.model_validate(a)
        full = agent_headline(name, typed)
        compact = agent_headline(name, typed, with_ci=False)
        errors = (a.get("api_errors") or {}).get("count", 0)
        trials = (a.get("api_errors") or {}).get("trials")
        n = f"{trials} trials, {errors} API errors" if trials is not None else MISSING
        contrasts = _contrast_rows("agent − control", a.get("minus_control"))
        if role in ("agent",) and not contrasts:
            contrasts = [ContrastRow("agent − control", MISSING, "no control in this run")]
        for module, credit in sorted((a.get("ablation_credit") or {}).items()):
            contrasts += _contrast_rows(f"credit: {module}", credit)
        notes: list[str] = []
        summary = (
            "yes" if valid else f"✗ {INVALID}",
            _short(name, 2 * SUMMARY_CELL_WIDTH),
            role,
            *(
                _summary_cell(text, column, name, notes)
                for text, column in (
                    (compact.d50, "D50"),
                    (compact.leakage_resistance, "leakage resistance"),
                    (compact.true_belief, "true-belief control accuracy"),
                    (compact.false_belief, "false-belief accuracy"),
                )
            ),
            str(trials) if trials is not None else MISSING,
        )
        out.append(
            AgentView(
                name=name,
                role=role,
                valid=valid,
                validity=vtext,
                d50=full.d50,
                leakage_resistance=full.leakage_resistance,
                true_belief=full.true_belief,
                false_belief=full.false_belief,
                n=n,
                notices=tuple(str(x) for x in a.get("notices") or () if str(x) != vtext),
                depth_rows=_depth_rows(a.get("accuracy_by_depth") or {}, valid,
                                       a.get("reality_check")),
                curve=depth_curve(name, a),
                contrasts=tuple(contrasts),
                summary=summary,
                notes=tuple(notes),
                self_forecast=tuple(self_forecast_text(a.get("self_forecast"))),
            )
        )
    return out


def failed_cell(failed: int, attempted: int) -> str:
    """Failed trials (API errors and unreadable answers) over the trials that asked the agent
    something: ``"3/26"``; :data:`MISSING` when none did."""
    return f"{failed}/{attempted}" if attempted else MISSING


COUNTING = "…"
"""The failed cell while the failures are being counted."""


def agent_row(
    view: AgentView, failures: Mapping[str, FailureCounts] | None
) -> tuple[str, ...]:
    """The agent's row of the run screen's table, in AGENT_COLUMNS order: its profile's cells
    and its failed trials (``failures`` per agent, None while they are being counted)."""
    if failures is None:
        return (*view.summary, COUNTING)
    counts = failures.get(view.name)
    return (*view.summary, failed_cell(counts.failed, counts.attempted) if counts else MISSING)


# -- the prediction ledger ----------------------------------------------------------------


@dataclass(frozen=True)
class PredictionRow:
    key: str
    state: str
    cells: tuple[str, ...]


def prediction_rows(states: Iterable[PredictionState], now: str) -> list[PredictionRow]:
    """The predictions, newest commit first, each in its state at ``now`` (an open prediction
    past its deadline shows as expired)."""
    rows = []
    for s in sorted(states, key=lambda s: s.commit_seq, reverse=True):
        state = s.effective_state(now)
        scores = s.scores or {}
        top1 = _number(scores.get("top1_match"))
        log = _number(scores.get("log_score"))
        observed = ", ".join(s.observed) if s.observed else MISSING
        rows.append(
            PredictionRow(
                s.id,
                state,
                (
                    s.id,
                    s.predictor,
                    s.target,
                    _short(s.query, 40),
                    state,
                    _short(observed, 20),
                    MISSING if top1 is None else f"{top1:.2f}",
                    MISSING if log is None else f"{log:.3f}",
                    fmt_time(s.committed_at),
                ),
            )
        )
    return rows


def state_counts(rows: Iterable[PredictionRow]) -> str:
    """``"1 committed · 2 scored · 1 rejected"`` in life order; ``"no predictions"``."""
    counts = Counter(r.state for r in rows)
    order = list(PREDICTION_STATES) + sorted(set(counts) - set(PREDICTION_STATES))
    parts = [f"{counts[s]} {s}" for s in order if counts.get(s)]
    return " · ".join(parts) if parts else "no predictions"


@dataclass(frozen=True)
class VerifyView:
    ok: bool
    headline: str
    details: tuple[str, ...] = ()


def verify_view(verification: Verification) -> VerifyView:
    """Intact (entries, head) or the first bad entry and every problem found there."""
    if verification.ok:
        head = verification.head_hash or ""
        head_text = f"head {verification.head_seq} {head[:19]}…" if head else "empty ledger"
        return VerifyView(True, f"Ledger intact: {verification.entries} entries, {head_text}")
    first = verification.first_bad()
    return VerifyView(
        False,
        f"LEDGER BROKEN at entry {first[0].seq}: {first[0].problem.replace('-', ' ')}",
        tuple(str(f) for f in first),
    )


def calls_lines(calls: Mapping[str, Mapping[str, Any]]) -> tuple[str, ...]:
    """One line per agent of the query proxy's record: calls, calls with a prediction,
    refusals by reason, whom it owes a prediction and how many obligations it abandoned;
    ``("no calls through the proxy",)``."""
    lines = []
    for name, t in sorted(calls.items()):
        reasons = ", ".join(f"{k} {v}" for k, v in t["refusals"].items())
        owed = ", ".join(t["open_obligations"])
        abandoned = (t.get("obligations") or {}).get("abandoned", 0)
        lines.append(
            f"{name}: {t['calls']} calls, {t['predicted']} with a prediction, "
            f"{t['refused']} refused" + (f" ({reasons})" if reasons else "")
            + (f"; owes a prediction to {owed}" if owed else "")
            + (f" ({abandoned} abandoned)" if abandoned else "")
        )
    return tuple(lines) or ("no calls through the proxy",)


@dataclass(frozen=True)
class LedgerView:
    rows: tuple[PredictionRow, ...]
    counts: str
    verify: VerifyView
    calls: tuple[str, ...] = ()


def ledger_view(
    states: Iterable[PredictionState], verification: Verification, now: str
) -> LedgerView:
    rows = tuple(prediction_rows(states, now))
    return LedgerView(
        rows, state_counts(rows), verify_view(verification), calls_lines(verification.calls)
    )


# -- a matrix run ---------------------------------------------------------------------------

MATRIX_CORNER = "predictor ↓ target →"


@dataclass(frozen=True)
class MatrixGridView:
    """One condition's S as table rows: predictors down, targets across, ``S [lo, hi]``."""

    condition: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    predictors: tuple[str, ...]
    targets: tuple[str, ...]


@dataclass(frozen=True)
class MatrixView:
    """A matrix run as the dashboard shows it: a header and one grid per condition."""

    title: str
    detail: str
    notices: tuple[str, ...]
    grids: tuple[MatrixGridView, ...]


def matrix_view(summary: MatrixSummary | Mapping[str, Any]) -> MatrixView:
    """The view of a matrix run's summary (:func:`reports.matrix_summary.stored_summary`, or
    its JSON)."""
    from reports.matrix_json import as_summary
    from reports.matrix_render import skill_grids, skill_text

    s = as_summary(summary)

    grids = tuple(
        MatrixGridView(
            g.condition,
            (MATRIX_CORNER, *g.targets),
            tuple((p, *(skill_text(g.cell(p, t)) for t in g.targets)) for p in g.predictors),
            g.predictors,
            g.targets,
        )
        for g in skill_grids(s)
    )
    notices = []
    if s.pilot is not None and s.pilot.verdict:
        notices.append(f"Pilot: {s.pilot.verdict}")
    if s.not_divergent:
        notices.append(f"No skill reported (not divergent): {s.not_divergent}")
    st = s.stored
    seed = seed_phrase(None if st is None else st.seed, held_out=st is not None and st.held_out)
    return MatrixView(
        f"Matrix run {None if st is None else st.run} · {None if st is None else st.status}",
        f"{s.primary.n_items} items, {s.primary.samples} target samples each "
        f"({seed}); skill S [95% hierarchical bootstrap]; conditions: "
        + ", ".join(g.condition for g in grids),
        tuple(notices),
        grids,
    )


def matrix_cell_lines(
    summary: MatrixSummary | Mapping[str, Any], condition: str, predictor: str, target: str
) -> tuple[str, ...]:
    """Every figure of one cell, for the detail pane."""
    from reports.matrix import METRICS
    from reports.matrix_render import matrix_cells, unreadable_text

    for c in matrix_cells(summary):
        if (c.condition, c.predictor, c.target) == (condition, predictor, target):
            lines = [f"{predictor} → {target} ({condition}), n = {c.n}"
                     + (" · self-prediction" if c.is_self else "")]
            if c.unreadable is not None:
                lines.append(unreadable_text(c) + (f" — not estimable: {c.unreadable_reason}"
                                                   if c.unreadable_reason else ""))
            for m in METRICS:
                f = c.figure(m)
                text = MISSING if f.value is None else f"{f.value:.3f}"
                if f.lo is not None and f.hi is not None:
                    text += f" [{f.lo:.3f}, {f.hi:.3f}]"
                if f.reason:
                    text += f" ({f.reason})"
                lines.append(f"{m}: {text}")
            lines.append(f"base: {c.base_kind or MISSING} · p (Holm) "
                         f"{MISSING if c.p_holm is None else format(c.p_holm, '.3g')}")
            return tuple(lines)
    return (f"{predictor} → {target} ({condition}): no cell",)
