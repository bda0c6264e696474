"""The view-model, with plain pytest: formatting, ordering, and what is shown when a figure is
not estimable or a profile is invalid."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from ledger.chain import Failure, Verification
from ledger.protocol import PredictionState
from reports import profile_from_data
from reports.model import RunProfile
from reports.synthetic import synthetic_run
from tui.state import (
    INVALID,
    MISSING,
    NOT_ESTIMABLE,
    AgentCount,
    RunSummary,
    accuracy_cell,
    agent_views,
    fmt_d50,
    fmt_difference,
    fmt_pct,
    fmt_proportion,
    fmt_time,
    prediction_rows,
    run_header,
    run_rows,
    state_counts,
    verify_view,
)

from .conftest import synthetic_agents


@pytest.fixture(scope="module")
def profile() -> RunProfile:
    run = synthetic_run(np.random.default_rng(7), synthetic_agents(), stories=4, games=0)
    return profile_from_data(run.run_data("run-a"), seed=1, n_boot=200)


def test_percentages_and_missing_values() -> None:
    assert fmt_pct(0.5961) == "59.6%"
    assert fmt_pct(1) == "100.0%"
    assert fmt_pct(0.25, 0) == "25%"
    for nothing in (None, float("nan"), float("inf"), "x", True):
        assert fmt_pct(nothing) == MISSING
    assert fmt_time("2026-03-01T12:00:05.123456+00:00") == "2026-03-01 12:00:05"
    assert fmt_time(None) == MISSING


def test_a_proportion_shows_value_interval_and_n_or_why_not() -> None:
    block = {"value": 0.596, "ci": [0.4607, 0.7184], "n": 52}
    assert fmt_proportion(block) == "59.6% [46.1, 71.8] n=52"
    assert fmt_proportion(block, with_ci=False) == "59.6% n=52"
    assert fmt_proportion({"value": 0.5, "ci": [None, 0.7], "n": 4}) == "50.0% [?, 70.0] n=4"
    missing = {"value": None, "n": 0, "reason": "no scored false-belief NestToM items"}
    assert fmt_proportion(missing) == f"{NOT_ESTIMABLE} (no scored false-belief NestToM items)"
    assert fmt_proportion(None) == NOT_ESTIMABLE


@pytest.mark.parametrize(
    ("d50", "expected"),
    [
        ({"status": "estimated", "value": 2.88, "display": "2.88 [2.3, 3.42]", "n": 52},
         "2.88 [2.3, 3.42] n=52"),
        ({"status": "beyond", "value": None, "display": "> 5 (beyond the deepest level tested)",
          "lower_bound": 5.0, "n": 56}, "> 5 (beyond the deepest level tested) n=56"),
        ({"status": "bracketed", "value": None, "display": "between 2 and 3", "n": 56},
         "between 2 and 3 n=56"),
        ({"status": "not_estimable", "value": None, "display": None, "n": 0,
          "reason": "no false-belief items"}, f"{NOT_ESTIMABLE} (no false-belief items)"),
        ({"status": "estimated", "value": 1.5, "n": 9}, "1.50 n=9"),
        (None, NOT_ESTIMABLE),
    ],
)  # fmt: skip
def test_d50_in_each_status(d50: dict[str, Any] | None, expected: str) -> None:
    assert fmt_d50(d50) == expected


def test_differences_in_points_or_units_with_holm_p() -> None:
    prop = {"difference": 0.25, "ci": [0.1346, 0.3519], "n": 52, "p_holm": 0.00263}
    assert fmt_difference(prop) == "+25.0 pts [+13.5, +35.2] n=52 p_holm=0.00263"
    d50 = {"difference": -1.1425, "ci": [-1.8, None], "n": 52}
    assert fmt_difference(d50, proportion=False) == "-1.14 [-1.80, ?] n=52"
    note = {"difference": None, "note": "D50 not estimable for the control", "n": 3}
    assert fmt_difference(note) == f"{NOT_ESTIMABLE} (D50 not estimable for the control)"
    assert fmt_difference({"available": False, "reason": "no games"}) == (
        f"{NOT_ESTIMABLE} (no games)"
    )


def test_runs_newest_first_with_accuracy_per_agent_agents_under_test_first() -> None:
    old = RunSummary("r-old", "quick", 1, True, "complete", "2026-01-01T00:00:00+00:00", (
        AgentCount("oracle", "reference", ok=10, correct=10),
        AgentCount("piper", "agent", ok=8, api_error=2, correct=6),
        AgentCount("piper-control", "control", ok=0, api_error=1),
    ))  # fmt: skip
    new = RunSummary("r-new", "nightly", 2, False, "running", "2026-02-01T00:00:00+00:00")
    rows = run_rows([old, new], "2026-02-01T00:05:00+00:00")
    assert [r.key for r in rows] == ["r-new", "r-old"]
    assert rows[0].cells == (
        "r-new", "nightly", "2", "dev", "running", "2026-02-01 00:00:00", "0", "0", MISSING,
    )  # fmt: skip
    # a run marked running that has stored no trial for ten minutes says so (its process may
    # have been killed): since its last trial, or since it was created; a finished one never
    stalled = replace(new, last_trial_at="2026-02-01T00:05:30+00:00")
    assert run_rows([stalled], "2026-02-01T02:20:00+00:00")[0].cells[4] == "running · idle 2h14m"
    assert run_rows([stalled], "2026-02-01T00:12:00+00:00")[0].cells[4] == "running"
    assert run_rows([new], "2026-02-01T00:10:00+00:00")[0].cells[4] == "running · idle 10m00s"
    assert run_rows([old], "2026-03-01T00:00:00+00:00")[0].cells[4] == "complete"
    # a finished run with an agent over the failure limit says so (`mindledger run` exited 3)
    failed = replace(old, over_limit=1)
    assert run_rows([failed], "2026-03-01T00:00:00+00:00")[0].cells[4] == "FAILED"
    assert run_rows([replace(new, over_limit=1)])[0].cells[4].startswith("running")
    cells = rows[1].cells
    assert cells[3] == "held-out" and cells[6] == "3" and cells[7] == "21"
    # API errors are excluded from accuracy; an agent with no answered trial shows MISSING
    assert cells[8] == f"piper 75% · piper-control {MISSING} · oracle 100%"
    assert accuracy_cell([]) == MISSING


def test_agent_views_put_validity_first_and_withhold_invalid_false_belief_figures(
    profile: RunProfile,
) -> None:
    views = agent_views(profile)
    assert [(v.name, v.role) for v in views] == [
        ("piper", "agent"),
        ("piper-control", "control"),
        ("piper-no-perspective", "ablation"),
        ("not-reality", "reference"),
    ]
    piper, _, _, bad = views
    assert piper.valid and piper.validity.startswith("VALID: true-belief control accuracy")
    assert piper.summary[0] == "yes" and piper.summary[1] == "piper"
    assert " n=" in piper.d50 and "not counted" not in piper.d50

    assert not bad.valid
    assert bad.validity.startswith("INVALID: not-reality's true-belief control accuracy")
    assert bad.summary[0] == f"✗ {INVALID}"
    # D50, leakage resistance and false-belief accuracy: withheld in the summary row ...
    assert bad.summary[3] == bad.summary[4] == bad.summary[6] == INVALID
    # ... shown in the detail only marked as not counted; true-belief accuracy stays
    assert bad.d50.startswith("INVALID (not counted: ")
    assert bad.false_belief.startswith("INVALID (not counted: ")
    assert bad.summary[5].endswith(f"n={profile.agents['not-reality'].validity.n}")
    assert all(r.false_belief.startswith("INVALID (not counted")
               for r in bad.depth_rows if r.depth != "R0")
    assert bad.validity not in bad.notices


def test_depth_table_is_ordered_by_depth_with_no_false_belief_at_r0(
    profile: RunProfile,
) -> None:
    rows = agent_views(profile)[0].depth_rows
    assert rows[0].depth == "R0" and rows[0].false_belief == MISSING
    # R0 is the reality check (its own figure, outside the false-belief ones); 4 items are too
    # few for an interval
    assert "n=4" in rows[0].true_belief and rows[0].true_belief.endswith("(reality check)")
    assert "no interval" in rows[0].true_belief
    depths = [r.depth for r in rows]
    assert depths.index("R1") < depths.index("R2") < depths.index("R3") < depths.index("R5")
    cell = profile.to_json()["agents"]["piper"]["accuracy_by_depth"]["false"]["R1"]
    r1 = rows[depths.index("R1")]
    assert r1.false_belief == fmt_proportion(cell)


def test_contrasts_give_agent_minus_control_and_ablation_credit(
    profile: RunProfile,
) -> None:
    piper, control, _, _ = agent_views(profile)
    kinds = {c.contrast for c in piper.contrasts}
    assert kinds == {"agent − control", "credit: perspective-filtering"}
    fba = [c for c in piper.contrasts if c.metric == "false-belief accuracy"]
    mc = profile.to_json()["agents"]["piper"]["minus_control"]["metrics"]["false_belief_accuracy"]
    assert fba[0].contrast == "agent − control" and fba[0].value == fmt_difference(mc)
    assert any(c.metric == "false-belief R2" for c in piper.contrasts)
    # games were not run: their contrasts are left out, not shown as zeros
    assert not any(c.metric == "games accuracy" for c in piper.contrasts)
    assert control.contrasts[0].value.startswith("not available (piper-control is a control")


def test_run_header_says_which_seeds(profile: RunProfile) -> None:
    header = run_header(profile)
    assert header.title == "Run run-a · suite synthetic · seed 0"
    assert "development seeds" in header.detail
    # the verdict says each agent's validity once; the profile's INVALID notices are not
    # repeated above it (the agent's detail says why in full)
    assert not any(n.startswith("INVALID") for n in header.notices)
    assert header.verdict[0].startswith("piper (agent under test) is ")
    assert "  not-reality: diagnosed as expected (marked INVALID by the controls)" \
        in header.verdict  # fmt: skip
    assert len(header.invalid) == len(header.verdict)


def test_run_header_reads_failed_for_a_complete_run_over_the_failure_limit(
    profile: RunProfile,
) -> None:
    header = run_header(profile)
    assert header.status == "complete" and header.detail.startswith("complete · ")
    assert header.detail_line() == header.detail
    failed = header.detail_line(["piper", "piper-control"])
    assert failed == "FAILED (piper, piper-control over the failure limit)" + header.detail[8:]
    running = replace(header, status="running", detail="running · 3 items")
    assert running.detail_line(["piper"]) == "running · 3 items"  # not judged before it ends


def _state(pid: str, seq: int, state: str, **kw: Any) -> PredictionState:
    return PredictionState(
        id=pid, predictor="piper", target="dusk", query=kw.pop("query", "q"), item=None,
        condition=None, commitment="sha256:00", deadline=kw.pop("deadline",
        "2026-03-01T13:00:00+00:00"), committed_at="2026-03-01T12:00:00+00:00",
        commit_seq=seq, agent_signed=False, commit={}, state=state, **kw,
    )  # fmt: skip


def test_prediction_rows_newest_first_in_their_state_now() -> None:
    states = [
        _state("p1", 2, "scored", observed=["7"], scores={"top1_match": 1.0, "log_score": -0.51}),
        _state("p2", 5, "committed", deadline="2026-03-01T12:30:00+00:00"),
        _state("p3", 9, "observed", observed=["a", "b"], query="a very long question " * 5),
    ]
    rows = prediction_rows(states, now="2026-03-01T12:45:00+00:00")
    assert [r.key for r in rows] == ["p3", "p2", "p1"]
    assert rows[0].cells[5] == "a, b" and rows[0].cells[3].endswith("…")
    assert len(rows[0].cells[3]) == 40
    assert rows[1].state == "expired"  # open past its deadline
    assert rows[2].cells[4:8] == ("scored", "7", "1.00", "-0.510")
    assert rows[1].cells[6:8] == (MISSING, MISSING)
    assert state_counts(rows) == "1 observed · 1 scored · 1 expired"
    assert state_counts([]) == "no predictions"


def test_verify_view_intact_or_first_bad_entry() -> None:
    ok = verify_view(Verification([], entries=12, head_seq=12, head_hash="sha256:" + "ab" * 32))
    assert ok.ok and ok.headline == "Ledger intact: 12 entries, head 12 sha256:abababababab…"
    assert verify_view(Verification([])).headline == "Ledger intact: 0 entries, empty ledger"
    bad = verify_view(
        Verification(
            [
                Failure(5, "hash-mismatch", "the stored hash is not the entry's"),
                Failure(5, "bad-signature", "not signed by the service"),
                Failure(9, "broken-link", "prev_hash does not match"),
            ]
        )
    )
    assert not bad.ok and bad.headline == "LEDGER BROKEN at entry 5: hash mismatch"
    assert len(bad.details) == 2 and all(d.startswith("entry 5") for d in bad.details)


def test_calls_lines_say_calls_predictions_refusals_and_obligations() -> None:
    from tui.state import calls_lines

    calls = {
        "piper": {
            "calls": 12,
            "predicted": 3,
            "unpredicted": 9,
            "refused": 4,
            "refusals": {"obligation": 1, "sampled": 3},
            "open_obligations": ["dusk"],
        },
        "wren": {
            "calls": 1,
            "predicted": 0,
            "unpredicted": 1,
            "refused": 0,
            "refusals": {},
            "open_obligations": [],
        },
    }
    assert calls_lines(calls) == (
        "piper: 12 calls, 3 with a prediction, 4 refused (obligation 1, sampled 3); owes a "
        "prediction to dusk",
        "wren: 1 calls, 0 with a prediction, 0 refused",
    )
    assert calls_lines({}) == ("no calls through the proxy",)


def test_fitted_columns_leave_out_the_listed_ones_in_order_until_they_fit() -> None:
    from tui.state import fitted_columns

    columns, widths = ["a", "b", "c", "d"], [10, 10, 10, 10]
    assert fitted_columns(columns, widths, 48, left_out=["c", "a"]) == columns  # 4 × 12
    assert fitted_columns(columns, widths, 47, left_out=["c", "a"]) == ["a", "b", "d"]
    assert fitted_columns(columns, widths, 35, left_out=["c", "a"]) == ["b", "d"]
    assert fitted_columns(columns, widths, 5, left_out=["c", "a"]) == ["b", "d"]  # no more
