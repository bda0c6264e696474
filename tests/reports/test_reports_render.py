"""Renderings (Markdown, HTML, JSON, CSV) and comparing two runs."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reports import (
    compare,
    render_compare_markdown,
    render_csv,
    render_html,
    render_json,
    render_markdown,
    report,
)
from reports._data import load_run
from reports._plots import FIGURES
from reports.model import RunProfile
from reports.render import render_headline_csv
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run


def test_markdown_has_tables_notices_first_and_figure_files(
    stored_profile: RunProfile, tmp_path: Path
) -> None:
    md = render_markdown(stored_profile, figures_dir=tmp_path / "f", figures_link_prefix="f/")
    assert md.startswith("# mindledger profile — run `run-a`")
    assert "| agent | role | valid | D50" in md
    section = md[md.index("## not-reality (reference)"):]
    first_content = next(line for line in section.splitlines()[1:] if line.strip())
    assert first_content.startswith("> **INVALID")  # says so first
    for key in ("headline", "depth_curves", "error_types", "reliability",
                "forest-piper-minus-control", "forest-piper-ablation-perspective-filtering"):
        assert f"](f/{key}.svg)" in md
        ET.parse(tmp_path / "f" / f"{key}.svg")  # well-formed
    # each forest plot sits in its own contrast block, before that block's table
    block = md[md.index("### Base-model subtraction"):md.index("### Ablation credit")]
    assert block.index("](f/forest-piper-minus-control.svg)") < block.index("| metric |")
    assert "### Base-model subtraction: piper − piper-control" in md
    assert "### Ablation credit: perspective-filtering" in md
    assert "p (Holm)" in md and "W = Wilson" in md
    bare = render_markdown(stored_profile)
    assert "Figures: not included" in bare


def test_html_is_one_self_contained_file_with_plots(stored_profile: RunProfile) -> None:
    html = render_html(stored_profile)
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//|file:)""", html)
    assert "<img" not in html and "data:image" not in html
    figures = re.findall(r"<figure id='fig-([a-z_]+)'><svg ", html)
    assert figures == ["headline", "depth_curves", "error_types", "reliability"]
    for svg in re.findall(r"<svg .*?</svg>", html, flags=re.S):
        ET.fromstring(svg)  # every inline figure is well-formed
    assert html.index("INVALID") < html.index("<h2>piper (agent)</h2>")


def test_html_draws_each_contrast_block_as_a_forest_plot_over_its_collapsed_table(
    stored_profile: RunProfile,
) -> None:
    html = render_html(stored_profile, figures=[])
    section = html[html.index("<h2>piper (agent)</h2>"):html.index("<h2>piper-control")]
    blocks = re.split(r"(?=<h3>)", section)
    minus = next(b for b in blocks if b.startswith("<h3>Base-model subtraction"))
    ablations = [b for b in blocks if b.startswith("<h3>Ablation credit")]
    assert len(ablations) == 2
    for block, fig_id in ((minus, "forest-piper-minus-control"),
                          (ablations[0], "forest-piper-ablation-perspective-filtering"),
                          (ablations[1], "forest-piper-ablation-witness-log")):
        svg = ET.fromstring(re.search(r"<svg .*?</svg>", block, flags=re.S).group(0))
        assert svg.get("id") == fig_id
        # the plot comes first; the long table only collapsed under it
        assert block.index("<svg ") < block.index("<details>") < block.index("<table>")
        assert block.count("<table>") == 1 and "</table></details>" in block
    # the agents that have no contrasts get no forest plot
    rest = html[html.index("<h2>piper-control"):]
    assert "class=\"forest\"" not in rest
    # a note on the contrast (the Markdown's quote) is a box above the plot, not dropped
    noted = stored_profile.to_json()
    noted["agents"]["piper"]["minus_control"]["note"] = "the control is <the same> program"
    html = render_html(RunProfile.of(noted), figures=[])
    block = html[html.index("<h3>Base-model subtraction"):]
    assert block.index("<div class='info'>the control is &lt;the same&gt; program</div>") < \
        block.index("<svg ")


def test_json_is_strict_and_round_trips(stored_profile: RunProfile) -> None:
    text = render_json(stored_profile)
    loaded = json.loads(text)
    # the profile, whole, and the verdict every rendering opens with beside it
    assert loaded.pop("verdict")["agents"][0]["agent"] == "piper"
    assert loaded == stored_profile.to_json()
    assert "NaN" not in text and "Infinity" not in text


