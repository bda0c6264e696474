"""The figures: small multiples of accuracy by depth (one panel per agent under test, its control
beside it, the references faint, R0 apart) and of the reliability diagram; each figure's PNG.

The figures are inspected through the ``*_figure`` helpers, which return the matplotlib Figure
before PNG encoding; every data line of the depth panels carries a gid naming what it draws."""

from __future__ import annotations

import copy
import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_hex, to_rgb

from reports._data import DEPTH_ORDER
from reports._plots import (
    AGENT_COLOUR,
    CONTROL_COLOURS,
    INVALID_RED,
    MAX_COLUMNS,
    RELIABILITY_COLUMNS,
    depth_curves,
    depth_curves_figure,
    figures,
    reliability,
    reliability_figure,
)
from reports.profile import analyse
from reports.synthetic import SyntheticAgent, logistic_accuracy, simulate, synthetic_items

PNG = b"\x89PNG\r\n\x1a\n"
REFERENCES = ("oracle", "depth-capped:2", "not-reality")


def _agents() -> list[SyntheticAgent]:
    curve = logistic_accuracy(2.7, -1.2, 0.25)
    return [
        SyntheticAgent("ada", curve),
        SyntheticAgent("ada-control", logistic_accuracy(1.6, -1.2, 0.25), role="control",
                       base_agent="ada"),
        SyntheticAgent("ada-no-log", logistic_accuracy(2.0, -1.2, 0.25), role="ablation",
                       base_agent="ada", spec={"ablated": "witness-log"}),
        SyntheticAgent("oracle", lambda d: 1.0, tb_accuracy=1.0, role="reference",
                       confidence_noise=None),
        SyntheticAgent("depth-capped:2", lambda d: 1.0 if d <= 2 else 0.0, tb_accuracy=1.0,
                       role="reference", confidence_noise=None),
        # true-belief and R0 accuracy far below 90%: INVALID by the profile's own rule
        SyntheticAgent("not-reality", lambda d: 0.9, tb_accuracy=0.04, role="reference",
                       confidence_noise=None),
    ]


@pytest.fixture(scope="module")
def profile() -> dict[str, Any]:
    items = synthetic_items(stories=24, games=1, abc_scenarios=2, items_per_game_cell=2)
    data = simulate(np.random.default_rng(20261201), _agents(), items)
    return analyse(data, seed=0, n_boot=200).profile


def _gids(ax: Any) -> dict[str, Any]:
    """The panel's data lines by gid (caps, bars and guides without a gid left out)."""
    return {line.get_gid(): line for line in ax.get_lines() if line.get_gid()}


def _curves(ax: Any) -> set[str]:
    return {g for g in _gids(ax) if not g.startswith("guide:")}


def _titles(fig: Any) -> list[str]:
    return [ax.get_title() for ax in fig.axes]


def _columns(fig: Any) -> int:
    return len({round(ax.get_position().x0, 3) for ax in fig.axes})


def _decodes(png: bytes | None, fig: Any) -> None:
    from matplotlib.image import imread

    assert png is not None and png.startswith(PNG)
    img = imread(io.BytesIO(png), format="png")
    w, h = fig.get_size_inches() * fig.dpi
    assert img.shape[:2] == (round(h), round(w))


def _with_agents_under_test(profile: Mapping[str, Any], k: int, *, controls: bool = True
                            ) -> dict[str, Any]:
    """``profile`` with ``k`` agents under test (copies of ``ada``), each with its own control
    (copies of ``ada-control`` pointing at it) when ``controls``, plus the references."""
    src = profile["agents"]
    agents: dict[str, Any] = {}
    for i in range(k):
        agents[f"agent-{i}"] = copy.deepcopy(src["ada"])
        if controls:
            c = copy.deepcopy(src["ada-control"])
            c["base_agent"] = f"agent-{i}"
            agents[f"agent-{i}-control"] = c
    agents |= {r: copy.deepcopy(src[r]) for r in REFERENCES}
    return dict(profile) | {"agents": agents}


