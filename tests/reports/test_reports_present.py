"""The typed profile and its one wording: the published JSON Schema is the models' own and every
profile validates against it (checked by an independent validator); Markdown, HTML, the
headline CSV and the dashboard show the same headline figures for every agent, an invalid
agent's false-belief figures only marked invalid."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser
from typing import Any

import jsonschema
import numpy as np
import pytest

from reports import profile_from_data
from reports.model import PROFILE_SCHEMA, SCHEMA_FILE, RunProfile, json_schema
from reports.present import (
    HEADLINE_COLUMNS,
    INVALID,
    agent_headline,
    headline_columns,
    headlines,
    number,
    small_n_said_once,
)
from reports.render import render_headline_csv, render_html, render_json, render_markdown
from reports.simulation import study_agents
from reports.synthetic import SyntheticAgent, logistic_accuracy, simulate, suite_design
from tui.state import agent_views


def _agents() -> list[SyntheticAgent]:
    """The study's agent, control and ablation, plus two references: an oracle and one that
    fails its true-belief controls (invalid)."""
    refs = [
        SyntheticAgent("oracle", logistic_accuracy(9.0, 4.0, 0.25), role="reference",
                       reality_accuracy=0.99),
        SyntheticAgent("not-reality", logistic_accuracy(3.0, 1.5, 0.25), role="reference",
                       tb_accuracy=0.3),
    ]
    return [*study_agents(), *refs]


@pytest.fixture(scope="module")
def profiles() -> dict[str, RunProfile]:
    out = {}
    for design in ("quick", "baseline"):
        rd = simulate(np.random.default_rng(5), _agents(), suite_design(design))
        out[design] = profile_from_data(rd, seed=1, n_boot=200)
    return out


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_published_schema_is_the_models_own() -> None:
    published = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    # regenerate with `python -m reports.model` when the models change
    assert published == json_schema()
    assert published["title"] == PROFILE_SCHEMA == "mindledger.profile/2"


@pytest.mark.parametrize("design", ["quick", "baseline"])
def test_every_profile_validates_against_the_published_schema(
    profiles: dict[str, RunProfile], validator: jsonschema.Draft202012Validator, design: str
) -> None:
    profile = json.loads(render_json(profiles[design]))  # exactly what `--format json` holds
    errors = sorted(validator.iter_errors(profile), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert profile["schema"] == PROFILE_SCHEMA
    typed = RunProfile.of(profile)
    assert set(typed.agents) == {a.name for a in _agents()}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("schema",), "mindledger.profile/1"),  # another version
        (("agents", "agent", "d50", "status"), "roughly"),  # not a D50 status
        (("agents", "agent", "false_belief_accuracy", "n"), "many"),  # n is an integer
        (("agents", "agent", "leakage_resistance", "ci"), [0.1]),  # an interval has two ends
        (("multiple_comparisons", "m"), -1),
        (("contrasts", 0, "kind"), "versus"),
    ],
)
def test_the_schema_rejects_a_profile_that_does_not_fit(
    profiles: dict[str, RunProfile], validator: jsonschema.Draft202012Validator,
    path: tuple[Any, ...], value: Any,
) -> None:
    bad = profiles["baseline"].to_json()
    node: Any = bad
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert list(validator.iter_errors(bad)), path
    with pytest.raises(ValueError):  # pydantic's ValidationError is a ValueError
        RunProfile.of(bad)


def test_a_missing_headline_figure_is_refused(
    profiles: dict[str, RunProfile], validator: jsonschema.Draft202012Validator
) -> None:
    bad = profiles["baseline"].to_json()
    del bad["agents"]["agent-control"]["d50"]
    assert list(validator.iter_errors(bad))


# -- one wording everywhere ------------------------------------------------------------------


def _markdown_headline(md: str) -> dict[str, list[str]]:
    table = md.split("## Headline", 1)[1].strip().split("\n\n", 1)[0]
    rows = table.splitlines()[2:]
    out = {}
    for ln in rows:
        cells = [c.strip().replace("\\|", "|") for c in ln.strip().strip("|").split(" | ")]
        out[cells[0]] = cells
    return out


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _html_headline(page: str, profile: RunProfile) -> dict[str, list[str]]:
    parser = _Tables()
    parser.feed(page.split("<h2>Headline</h2>", 1)[1])
    table = parser.tables[0]
    assert table[0] == [title for _, title in headline_columns(profile)]
    return {row[0]: row for row in table[1:]}


def _csv_headline(text: str) -> dict[str, list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    width = len(HEADLINE_COLUMNS)
    assert rows[0][:width] == [key for key, _ in HEADLINE_COLUMNS]
    return {r[0]: r[:width] for r in rows[1:]}


@pytest.mark.parametrize("design", ["quick", "baseline"])
def test_markdown_html_csv_and_dashboard_show_the_same_headline(
    profiles: dict[str, RunProfile], design: str
) -> None:
    profile = profiles[design]
    expected = {h.agent: h.cells() for h in headlines(profile)}
    # a report's headline table leaves out S when no matrix measured it and says once, under
    # the table, what has no interval for its size; a CSV row stands on its own and says all
    columns = headline_columns(profile)
    assert [k for k, _ in columns] == [k for k, _ in HEADLINE_COLUMNS if k != "skill"]
    # ... and, in a row whose "valid" cell says INVALID, an invalid figure as "not counted"
    with small_n_said_once():
        said_once = {h.agent: h.cells(columns) for h in headlines(profile, beside_valid=True)}
    if design == "quick":
        assert all("no interval" in " ".join(c) for c in expected.values())
        assert not any("no interval" in " ".join(c) for c in said_once.values())
    md = _markdown_headline(render_markdown(profile))
    page = _html_headline(render_html(profile, figures=[]), profile)
    table = _csv_headline(render_headline_csv(profile))
    views = {v.name: v for v in agent_views(profile)}
    assert set(expected) == set(md) == set(page) == set(table) == set(views)
    for name, cells in expected.items():
        assert md[name] == said_once[name], name
        assert page[name] == said_once[name], name
        assert table[name] == cells, name
        v = views[name]
        figures = dict(zip((k for k, _ in HEADLINE_COLUMNS), cells, strict=True))
        assert (v.d50, v.false_belief, v.leakage_resistance, v.true_belief) == (
            figures["d50"], figures["false_belief"], figures["leakage_resistance"],
            figures["true_belief"]), name


def test_an_invalid_agents_false_belief_figures_appear_only_marked(
    profiles: dict[str, RunProfile],
) -> None:
    profile = profiles["baseline"]
    bad = profile.to_json()["agents"]["not-reality"]
    assert bad["valid"] is False and profile.agents["oracle"].valid is True
    d50_display = bad["d50"]["display"]
    md = render_markdown(profile)
    page = render_html(profile, figures=[])
    table = render_headline_csv(profile)
    row = _markdown_headline(md)["not-reality"]
    assert row[2] == INVALID  # said once in the row; each of its figures is marked
    bad_profile = profile.agents["not-reality"]
    with small_n_said_once():
        marked = agent_headline("not-reality", bad_profile)  # as its own section words them
    blocks = (bad_profile.d50, bad_profile.false_belief_accuracy, bad_profile.leakage_resistance)
    for cell, full, block in zip(row[3:6], (marked.d50, marked.false_belief,
                                            marked.leakage_resistance), blocks, strict=True):
        assert full.startswith(f"{INVALID} (not counted: ") and full.endswith(")"), full
        if number(block.value) is None:
            assert cell == "not counted"
        else:
            assert cell == "not counted: " + full.removeprefix(f"{INVALID} (not counted: ")[:-1]
    assert _html_headline(page, profile)["not-reality"][3:6] == row[3:6]
    csv_cells = _csv_headline(table)["not-reality"]  # a CSV row stands alone: marked in full
    assert all(c.startswith(f"{INVALID} (not counted: ") for c in csv_cells[3:6]), csv_cells
    csv_row = next(r for r in csv.DictReader(io.StringIO(table)) if r["agent"] == "not-reality")
    assert csv_row["d50_status"] == csv_row["false_belief_status"] == "invalid"
    assert csv_row["d50_value"] == csv_row["false_belief_value"] == ""
    # nowhere in the Markdown does the invalid agent's D50 appear without the mark
    section = md.split("## not-reality (reference)", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        if d50_display in line:
            assert f"{INVALID} (not counted: {d50_display}" in line, line
    view = next(v for v in agent_views(profile) if v.name == "not-reality")
    assert view.summary[3] == view.summary[4] == view.summary[6] == INVALID
    assert view.d50 == agent_headline("not-reality", bad_profile).d50  # its detail: in full
