"""The HTML report opens in headless Chromium and a screenshot shows the plots.

Skipped only when Chromium is absent *and* CI is unset; under CI (``.ci/run`` installs Debian's
``chromium``) it must run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reports import render_html

CHROMIUM = "/usr/bin/chromium"


def _chromium() -> str:
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing under CI: the HTML screenshot test must run")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)")


def test_html_report_screenshot_shows_the_plots(
    stored_profile: dict[str, Any], tmp_path: Path
) -> None:
    from matplotlib.image import imread

    chromium = _chromium()
    page = tmp_path / "report.html"
    page.write_text(render_html(stored_profile), encoding="utf-8")
    shot = tmp_path / "report.png"
    profile_dir = tmp_path / "chromium-profile"
    cmd = [
        chromium,
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
        f"--user-data-dir={profile_dir}",
        f"--screenshot={shot}",
        "--window-size=1200,2400",
        page.as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
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
    # plot colours are present: the tab10 blue of the first agent's curve and the red of
    # the INVALID markers
    def near(colour: tuple[int, int, int]) -> int:
        return int(np.sum(np.all(np.abs(rgb - np.asarray(colour)) < 30, axis=1)))

    assert near((31, 119, 180)) > 200
    assert near((209, 73, 91)) > 50
