"""The self-forecast section in every rendering (Markdown, HTML, CSV, JSON) and in the history
(``mindledger history`` text and HTML): what each shows, and that a profile without forecasts
shows nothing of it."""

from __future__ import annotations

import copy
import csv
import io
import json
from typing import Any

import numpy as np
import pytest

from ledger.forecasts import ForecastState
from reports._html import render_html
from reports.history import history_of
from reports.history_render import render_history_html, render_history_text
from reports.model import RunProfile
from reports.profile import profile_from_data
from reports.render import render_json, render_markdown
from reports.self_forecast import forecast_line, with_self_forecasts
from reports.self_forecast_render import (
    CSV_COLUMNS,
    WRONG,
    band_text,
    mark,
    render_self_forecast_csv,
    self_forecast_markdown,
    self_forecast_text,
)
from reports.simulation import study_agents
from reports.synthetic import simulate, suite_design
from tests.reports.forecast_states import q, runs, state


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    data = simulate(np.random.default_rng(3), study_agents()[:1], suite_design("quick"))
    return profile_from_data(data, n_boot=100).to_json()


def _forecasts(run_id: str) -> list[ForecastState]:
    order = [*runs(5), run_id]
    fs = [state(r, "d50", q(2.5, 0.4), 2.6, seq=i) for i, r in enumerate(order)]
    fs.append(state(order[1], "false_belief_accuracy", q(0.9, 0.04), 0.55, seq=20))  # wrong
    fs.append(
        state(
            run_id,
            "S",
            q(0.2, 0.1),
            None,
            status="void",
            seq=21,
            note="no matrix run accompanies this run",
        )
    )
    fs.append(state(run_id, "leakage_resistance", q(0.8, 0.1), 0.2, seq=22))  # wrong, now
    return fs


@pytest.fixture(scope="module")
def profile(template: dict[str, Any]) -> RunProfile:
    p = RunProfile.of(template)
    return with_self_forecasts(
        p, {"agent": _forecasts(p.run.id)}, runs_by_agent={"agent": [*runs(5), p.run.id]}
    )


def test_markdown_shows_counts_skill_coverage_bias_and_names_the_wrong(
    profile: RunProfile,
) -> None:
    md = render_markdown(profile)
    assert md.count("### Self-forecasts") == 1
    section = md.split("### Self-forecasts", 1)[1].split("API errors", 1)[0]
    assert "9 forecasts of 6 runs up to this one: 8 scored, 1 void" in section
    sk = profile.agents["agent"].self_forecast.skill["quantile_score"]  # type: ignore[union-attr]
    assert f"{sk.value:+.2f}" in section and "run bootstrap" in section
    assert "| 90% interval | 90% |" in section and "| 50% interval | 50% |" in section
    assert "outcomes below the forecast's median" in section
    assert "Confidently wrong (outcome outside the 90% interval): 2." in section
    assert "| run-01 | `false_belief_accuracy` |" in section
    assert "void: no matrix run accompanies this run" in section
    assert WRONG in section  # the run's own wrong forecast, in its table


def test_a_profile_without_forecasts_says_nothing_of_them(template: dict[str, Any]) -> None:
    p = RunProfile.of(template)
    assert "Self-forecast" not in render_markdown(p)
    assert "Self-forecast" not in render_html(p, figures=())
    assert self_forecast_markdown(None) == [] and self_forecast_text(None) == []
    assert render_self_forecast_csv(p) == ",".join(CSV_COLUMNS) + "\n"
    assert "self_forecast" not in json.loads(render_json(p))["agents"]["agent"]


def test_html_has_the_section_as_tables(profile: RunProfile) -> None:
    page = render_html(profile, figures=())
    assert "<h3>Self-forecasts</h3>" in page
    after = page.split("<h3>Self-forecasts</h3>", 1)[1]
    assert "<th>coverage</th>" in after and "<td>run-01</td>" in after
    assert "false_belief_accuracy" in after


def test_json_carries_the_section(profile: RunProfile) -> None:
    doc = json.loads(render_json(profile))
    sf = doc["agents"]["agent"]["self_forecast"]
    assert sf["counts"] == {"committed": 9, "scored": 8, "void": 1, "rejected": 0, "unrevealed": 0}
    assert [x["figure"] for x in sf["confidently_wrong"]] == [
        "false_belief_accuracy",
        "leakage_resistance",
    ]
    assert (
        RunProfile.of({k: v for k, v in doc.items() if k != "verdict"}).to_json()
        == profile.to_json()
    )


