"""The HTML report opens in headless Chromium and a screenshot shows the plots; the forest plots
of the contrasts are laid out (their boxes, read from the DOM Chromium dumps) and drawn where
the layout puts them.

Skipped only when Chromium is absent *and* CI is unset; under CI (``.ci/run`` installs Debian's
``chromium``) it must run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from reports import render_html
from reports._forest import forest_rows
from reports._svg import BLUE, VERMILLION
from reports.model import RunProfile
from reports.render import CONTRAST_LABELS

CHROMIUM = "/usr/bin/chromium"


def _chromium() -> str:
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing under CI: the HTML screenshot test must run")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)")


def _run_chromium(tmp_path: Path, args: list[str], page: Path) -> subprocess.CompletedProcess[str]:
    cmd = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        *args,
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)  # a loaded machine renders slowly


def test_html_report_screenshot_shows_the_plots(
    stored_profile: RunProfile, tmp_path: Path
) -> None:
    from matplotlib.image import imread

    page = tmp_path / "report.html"
    page.write_text(render_html(stored_profile), encoding="utf-8")
    shot = tmp_path / "report.png"
    proc = _run_chromium(tmp_path, [f"--screenshot={shot}", "--window-size=1200,2400"], page)
    assert shot.exists(), f"no screenshot; chromium said:\n{proc.stderr[-2000:]}"
    keep = os.environ.get("MINDLEDGER_SCREENSHOT_DIR")
    if keep:  # for a person to look at
        shutil.copy(shot, Path(keep) / "report-screenshot.png")
    assert shot.stat().st_size > 100_000
    img = imread(shot)
    assert img.shape[0] >= 2000 and img.shape[1] >= 1100
    rgb = np.rint(np.asarray(img[..., :3]) * 255).astype(np.int64).reshape(-1, 3)
    colours = np.unique(rgb, axis=0)
    assert len(colours) > 500, len(colours)  # plots, not a blank or text-only page
    # the page is not mostly one colour: the figures fill a good part of it
    _, counts = np.unique(rgb[:, 0] // 8 * 1024 + rgb[:, 1] // 8 * 32 + rgb[:, 2] // 8,
                               return_counts=True)
    assert counts.max() / counts.sum() < 0.9
    # plot colours are present: the blue of the agent's curve and the vermillion in which the
    # figures name an INVALID agent (the notices' red now sits in that agent's own section,
    # below the verdict and the figures)
    assert _near(rgb, _rgb(BLUE)) > 200
    assert _near(rgb, _rgb(VERMILLION)) > 50



FOLD = (1400, 900)
"""The window a reviewer opens the report in: the verdict must be on it without scrolling."""

LAYOUT_PROBE = (
    "<script>addEventListener('load', () => {"
    "const r = document.getElementById('verdict').getBoundingClientRect();"
    "const b = document.body.dataset;"
    "b.verdictTop = r.top; b.verdictBottom = r.bottom; b.viewportHeight = innerHeight;"
    "b.firstAgent = document.querySelector('#verdict p.agent').dataset.agent;"
    "})</script>"
)
"""Measures, once the page is laid out, where the verdict block is in the window."""


def _chromium_cmd(chromium: str, profile_dir: Path, *args: str) -> list[str]:
    return [
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--hide-scrollbars", "--disable-dev-shm-usage",
        f"--user-data-dir={profile_dir}", f"--window-size={FOLD[0]},{FOLD[1]}", *args,
    ]


def test_the_verdict_is_above_the_fold_at_1400_by_900(
    stored_profile: RunProfile, tmp_path: Path
) -> None:
    """Chromium lays the report out in a 1400×900 window: the verdict block starts near the
    top and ends inside the window, it leads with the agent under test, and the screenshot
    shows its valid agent's green mark in the first screen."""
    import re

    from matplotlib.image import imread

    chromium = _chromium()
    html = render_html(stored_profile)
    assert html.index("id='verdict'") < html.index("<h2>Headline</h2>")
    page = tmp_path / "report.html"
    page.write_text(html.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    proc = subprocess.run(
        _chromium_cmd(chromium, tmp_path / "dom-profile", "--dump-dom", page.as_uri()),
        capture_output=True, text=True, timeout=300,
    )
    body = re.search(r"<body[^>]*>", proc.stdout)
    assert body, f"no DOM; chromium said:\n{proc.stderr[-2000:]}"
    measured = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(0)))
    assert measured.get("first-agent") == "piper", measured
    top, bottom = float(measured["verdict-top"]), float(measured["verdict-bottom"])
    fold = min(float(measured["viewport-height"]), FOLD[1])
    assert 0 < top < 150 and bottom <= fold, measured
    # and in the screenshot of the same window: the verdict's green mark (a valid agent) is
    # on the first screen, the INVALID red of the notices nowhere above it
    shot = tmp_path / "fold.png"
    subprocess.run(
        _chromium_cmd(chromium, tmp_path / "shot-profile", f"--screenshot={shot}",
                      page.as_uri()),
        capture_output=True, text=True, timeout=300,
    )
    img = imread(shot)
    assert img.shape[:2] == (FOLD[1], FOLD[0])
    rgb = np.rint(np.asarray(img[..., :3]) * 255).astype(np.int64)
    green = np.all(np.abs(rgb - np.asarray((46, 139, 87))) < 20, axis=2)
    rows = np.flatnonzero(green.sum(axis=1) >= 3)
    assert rows.size >= 20, "the verdict's mark for the valid agent is not on the first screen"
    assert rows.min() >= top - 1 and rows.max() <= bottom + 1


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _near(rgb: np.ndarray, colour: tuple[int, int, int]) -> int:
    """How many pixels of an ``(n, 3)`` array are within 30 of ``colour`` in every channel."""
    return int(np.sum(np.all(np.abs(rgb - np.asarray(colour)) < 30, axis=1)))


