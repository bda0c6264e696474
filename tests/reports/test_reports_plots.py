"""The figures: small multiples of accuracy by depth (one panel per agent under test, its control
beside it, the references faint, R0 apart) and of the reliability diagram, the headline and the
error types; each an SVG document.

The figures are read back as XML: every panel is a ``<g class="panel">``, every data series a
``<g data-series=…>`` and every guide a ``<g data-guide=…>``; each point's hover text is the
exact figure."""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from reports import _plots
from reports._data import DEPTH_ORDER
from reports._plots import (
    AGENT_COLOUR,
    CONTROL_COLOURS,
    INVALID_COLOUR,
    MAX_COLUMNS,
    RELIABILITY_COLUMNS,
    figures,
)
from reports.model import RunProfile
from reports.present import d50_text, proportion_text
from reports.profile import analyse
from reports.synthetic import SyntheticAgent, logistic_accuracy, simulate, synthetic_items

NS = "{http://www.w3.org/2000/svg}"


# The figures take a RunProfile; these tests edit its JSON, then parse it (and so check it).
def depth_curves(profile: Mapping[str, Any]) -> str | None:
    return _plots.depth_curves(RunProfile.of(profile))


def error_types(profile: Mapping[str, Any]) -> str | None:
    return _plots.error_types(RunProfile.of(profile))


def headline(profile: Mapping[str, Any]) -> str | None:
    return _plots.headline(RunProfile.of(profile))


def reliability(profile: Mapping[str, Any]) -> str | None:
    return _plots.reliability(RunProfile.of(profile))
REFERENCES = ("oracle", "depth-capped:2", "not-reality")


def _agents() -> list[SyntheticAgent]:
    curve = logistic_accuracy(2.7, -1.2, 0.25)
    return [
        SyntheticAgent("ada", curve),
        SyntheticAgent(
            "ada-control", logistic_accuracy(1.6, -1.2, 0.25), role="control", base_agent="ada"
        ),
        SyntheticAgent(
            "ada-no-log",
            logistic_accuracy(2.0, -1.2, 0.25),
            role="ablation",
            base_agent="ada",
            spec={"ablated": "witness-log"},
        ),
        SyntheticAgent(
            "oracle", lambda d: 1.0, tb_accuracy=1.0, role="reference", confidence_noise=None
        ),
        SyntheticAgent(
            "depth-capped:2",
            lambda d: 1.0 if d <= 2 else 0.0,
            tb_accuracy=1.0,
            role="reference",
            confidence_noise=None,
        ),
        # true-belief and R0 accuracy far below 90%: INVALID by the profile's own rule
        SyntheticAgent(
            "not-reality", lambda d: 0.9, tb_accuracy=0.04, role="reference", confidence_noise=None
        ),
    ]


@pytest.fixture(scope="module")
def profile() -> dict[str, Any]:
    items = synthetic_items(stories=24, games=1, abc_scenarios=2, items_per_game_cell=2)
    data = simulate(np.random.default_rng(20261201), _agents(), items)
    return analyse(data, seed=0, n_boot=200).profile.to_json()


def _svg(text: str | None) -> ET.Element:
    assert text is not None and text.startswith("<svg ")
    return ET.fromstring(text)  # well-formed XML


def _panels(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if g.get("class") == "panel"]


def _series(panel: ET.Element) -> dict[str, ET.Element]:
    """The panel's data series and guides by name (``false:ada``, ``guide:chance``)."""
    out = {}
    for g in panel.iter(f"{NS}g"):
        if g.get("data-series"):
            out[g.get("data-series", "")] = g
        elif g.get("data-guide"):
            out["guide:" + g.get("data-guide", "")] = g
    return out


def _curves(panel: ET.Element) -> set[str]:
    return {k for k in _series(panel) if not k.startswith("guide:")}


def _title(panel: ET.Element) -> ET.Element:
    return next(t for t in panel.iter(f"{NS}text") if t.get("class") == "panel-title")


def _titles(root: ET.Element) -> list[str]:
    return [_title(p).text or "" for p in _panels(root)]


def _columns(root: ET.Element) -> int:
    return len({_title(p).get("x") for p in _panels(root)})


def _stroke(series: ET.Element) -> ET.Element:
    """The line through a series' points."""
    line = series.find(f"{NS}polyline")
    assert line is not None
    return line


