"""The A − B and B − C contrasts in the renderings and the Holm family; S in ``--compare``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ledger.scoring import Metric
from reports._stats import holm
from reports.comparison import compare_runs, render_compare_markdown
from reports.matrix_cells import CellFigure, CellRow, SkillFigure
from reports.matrix_model import ConditionSummary, MatrixSummary, StoredRun
from reports.matrix_unreadable import Unreadable
from reports.profile import Analysis, analyse
from reports.render import render_html, render_markdown
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run

N_BOOT = 200


def _data() -> Any:
    full = logistic_accuracy(2.5, -1.2, 0.25)
    agents = [
        SyntheticAgent("piper", full, confidence_noise=None),
        SyntheticAgent("piper-control", logistic_accuracy(1.5, -1.2, 0.25), role="control",
                       base_agent="piper", abc_accuracy=0.4, confidence_noise=None),
    ]
    run = synthetic_run(np.random.default_rng(7), agents, stories=4, games=1,
                        abc_scenarios=24, items_per_game_cell=1)
    return run.run_data("abc-run")


def _matrix(value: float) -> MatrixSummary:
    """A matrix summary (as :func:`reports.matrix_summary.stored_summary` returns it) in which
    piper predicted a fresh copy of itself: S = ``value`` ± 0.2 over 40 items."""
    none = Metric(None, 0)
    skill = SkillFigure(
        value=value, n=40, reason=None, reason_slot=None, base=None, population_baseline=none,
        projection_baseline=none, ceiling=none, lo=value - 0.2, hi=value + 0.2,
        interval="hierarchical-bootstrap-95", status="estimated", base_kind=None, test=None,
        p=None, denominator=None, p_holm=0.01,
    )
    fig = CellFigure(None, 40, None, None, None, "not_estimable", None, False)
    cell = CellRow("piper", "piper", 40, 0, fig, fig, fig, none, skill, 0, 0, 0, 0,
                   Unreadable(0, 40, 0, 40))
    primary = ConditionSummary(["piper"], 40, 1, [cell], {}, {}, [])
    return MatrixSummary(primary, "zero-shot", ("zero-shot",), {},
                         stored=StoredRun("matrix-1", 0, False, "complete", None, 0))


@pytest.fixture(scope="module")
def measured() -> Analysis:
    return analyse(_data(), seed=3, n_boot=N_BOOT, matrix=_matrix(0.5))


@pytest.fixture(scope="module")
def unmeasured() -> Analysis:
    return analyse(_data(), seed=4, n_boot=N_BOOT)


def test_abc_contrasts_are_a_holm_family_of_their_own(measured: Analysis) -> None:
    """Within-agent A − B and B − C effects are adjusted among themselves and never enter the
    between-agent family (a real dissociation must not count against comparing two agents)."""
    profile = measured.profile.to_json()
    assert all(c["kind"] != "abc" for c in profile["contrasts"])
    ps = [c["p"] for c in profile["contrasts"]]
    assert profile["multiple_comparisons"]["m"] == len(ps)
    assert any(c["kind"] == "minus_control" for c in profile["contrasts"])
    for c, ph in zip(profile["contrasts"], holm(ps), strict=True):
        assert c["p_holm"] == pytest.approx(ph)
    blocks = [
        profile["agents"][a]["games"]["abc"]["contrasts"][k]
        for a in ("piper", "piper-control") for k in ("A_minus_B", "B_minus_C")
    ]
    assert profile["multiple_comparisons"]["abc_m"] == len(blocks) == 4
    for b, ph in zip(blocks, holm([b["p"] for b in blocks]), strict=True):
        assert b["p_holm"] == pytest.approx(ph) and b["p_holm"] >= b["p"]
    assert "A − B and B − C" in profile["multiple_comparisons"]["family"]


def test_markdown_and_html_show_the_abc_contrasts_with_p_holm(measured: Analysis) -> None:
    profile = measured.profile.to_json()
    md = render_markdown(measured.profile)
    section = md[md.index("## piper (agent)"):md.index("## piper-control (control)")]
    assert "A/B/C contrasts" in section
    assert "| contrast | first | second | difference [95%] | n | p | p (Holm) |" in section
    block = profile["agents"]["piper"]["games"]["abc"]["contrasts"]["A_minus_B"]
    row = next(line for line in section.splitlines() if line.startswith("| A − B |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == str(block["n"])
    ph = block["p_holm"]
    assert cells[6] == ("<0.001" if ph < 0.001 else f"{ph:.3f}")
    assert " pts" in cells[3]
    html = render_html(measured.profile, figures=[])
    assert "<td>A − B</td>" in html and "<th>p (Holm)</th>" in html


def test_compare_shows_s_or_why_it_was_not_measured(
    measured: Analysis, unmeasured: Analysis
) -> None:
    cmp = compare_runs(measured, unmeasured)
    s = cmp.agents["piper"].metrics["agent_prediction_skill"]
    assert s.difference is None and s.p is None
    assert str(s.a).startswith("self 0.500 [0.300, 0.700] n=40")
    assert str(s.b).startswith("not measured: no matrix run accompanies this run")
    assert "S not measured in run b" in str(s.reason)
    md = render_compare_markdown(cmp)
    row = next(line for line in md.splitlines() if line.startswith("| skill S (self) |"))
    assert "self 0.500 [0.300, 0.700] n=40" in row
    assert "not measured: no matrix run accompanies" in row
    assert row.endswith("| — | not compared (S not measured in run B) | — |")
    # the control did not take part in the matrix: its reason, not a number, on both sides
    sc = cmp.agents["piper-control"].metrics["agent_prediction_skill"]
    assert str(sc.a).startswith("not measured: piper-control did not take part in matrix run")
    assert str(sc.b).startswith("not measured: no matrix run")


def test_compare_gives_the_change_in_s_when_both_runs_measure_it(measured: Analysis) -> None:
    other = analyse(_data(), seed=5, n_boot=N_BOOT, matrix=_matrix(0.7))
    cmp = compare_runs(measured, other)
    s = cmp.agents["piper"].metrics["agent_prediction_skill"]
    assert s.a == pytest.approx(0.5) and s.b == pytest.approx(0.7)
    assert s.difference == pytest.approx(0.2)
    assert s.interval == "mover-95" and s.p is None and s.note
    assert s.ci is not None
    lo, hi = s.ci
    assert lo < 0.2 < hi and math.isfinite(lo) and math.isfinite(hi)
    md = render_compare_markdown(cmp)
    row = next(line for line in md.splitlines() if line.startswith("| skill S (self) |"))
    cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
    assert cells[1].startswith("self 0.500 [0.300, 0.700] n=40")
    assert cells[2].startswith("self 0.700 [0.500, 0.900] n=40")
    assert cells[3] == f"+0.20 [{lo:+.2f}, {hi:+.2f}]"
    assert cells[4] == s.verdict == ("no detectable change" if lo <= 0 else "clearly higher")