BOXES = """<script>
document.body.setAttribute("data-boxes", JSON.stringify([...document.querySelectorAll(
  "svg.forest")].map(e => {const b = e.getBoundingClientRect(); return {id: e.id,
  x: b.x, y: b.y + window.scrollY, w: b.width, h: b.height,
  rows: e.querySelectorAll("g.forest-row").length}})));
</script></body></html>"""
"""Appended to a copy of the page: it records each forest plot's box and drawn rows in the
DOM that ``--dump-dom`` prints (the report itself carries no script)."""


def test_forest_plots_are_laid_out_and_drawn(
    stored_profile: RunProfile, tmp_path: Path
) -> None:
    from matplotlib.image import imread

    html = render_html(stored_profile)
    assert "<script" not in html
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("</body></html>", BOXES), encoding="utf-8")
    proc = _run_chromium(tmp_path, ["--dump-dom", "--window-size=1400,900"], probe)
    found = re.search(r'data-boxes="([^"]*)"', proc.stdout)
    assert found, f"no boxes in the dumped DOM; chromium said:\n{proc.stderr[-2000:]}"
    boxes = {b["id"]: b for b in json.loads(found.group(1).replace("&quot;", '"'))}
    agent = stored_profile.to_json()["agents"]["piper"]
    blocks = {"forest-piper-minus-control": agent["minus_control"]["metrics"]} | {
        f"forest-piper-ablation-{m}": b["metrics"] for m, b in agent["ablation_credit"].items()}
    assert set(boxes) == set(blocks)
    for fig_id, metrics in blocks.items():
        drawn = [r for r in forest_rows(metrics, CONTRAST_LABELS) if r.value is not None]
        assert boxes[fig_id]["rows"] == len(drawn) > 5
        assert boxes[fig_id]["w"] > 600 and boxes[fig_id]["h"] > 22 * len(drawn)
    # a screenshot tall enough to hold the first forest plot shows it drawn in its box: the
    # zero line and labels, blue points and bars, the orange-red marks of the
    # Holm-significant rows (piper − control has some)
    first = boxes["forest-piper-minus-control"]
    assert any(r.significant for r in forest_rows(blocks[first["id"]], CONTRAST_LABELS))
    bottom = int(first["y"] + first["h"]) + 10
    shot = tmp_path / "forest.png"
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    proc = _run_chromium(tmp_path, [f"--screenshot={shot}", f"--window-size=1400,{bottom}"],
                         page)
    assert shot.exists(), f"no screenshot; chromium said:\n{proc.stderr[-2000:]}"
    img = imread(shot)
    assert img.shape[0] >= bottom - 10
    top, left = int(first["y"]), int(first["x"])
    crop = img[top:top + int(first["h"]), left:left + int(first["w"]), :3]
    keep = os.environ.get("MINDLEDGER_SCREENSHOT_DIR")
    if keep:  # for a person to look at
        shutil.copy(shot, Path(keep) / "report-forest-screenshot.png")
    rgb = np.rint(np.asarray(crop) * 255).astype(np.int64).reshape(-1, 3)
    assert len(np.unique(rgb, axis=0)) > 100  # drawn, not blank
    assert _near(rgb, _rgb(BLUE)) > 300
    assert _near(rgb, _rgb(VERMILLION)) > 100
    assert _near(rgb, (34, 34, 34)) > 200  # the zero line and the labels