def _points(series: ET.Element) -> list[tuple[float, float, str]]:
    """Each point's marker centre and hover text, in drawing order."""
    out = []
    for g in series.iter(f"{NS}g"):
        if g.get("class") != "point":
            continue
        mark = next(e for e in g if e.tag != f"{NS}title" and e.tag != f"{NS}line")
        if mark.tag == f"{NS}circle":
            x, y = float(mark.get("cx", "nan")), float(mark.get("cy", "nan"))
        elif mark.tag == f"{NS}rect":
            x = float(mark.get("x", "nan")) + float(mark.get("width", "nan")) / 2
            y = float(mark.get("y", "nan")) + float(mark.get("height", "nan")) / 2
        else:  # polygon: the mean of its corners
            pts = [tuple(map(float, p.split(","))) for p in mark.get("points", "").split()]
            x, y = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
        out.append((x, y, g.findtext(f"{NS}title", "")))
    return out


def _bars(series: ET.Element) -> int:
    """How many interval bars (a vertical line with two caps each) the series draws."""
    return (
        sum(
            1
            for g in series.iter(f"{NS}g")
            if g.get("class") == "point"
            for _ in g.findall(f"{NS}line")
        )
        // 3
    )


def _grey(colour: str) -> bool:
    rgb = [int(colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4)]
    return max(rgb) - min(rgb) < 13