def test_csv_has_one_row_per_trial(stored_run: Any) -> None:
    data = load_run(stored_run.store, stored_run.run_id)
    rows = list(csv.DictReader(io.StringIO(render_csv(data))))
    assert len(rows) == len(stored_run.run.trials)
    errors = [r for r in rows if r["status"] == "api_error"]
    assert errors and all(r["correct"] == "" and r["error"] for r in errors)
    ok = [r for r in rows if r["family"] == "nesttom" and r["status"] == "ok"]
    assert {r["depth"] for r in ok} >= {"R0", "R1", "R5", "R2-self"}
    assert all(r["correct"] in ("0", "1") for r in ok)
    assert json.loads(ok[0]["score_json"])["details"] is not None
    assert report(stored_run.store, stored_run.run_id, "csv") == render_csv(data)


def test_figures_skip_what_the_run_cannot_show(stored_profile: RunProfile) -> None:
    prof = RunProfile.of(stored_profile.to_json() | {"agents": {}})
    assert [draw(prof) for _, _, draw in FIGURES] == [None] * len(FIGURES)


def test_the_renderings_read_the_typed_profile_not_its_json(
    stored_profile: RunProfile, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Markdown (with its figures), HTML and the headline CSV are drawn from the profile's
    models: none of them goes through its JSON (only render_json does)."""
    expected = (render_markdown(stored_profile, figures_dir=tmp_path / "a"),
                render_html(stored_profile), render_headline_csv(stored_profile))

    def no_json(self: RunProfile) -> dict[str, Any]:
        raise AssertionError("a renderer read the profile's JSON")

    monkeypatch.setattr(RunProfile, "to_json", no_json)
    assert (render_markdown(stored_profile, figures_dir=tmp_path / "b"),
            render_html(stored_profile), render_headline_csv(stored_profile)) == expected


def test_compare_shows_what_changed_with_intervals(tmp_path: Path) -> None:
    from ledger.db import open_engine
    from ledger.store import Store

    store = Store(open_engine(f"sqlite:///{tmp_path / 'c.db'}"))
    before = logistic_accuracy(1.5, -1.2, 0.25)
    after = logistic_accuracy(3.0, -1.2, 0.25)
    for run_id, f, seed in (("old", before, 1), ("new", after, 2)):
        run = synthetic_run(np.random.default_rng(seed),
                            [SyntheticAgent("piper", f, confidence_noise=None)],
                            stories=25, behaviour_every=0)
        run.write(store, run_id)
    cmp = compare(store, "old", "new", n_boot=500)
    m = cmp.agents["piper"].metrics
    fb, d50, tb = m["false_belief_accuracy"], m["d50"], m["true_belief_control_accuracy"]
    assert fb.difference > 0 and fb.ci[0] > 0 and fb.p_holm < 0.05
    assert d50.difference > 0 and d50.ci[0] > 0
    assert tb.ci[0] < 0 < tb.ci[1] or tb.difference == 0
    md = render_compare_markdown(cmp)
    assert "# mindledger compare — `old` → `new`" in md
    # worded as the profile: the title, each run's figure with its interval and n, the change
    # and what its interval shows (a clear change also survives Holm across the table)
    row = next(line for line in md.splitlines() if line.startswith("| false-belief accuracy |"))
    cells = [c.strip() for c in row.strip().strip("|").split(" | ")]
    assert re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\] n=175", cells[1]), cells
    assert cells[3].startswith("+") and " pts [+" in cells[3]
    assert cells[4] == "clearly higher" == fb.verdict
    assert tb.verdict in ("no detectable change", "not estimable")
    assert not re.search(r"[a-z]+_[a-z]", md) and "True" not in md and "False" not in md
    json.dumps(cmp.to_json(), allow_nan=False)
    with pytest.raises(Exception, match="no run with id"):
        compare(store, "old", "missing")


def test_html_agent_sections_render_real_tables(stored_profile: RunProfile) -> None:
    """Each agent's tables become HTML tables with one row per line, not one mangled header."""
    html = render_html(stored_profile)
    section = html[html.index("<h2>piper (agent)</h2>"):]
    assert "|---" not in section and "| --- |" not in section
    assert re.search(r"<td>R0</td>", section)  # the accuracy-by-depth table has a row per depth
    assert section.count("<tr>") > 10
