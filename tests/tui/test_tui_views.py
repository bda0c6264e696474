"""The new view-models, pure: the run table's cut cells, two runs compared, the schedule, the
queue and an agent's history as text."""

from __future__ import annotations

from typing import Any

from reports.comparison import Comparison
from reports.history import agent_history
from tui.comparison import CHANGE_WIDTH, VERDICT_WIDTH, compare_view
from tui.history_view import SPARK_BLOCKS, history_view, sparkline
from tui.operations import (
    QueueBatch,
    QueueSnapshot,
    ScheduledJob,
    ScheduleSnapshot,
    queue_view,
    schedule_view,
    until_text,
)
from tui.state import (
    AGENT_COLUMNS,
    NOTE_MARK,
    SUMMARY_CELL_WIDTH,
    AgentCount,
    RunSummary,
    agent_views,
)

from .conftest import N_BOOT, Seeded


def test_a_long_reason_leaves_the_cell_for_a_note(nightly: Seeded) -> None:
    views = {v.name: v for v in agent_views(nightly.source().profile("night-4"))}
    flat = views["flat"]
    d50 = flat.summary[AGENT_COLUMNS.index("D50")]
    assert d50 == f"not estimable{NOTE_MARK}"
    assert flat.notes == (f"flat D50: {flat.d50}",)
    assert flat.d50.startswith("not estimable (accuracy does not decline with depth")
    # every cell of every row fits, so the last column is on screen at 120 columns
    for v in views.values():
        assert all(len(c) <= 2 * SUMMARY_CELL_WIDTH for c in v.summary)
        assert all(len(c) <= SUMMARY_CELL_WIDTH for c in v.summary[3:7])
    assert views["piper"].notes == ()


def _change(title: str, a: str, b: str, change: str, verdict: str, **kw: Any) -> dict[str, Any]:
    """One figure as :func:`reports.comparison.compare_runs` words it."""
    return {"a": 0.55, "b": 0.14, "difference": -0.41, "n_a": 56, "n_b": 56, "ci": [-0.53, -0.25],
            "interval": "newcombe-95", "test": "Fisher exact", "p": 0.001, "p_holm": 0.004,
            "status": "estimated", "title": title, "a_text": a, "b_text": b,
            "a_compact": a.split(" [")[0], "b_compact": b.split(" [")[0],
            "change_text": change, "verdict": verdict, **kw}


def test_two_runs_compared() -> None:
    cmp = {
        "schema": "mindledger.compare/1", "title": "mindledger compare — n1 → n2",
        "run_a": {"id": "n1", "suite": "quick"}, "run_b": {"id": "n2", "suite": "quick"},
        "direction": "b − a", "interval": "how", "notes": ["one run used held-out seeds"],
        "only_in_a": [], "only_in_b": ["flat"],
        "agents": {"piper": {
            "role": ["agent", "agent"], "valid": [True, False],
            "validity": {"a": "valid", "b": "invalid", "text": "valid → invalid",
                         "why": ["run B: INVALID: piper's true-belief control accuracy is 20%"]},
            "spec_changes": {"model": ["m1", "m2"]}, "changes": ["model: m1 → m2"],
            "metrics": {
                "true_belief_control_accuracy": _change(
                    "true-belief control accuracy", "55.0% [48.1, 61.7] n=56",
                    "14.0% [9.1, 20.9] n=56", "-41.0 pts [-53.0, -25.0]", "clearly lower"),
                "accuracy_by_depth.true.R2": _change(
                    "accuracy at depth R2 (true belief)", "50.0% [30.1, 69.9] n=20",
                    "60.0% [38.7, 78.1] n=20", "+10.0 pts [-19.0, +37.0]",
                    "no detectable change"),
                "d50": {"a": "2.73", "b": "< 1 (below the shallowest level tested)",
                        "difference": None, "reason": "no point estimate in run b",
                        "title": "D50 (levels)", "a_text": "2.73 [2.1, 3.3] n=175",
                        "b_text": "INVALID (not counted: < 1 (below the shallowest level "
                        "tested) n=175)", "a_compact": "2.73", "b_compact": "INVALID",
                        "change_text": "—",
                        "verdict": "not compared (no point estimate in run B)"},
                "ece": _change("calibration error (ECE)", "0.080 n=9", "0.040 n=9",
                               "-0.04 (no interval: " + "x" * 60 + ")", "not estimable",
                               status="not_estimable", ci=None),
            },
        }},
    }  # fmt: skip
    view = compare_view(Comparison.of(cmp))
    assert view.title == "Compare n1 (A, suite quick) → n2 (B, suite quick)"
    assert view.notes[1:] == (
        "one run used held-out seeds", "Only in A: —; only in B: flat.",
        "piper: validity valid → invalid; run B: INVALID: piper's true-belief control accuracy "
        "is 20%", "piper: changed model: m1 → m2")  # fmt: skip
    tb, depth, d50, ece = view.rows
    assert tb.cells == ("piper", "true-belief control accuracy", "55.0%", "14.0%",
                        "-41.0 pts [-53.0, -25.0]", "clearly lower", "0.004")  # fmt: skip
    assert tb.direction == -1 and depth.direction == 0
    assert tb.detail == ("piper · true-belief control accuracy: A 55.0% [48.1, 61.7] n=56 → "
                         "B 14.0% [9.1, 20.9] n=56; change -41.0 pts [-53.0, -25.0] "
                         "(newcombe-95, Fisher exact), p 0.001, p (Holm) 0.004: clearly lower")
    assert depth.cells[0] == "" and depth.cells[1] == "accuracy at depth R2 (true belief)"
    assert d50.cells[2:4] == ("2.73", "INVALID") and d50.cells[4] == "—"
    assert len(d50.cells[5]) == VERDICT_WIDTH and d50.cells[5].endswith("…")
    assert d50.detail.endswith("tested) n=175): not compared (no point estimate in run B)")
    assert len(ece.cells[4]) == CHANGE_WIDTH and ece.cells[4].endswith("…")
    assert "x" * 60 in ece.detail  # the whole reason is on the detail line