def test_csv_has_a_row_per_forecast_of_the_run_and_each_earlier_wrong_one(
    profile: RunProfile,
) -> None:
    rows = list(csv.DictReader(io.StringIO(render_self_forecast_csv(profile))))
    this_run = [r for r in rows if r["this_run"] == "1"]
    assert [r["figure"] for r in this_run] == ["d50", "S", "leakage_resistance"]
    earlier = [r for r in rows if r["this_run"] == "0"]
    assert [(r["forecast_run"], r["figure"], r["confidently_wrong"]) for r in earlier] == [
        ("run-01", "false_belief_accuracy", "1")
    ]
    d50 = this_run[0]
    assert (float(d50["median"]), float(d50["lo90"]), float(d50["hi90"])) == pytest.approx(
        (2.5, 2.1, 2.9)
    )
    assert d50["in_90"] == "1" and d50["outcome"] == "2.6" and d50["rule"] == "quantile_score"
    assert this_run[1]["status"] == "void" and this_run[1]["median"] == "0.2"
    assert this_run[1]["outcome"] == "" and this_run[1]["note"].startswith("no matrix run")


def test_marks_and_bands() -> None:
    wrong = forecast_line(state("r", "d50", q(2.5, 0.4), 3.5))
    assert mark(wrong).startswith(WRONG) and "vs naive" in mark(wrong)
    assert band_text(wrong) == "50% [2.37, 2.63] · 90% [2.1, 2.9]"
    assert mark(forecast_line(state("r", "d50", None, None, status="committed"))) == "not revealed"
    rejected = forecast_line(state("r", "d50", q(2.5, 0.4), None, status="rejected"))
    assert mark(rejected).startswith("rejected") and band_text(rejected) == "—"


def test_dashboard_lines(profile: RunProfile) -> None:
    lines = self_forecast_text(profile.agents["agent"].self_forecast)
    assert lines[0].startswith("Self-forecasts") and "9 forecasts of 6 runs" in lines[0]
    assert any("90% coverage" in x for x in lines)
    assert any(x.strip().startswith("leakage_resistance:") and WRONG in x for x in lines)
    assert lines[-1].endswith("false_belief_accuracy on run-01")


# -- history --------------------------------------------------------------------------------


def _history_profiles(template: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for i, r in enumerate(runs(4)):
        p = copy.deepcopy(template)
        p["run"].update(id=r, suite="quick", created_at=f"2026-11-{i + 1:02d}T03:00:00+00:00")
        out.append(p)
    return out


def test_history_shows_each_band_beside_the_outcome_and_marks_the_wrong(
    template: dict[str, Any],
) -> None:
    lines = [
        forecast_line(s)
        for s in (
            state("run-00", "d50", q(2.5, 0.4), 2.6),
            state("run-02", "d50", q(2.5, 0.4), 3.4, seq=2),
            state("run-01", "d50", q(2.5, 0.4), 2.4, seq=1),
            state("elsewhere", "d50", q(2.5, 0.4), 2.4, seq=3),  # not a run of the history
        )
    ]
    h = history_of("agent", _history_profiles(template), forecasts=lines)
    assert [f.run for f in h.forecasts] == ["run-00", "run-01", "run-02"]
    assert [f.run for f in h.confidently_wrong()] == ["run-02"]
    d = h.to_dict()
    assert [f["run"] for f in d["forecasts"]] == ["run-00", "run-01", "run-02"]
    assert d["forecasts"][2]["confidently_wrong"] is True
    assert [f.run for f in h.since("2026-11-02").forecasts] == ["run-01", "run-02"]
    text = render_history_text(h)
    assert "Self-forecasts: 3 of 3 runs, 1 confidently wrong" in text
    block = text.split("forecast of d50", 1)[1]
    row = next(x for x in block.splitlines() if x.startswith("run-02"))
    assert "50% [2.37, 2.63] · 90% [2.1, 2.9]" in row and "3.4" in row and WRONG in row
    ok = next(x for x in block.splitlines() if x.startswith("run-01"))
    assert WRONG not in ok
    page = render_history_html(h)
    assert "<h2 id='self-forecasts'>Self-forecasts</h2>" in page
    assert "<tr class='flagged'><td>run-02</td>" in page
    # no forecasts: nothing about them
    plain = history_of("agent", _history_profiles(template))
    assert "Self-forecast" not in render_history_text(plain)
    assert "Self-forecast" not in render_history_html(plain)
    assert plain.to_dict()["forecasts"] == []