def test_one_panel_per_agent_under_test_with_its_control_and_faint_references(
    profile: dict[str, Any],
) -> None:
    fig = depth_curves_figure(profile)
    assert _titles(fig) == ["ada", "ada-no-log"]  # not the control, not the references
    refs = {f"reference:{r}" for r in REFERENCES}
    for ax, name in zip(fig.axes, ("ada", "ada-no-log"), strict=True):
        # exactly its own curves, the control's (the ablation shares its agent's control),
        # the R0 points apart, and every reference
        assert _curves(ax) == {f"false:{name}", f"true:{name}", "control:ada-control",
                               f"reality:{name}", "reality:ada-control"} | refs
        lines = _gids(ax)
        agent, control = lines[f"false:{name}"], lines["control:ada-control"]
        assert to_hex(agent.get_color()) == AGENT_COLOUR and agent.get_linestyle() == "-"
        assert to_hex(control.get_color()) == CONTROL_COLOURS[0]
        assert control.get_linestyle() == "--"
        for r in refs:  # faint: thin, grey, low alpha, behind
            ref = lines[r]
            assert ref.get_alpha() <= 0.5 and ref.get_linewidth() < agent.get_linewidth()
            assert np.ptp(to_rgb(ref.get_color())) < 0.05  # grey
        # interval bars for the agent and its control, none for the references
        barred = {c.lines[0].get_gid() for c in ax.containers}
        assert {f"false:{name}", "control:ada-control"} <= barred
        assert not barred & refs
        # the agent's curve is its profile's false-belief accuracy, in depth order
        cells = profile["agents"][name]["accuracy_by_depth"]["false"]
        order = sorted(cells, key=DEPTH_ORDER.index)
        assert list(agent.get_ydata()) == pytest.approx([cells[lab]["value"] for lab in order])
    # shared y axis 0-1
    assert all(ax.get_ylim() == fig.axes[0].get_ylim() for ax in fig.axes)
    lo, hi = fig.axes[0].get_ylim()
    assert lo <= 0 and 1 <= hi <= 1.1
    _decodes(depth_curves(profile), fig)


def test_each_agent_is_drawn_beside_its_own_control_only(profile: dict[str, Any]) -> None:
    fig = depth_curves_figure(_with_agents_under_test(profile, 4))
    assert _titles(fig) == [f"agent-{i}" for i in range(4)]
    for i, ax in enumerate(fig.axes):
        controls = {g for g in _curves(ax) if g.startswith("control:")}
        assert controls == {f"control:agent-{i}-control"}
        falses = {g for g in _curves(ax) if g.startswith("false:")}
        assert falses == {f"false:agent-{i}"}


def test_an_invalid_agent_is_marked_in_its_title_and_its_curve(profile: dict[str, Any]
                                                               ) -> None:
    p = copy.deepcopy(profile)
    p["agents"]["ada-no-log"]["valid"] = False
    fig = depth_curves_figure(p)
    valid, invalid = fig.axes
    assert "INVALID" not in valid.get_title()
    assert invalid.get_title() == "ada-no-log (INVALID)"
    assert to_hex(invalid.title.get_color()) == INVALID_RED
    good, bad = _gids(valid)["false:ada"], _gids(invalid)["false:ada-no-log"]
    assert good.get_linestyle() == "-" and to_hex(good.get_color()) == AGENT_COLOUR
    assert bad.get_linestyle() == "--" and to_hex(bad.get_color()) != AGENT_COLOUR
    assert np.ptp(to_rgb(bad.get_color())) < 0.05  # grey