def test_until_text() -> None:
    now = "2026-03-05T12:00:00+00:00"
    assert until_text(now, "2026-03-05T12:00:30+00:00") == "in 1 min"
    assert until_text(now, "2026-03-05T16:15:00+00:00") == "in 4 h 15 min"
    assert until_text(now, "2026-03-08T15:00:00+00:00") == "in 3 d 3 h"
    assert until_text(now, "2026-03-05T11:00:00+00:00") == "due"
    assert until_text(now, "soon") == "—"


def test_the_schedule_view_names_the_last_run_and_what_is_not_stored() -> None:
    last = RunSummary("n4", "quick", None, True, "failed", "2026-03-05T03:00:00+00:00",
                      (AgentCount("piper", "agent", ok=10, correct=6),))
    snap = ScheduleSnapshot("0 3 * * *", "2026-03-05T12:00:00+00:00", (
        ScheduledJob("nightly:piper", "n", "0 3 * * *", ("2026-03-06T03:00:00+00:00",),
                     stored=True, last_run=last),
        ScheduledJob("nightly:wren", "n", "0 3 * * *", ()),
    ))  # fmt: skip
    view = schedule_view(snap)
    assert view.rows[0] == ("nightly:piper", "0 3 * * *", "2026-03-06 03:00", "in 15 h 0 min",
                            "—", "n4 (2026-03-05 03:00)", "failed", "piper 60%")  # fmt: skip
    assert view.rows[1][2:] == ("—",) * 6
    assert view.last_runs == (("n4", "quick"), ("", ""))
    assert view.notes == ("Not stored by the daemon yet (computed from the schedule): "
                          "nightly:wren",)
    assert schedule_view(ScheduleSnapshot("0 3 * * *", "2026-03-05T12:00:00+00:00")).notes == (
        "No scheduled jobs: declare agents under [agents] in the configuration.",)


def test_the_queue_view_puts_stalled_batches_first() -> None:
    snap = QueueSnapshot(True, batches=(
        QueueBatch(1, "r", "a", 3, "todo"),
        QueueBatch(2, "r", "a", 3, "doing", 1, 5, 200.0, stalled=True),
        QueueBatch(3, "r", "a", 2, "aborted", 1),
    ), stalled_after=30)  # fmt: skip
    view = queue_view(snap)
    assert [r[0] for r in view.batch_rows] == ["2", "1", "3"]
    assert view.batch_states == ("stalled", "queued", "aborted")
    assert view.batch_rows[0][7] == "3 min ago"
    assert view.headline.startswith("1 queued · 0 running · 1 stalled · 1 failed · 0 of 0")
    off = queue_view(QueueSnapshot(False, "no queue: the database is SQLite"))
    assert off.headline == "no queue: the database is SQLite" and off.batch_rows == ()


def test_sparkline() -> None:
    assert sparkline([0.2, None, 0.6, 0.3]) == SPARK_BLOCKS[0] + "·" + SPARK_BLOCKS[-1] + SPARK_BLOCKS[2]
    assert sparkline([0.5, 0.5]) == SPARK_BLOCKS[3] * 2
    assert sparkline([None, None]) == "··"
    assert sparkline([]) == ""


def test_the_history_view_marks_the_regression(nightly: Seeded) -> None:
    history = agent_history(nightly.store, "piper", n_boot=N_BOOT, seed=1)
    view = history_view(history)
    assert view.title.startswith("History of piper · 5 runs (4 held-out) · ")
    lines = {line.key: line for line in view.lines}
    fb = lines["false_belief"]
    assert fb.flagged_at == (4,) and fb.cells[5] == "1: night-4"
    assert fb.held_out_at == (1, 2, 3, 4)
    assert [p[0] for p in fb.points] == ["night-4", "night-3", "night-2", "night-1", "run-a"]
    assert fb.point_flagged == (True, False, False, False, False)
    assert fb.points[0][7].startswith("REGRESSION: below the recent level")
    assert fb.points[-1][7].startswith("not tested: history too short")
    assert fb.cells[1][-1] == SPARK_BLOCKS[0]  # the lowest of the five