def _with_agents_under_test(
    profile: Mapping[str, Any], k: int, *, controls: bool = True
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
    root = _svg(depth_curves(profile))
    assert _titles(root) == ["ada", "ada-no-log"]  # not the control, not the references
    refs = {f"reference:{r}" for r in REFERENCES}
    for panel, name in zip(_panels(root), ("ada", "ada-no-log"), strict=True):
        # exactly its own curves, the control's (the ablation shares its agent's control),
        # the R0 points apart, and every reference
        assert (
            _curves(panel)
            == {
                f"false:{name}",
                f"true:{name}",
                "control:ada-control",
                f"reality:{name}",
                "reality:ada-control",
            }
            | refs
        )
        series = _series(panel)
        agent, control = _stroke(series[f"false:{name}"]), _stroke(series["control:ada-control"])
        assert agent.get("stroke") == AGENT_COLOUR and agent.get("stroke-dasharray") is None
        assert control.get("stroke") == CONTROL_COLOURS[0]
        assert control.get("stroke-dasharray") is not None
        for r in refs:  # faint: thin, grey, low opacity
            ref = series[r]
            assert float(ref.get("opacity", "1")) <= 0.5
            assert float(_stroke(ref).get("stroke-width", "0")) < float(
                agent.get("stroke-width", "0")
            )
            assert _grey(_stroke(ref).get("stroke", ""))
            assert _bars(ref) == 0  # no intervals for the references
        # interval bars for the agent and its control
        cells = profile["agents"][name]["accuracy_by_depth"]["false"]
        order = sorted(cells, key=DEPTH_ORDER.index)
        assert _bars(series[f"false:{name}"]) == sum(1 for c in cells.values() if c.get("ci"))
        assert _bars(series["control:ada-control"]) > 0
        # the agent's curve is its profile's false-belief accuracy, in depth order: each
        # point's hover text is the exact figure, and its height follows the value
        points = _points(series[f"false:{name}"])
        assert [p[2] for p in points] == [
            f"{name} false belief {lab}: {proportion_text(cells[lab])}" for lab in order
        ]
        ys = [p[1] for p in points]
        values = [cells[lab]["value"] for lab in order]
        slope = (ys[0] - ys[-1]) / (values[0] - values[-1])
        assert slope < 0  # up is more accurate
        assert ys == pytest.approx([ys[0] + slope * (v - values[0]) for v in values], abs=0.02)
    # one y scale for every panel: the validity threshold at the same height
    heights = {
        _series(p)["guide:validity"].find(f"{NS}line").get("y1")  # type: ignore
        for p in _panels(root)
    }
    assert len(heights) == 1


def test_each_agent_is_drawn_beside_its_own_control_only(profile: dict[str, Any]) -> None:
    root = _svg(depth_curves(_with_agents_under_test(profile, 4)))
    assert _titles(root) == [f"agent-{i}" for i in range(4)]
    for i, panel in enumerate(_panels(root)):
        controls = {g for g in _curves(panel) if g.startswith("control:")}
        assert controls == {f"control:agent-{i}-control"}
        falses = {g for g in _curves(panel) if g.startswith("false:")}
        assert falses == {f"false:agent-{i}"}


def test_an_invalid_agent_is_marked_in_its_title_and_its_curve(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    p["agents"]["ada-no-log"]["valid"] = False
    valid, invalid = _panels(_svg(depth_curves(p)))
    assert "INVALID" not in (_title(valid).text or "")
    assert _title(invalid).text == "ada-no-log (INVALID)"
    assert _title(invalid).get("fill") == INVALID_COLOUR
    good = _stroke(_series(valid)["false:ada"])
    bad = _stroke(_series(invalid)["false:ada-no-log"])
    assert good.get("stroke-dasharray") is None and good.get("stroke") == AGENT_COLOUR
    assert bad.get("stroke-dasharray") is not None and bad.get("stroke") != AGENT_COLOUR
    assert _grey(bad.get("stroke", ""))


def test_the_reality_check_is_apart_from_the_false_belief_curve(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    # even a stray R0 cell in the false-belief block stays off the curve
    p["agents"]["ada"]["accuracy_by_depth"]["false"]["R0"] = {
        "value": 0.0,
        "ci": [0.0, 0.1],
        "n": 12,
        "depth_n": 0,
    }
    panel = _panels(_svg(depth_curves(p)))[0]
    ticks = [t.text for t in panel.iter(f"{NS}text") if t.get("font-size") == "9"]
    assert ticks[:2] == ["R0", "R1"]
    assert ticks[1 : len(DEPTH_ORDER)] == [d for d in DEPTH_ORDER if d != "R0"]  # depth order
    series = _series(panel)
    divider = float(series["guide:r0-divider"].find(f"{NS}line").get("x1"))  # type: ignore
    curve = _points(series["false:ada"])
    assert min(x for x, _, _ in curve) > divider
    assert not any(" R0:" in tip for _, _, tip in curve)  # the stray R0 value is not on it
    reality = _points(series["reality:ada"])
    assert len(reality) == 1 and reality[0][0] < divider
    rc = p["agents"]["ada"]["reality_check"]
    assert reality[0][2] == f"ada reality check R0: {proportion_text(rc)}"


def test_only_references_gives_one_panel_per_reference(profile: dict[str, Any]) -> None:
    p = dict(profile) | {"agents": {r: profile["agents"][r] for r in REFERENCES}}
    root = _svg(depth_curves(p))
    assert [t.replace(" (INVALID)", "") for t in _titles(root)] == list(REFERENCES)
    assert "not-reality (INVALID)" in _titles(root)  # the profile's own validity verdict
    for panel, name in zip(_panels(root), REFERENCES, strict=True):
        others = {f"reference:{r}" for r in REFERENCES if r != name}
        assert {f"false:{name}"} | others <= _curves(panel)
        assert f"reference:{name}" not in _curves(panel)


@pytest.mark.parametrize("k", [1, 2, 10])
def test_the_grid_is_at_most_three_columns_wide(profile: dict[str, Any], k: int) -> None:
    root = _svg(depth_curves(_with_agents_under_test(profile, k, controls=k != 1)))
    assert len(_panels(root)) == k
    assert _columns(root) == min(k, MAX_COLUMNS)
    # every panel inside the figure's own box
    width, height = (float(v) for v in root.get("viewBox", "").split()[2:])
    for panel in _panels(root):
        for _, y, _ in _points(
            _series(panel)[next(iter(sorted(c for c in _curves(panel) if c.startswith("false:"))))]
        ):
            assert 0 < y < height
        assert 0 < float(_title(panel).get("x", "nan")) < width


def test_missing_accuracy_by_depth(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    p["agents"]["ada-no-log"]["accuracy_by_depth"] = {"false": {}, "true": {}}
    root = _svg(depth_curves(p))
    assert _titles(root) == ["ada", "ada-no-log"]  # the panel stays, with what there is
    second = _panels(root)[1]
    assert not any(g.startswith(("false:", "true:")) for g in _curves(second))
    assert "control:ada-control" in _curves(second)
    for a in p["agents"].values():
        a["accuracy_by_depth"] = {"false": {}, "true": {}}
    assert depth_curves(p) is None
    assert depth_curves(p | {"agents": {}}) is None


def test_reliability_is_one_panel_per_agent_that_stated_confidence(profile: dict[str, Any]) -> None:
    stated = [
        n for n, a in profile["agents"].items() if (a.get("calibration") or {}).get("available")
    ]
    assert stated == ["ada", "ada-control", "ada-no-log"]  # the references state none
    root = _svg(reliability(profile))
    panels = _panels(root)
    assert [p.get("data-agent") for p in panels] == stated
    for panel, name in zip(panels, stated, strict=True):
        assert set(_series(panel)) == {"guide:perfect", f"calibration:{name}"}
        bins = profile["agents"][name]["calibration"]["reliability"]
        points = _points(_series(panel)[f"calibration:{name}"])
        assert len(points) == len(bins)
        assert [tip.split(": ", 1)[1].split("%")[0] for _, _, tip in points] == [
            f"{100 * b['accuracy']:.1f}" for b in bins
        ]
        ece = profile["agents"][name]["calibration"]["ece"]["value"]
        assert any(f"ECE {ece:.3f}" in (t.text or "") for t in panel.iter(f"{NS}text"))
    ten = _svg(reliability(_with_agents_under_test(profile, 10, controls=False)))
    assert _titles(ten) == [f"agent-{i}" for i in range(10)]
    assert _columns(ten) == RELIABILITY_COLUMNS
    none = copy.deepcopy(profile)
    for a in none["agents"].values():
        a["calibration"] = {"available": False}
    assert reliability(none) is None


def test_the_headline_has_a_row_per_agent_with_its_exact_figures(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    p["agents"]["ada-no-log"]["valid"] = False
    root = _svg(headline(p))
    names = list(p["agents"])
    labels = [
        t
        for t in root.iter(f"{NS}text")
        if t.get("text-anchor") == "end" and t.get("font-size") == "11"
    ]
    invalid = [n for n in names if p["agents"][n]["valid"] is False]
    assert invalid == ["ada-no-log", "not-reality"]
    assert [t.text for t in labels] == [n + (" (INVALID)" if n in invalid else "") for n in names]
    assert [t.get("fill") for t in labels].count(INVALID_COLOUR) == 2
    tips = [g.findtext(f"{NS}title", "") for g in root.iter(f"{NS}g") if g.get("data-agent")]
    for n in names:
        assert f"{n}: D50 {d50_text(p['agents'][n]['d50'])}" in tips
        lr = p["agents"][n]["leakage_resistance"]
        assert f"{n}: leakage resistance {proportion_text(lr)}" in tips


def test_error_types_stack_each_cell_to_its_counts(profile: dict[str, Any]) -> None:
    root = _svg(error_types(profile))
    panel = _panels(root)[0]
    cells = profile["agents"][panel.get("data-agent")]["error_types_by_depth"]["false"]
    for lab, c in cells.items():
        tips = [
            g.findtext(f"{NS}title", "")
            for g in panel.iter(f"{NS}g")
            if g.get("data-group")
            and g.findtext(f"{NS}title", "").split(":")[0].endswith(f" {lab}")
        ]
        counts = [int(t.split(": ")[1].rsplit(" of ", 1)[0].rsplit(" ", 1)[1]) for t in tips]
        assert sum(counts) == c["n"]
        assert all(t.split(" of ")[1].startswith(f"{c['n']} ") for t in tips)


def test_every_figure_is_an_svg_document(profile: dict[str, Any]) -> None:
    out = figures(RunProfile.of(profile))
    assert [k for k, _, _ in out] == ["headline", "depth_curves", "error_types", "reliability"]
    for _, _, svg in out:
        root = _svg(svg)
        assert root.tag == f"{NS}svg" and root.get("viewBox") and root.get("aria-label")
        assert root.findtext(f"{NS}title")


def test_names_are_escaped(profile: dict[str, Any]) -> None:
    p = copy.deepcopy(profile)
    p["agents"] = {'<b>&"ada"</b>' if n == "ada" else n: a for n, a in p["agents"].items()}
    for fn in (headline, depth_curves, error_types, reliability):
        svg = fn(p)
        assert svg is not None and "<b>" not in svg
        assert any('<b>&"ada"</b>' in (t.text or "") for t in _svg(svg).iter(f"{NS}text"))