def test_the_reality_check_is_apart_from_the_false_belief_curve(profile: dict[str, Any]
                                                                ) -> None:
    p = copy.deepcopy(profile)
    # even a stray R0 cell in the false-belief block stays off the curve
    p["agents"]["ada"]["accuracy_by_depth"]["false"]["R0"] = {"value": 0.0, "ci": [0.0, 0.1],
                                                             "n": 12, "depth_n": 0}
    fig = depth_curves_figure(p)
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0] == "R0\nreality"
    assert ticks[1:] == [d for d in DEPTH_ORDER if d != "R0"]  # depth order
    divider = _gids(ax)["guide:r0-divider"].get_xdata()[0]
    lines = _gids(ax)
    assert min(lines["false:ada"].get_xdata()) > divider
    assert 0.0 not in list(lines["false:ada"].get_ydata())  # the stray R0 value is not on it
    reality = lines["reality:ada"]
    assert max(reality.get_xdata()) < divider
    assert list(reality.get_ydata()) == [pytest.approx(p["agents"]["ada"]["reality_check"]
                                                       ["value"])]


def test_only_references_gives_one_panel_per_reference(profile: dict[str, Any]) -> None:
    p = dict(profile) | {"agents": {r: profile["agents"][r] for r in REFERENCES}}
    fig = depth_curves_figure(p)
    assert [t.replace(" (INVALID)", "") for t in _titles(fig)] == list(REFERENCES)
    assert "not-reality (INVALID)" in _titles(fig)  # the profile's own validity verdict
    for ax, name in zip(fig.axes, REFERENCES, strict=True):
        others = {f"reference:{r}" for r in REFERENCES if r != name}
        assert {f"false:{name}"} | others <= _curves(ax)
        assert f"reference:{name}" not in _curves(ax)


@pytest.mark.parametrize("k", [1, 2, 10])
def test_the_grid_is_at_most_three_columns_wide(profile: dict[str, Any], k: int) -> None:
    p = _with_agents_under_test(profile, k, controls=k != 1)
    fig = depth_curves_figure(p)
    assert len(fig.axes) == k
    assert _columns(fig) == min(k, MAX_COLUMNS)
    _decodes(depth_curves(p), fig)


def test_missing_accuracy_by_depth(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    del p["agents"]["ada-no-log"]["accuracy_by_depth"]
    fig = depth_curves_figure(p)
    assert _titles(fig) == ["ada", "ada-no-log"]  # the panel stays, with what there is
    assert not any(g.startswith(("false:", "true:")) for g in _curves(fig.axes[1]))
    assert "control:ada-control" in _curves(fig.axes[1])
    _decodes(depth_curves(p), fig)
    for a in p["agents"].values():
        a.pop("accuracy_by_depth", None)
    assert depth_curves_figure(p) is None and depth_curves(p) is None
    assert depth_curves({"agents": {}}) is None


def test_reliability_is_one_panel_per_agent_that_stated_confidence(profile: dict[str, Any]
                                                                   ) -> None:
    stated = [n for n, a in profile["agents"].items()
              if (a.get("calibration") or {}).get("available")]
    assert stated == ["ada", "ada-control", "ada-no-log"]  # the references state none
    fig = reliability_figure(profile)
    assert _titles(fig) == stated
    for ax, name in zip(fig.axes, stated, strict=True):
        assert set(_gids(ax)) == {"guide:perfect", f"calibration:{name}"}
        bins = profile["agents"][name]["calibration"]["reliability"]
        line = _gids(ax)[f"calibration:{name}"]
        assert list(line.get_ydata()) == pytest.approx([b["accuracy"] for b in bins])
        ece = profile["agents"][name]["calibration"]["ece"]["value"]
        assert any(f"ECE {ece:.3f}" in t.get_text() for t in ax.texts)
    _decodes(reliability(profile), fig)
    ten = _with_agents_under_test(profile, 10, controls=False)
    assert _columns(reliability_figure(ten)) == RELIABILITY_COLUMNS
    none = copy.deepcopy(profile)
    for a in none["agents"].values():
        a["calibration"] = {"available": False}
    assert reliability_figure(none) is None and reliability(none) is None


def test_every_figure_is_a_png(profile: dict[str, Any]) -> None:
    out = figures(profile)
    assert [k for k, _, _ in out] == ["headline", "depth_curves", "error_types",
                                      "reliability", "contrasts"]
    assert all(png.startswith(PNG) and len(png) > 10_000 for _, _, png in out)
