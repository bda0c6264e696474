"""Held-out seeds never leave the service except to an operator.

A held-out run (real quick-suite items plus two A/B/C scenarios, answered by reference agents
through the real runner and store) is rendered every way a person or an agent can reach it: every
``report --format`` and ``--compare`` through the Python functions and the CLI, the dashboard's
view-model and exports, ``mindledger runs`` and ``mindledger run --held-out``. None of them may
show the run's seed, an item's seed (decimal or hex), a stored item body or parameters, or an
A/B/C scenario id (a hash of nothing but the scenario seed, so a search away from it). With the
operator flag the seed does appear, so each check can fail; a development run keeps its seed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import games
from harness.cli.main import cli
from harness.config.seeds import is_held_out
from harness.config.settings import load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from harness.run.suites import get_suite
from ledger.db import open_engine
from ledger.store import Store
from mindledger import canonical_json, seed_cell, seed_phrase, shown_seed
from reports import (
    build_profile,
    compare,
    compare_runs,
    render_compare_markdown,
    render_html,
    render_json,
    render_markdown,
    report,
)
from reports._data import load_run
from reports.profile import analyse
from tui.source import DashboardSource
from tui.state import agent_views, run_header, run_rows

HELD_SEED = next(s for s in range(1_234_567_890, 1_234_568_890) if is_held_out(s))
OTHER_HELD_SEED = next(s for s in range(HELD_SEED + 1, HELD_SEED + 1000) if is_held_out(s))
DEV_SEED = next(s for s in range(1_987_654_321, 1_987_655_321) if not is_held_out(s))
REFERENCES = ("oracle", "random", "not-reality", "level:2")
WITHHELD = "seed withheld (held-out run)"
N_BOOT = 100
def _cli_formats() -> tuple[str, ...]:
    """Every ``report --format`` the command line offers: a new format is walked too."""
    from harness.cli.report_cmd import report as report_command

    fmt = next(p for p in report_command.params if p.name == "fmt")
    return tuple(fmt.type.choices)  # type: ignore[attr-defined]


FORMATS = _cli_formats()


@dataclass
class Runs:
    store: Store
    url: str
    scenarios: list[str]
    """The held-out run's A/B/C scenario ids."""
    secrets: list[str]
    """Everything about the held-out run that must not be shown to anyone but an operator."""

    def leaks(self, text: str) -> list[str]:
        return [s for s in self.secrets if s in text]


def _secrets(store: Store, run_id: str) -> tuple[list[str], list[str]]:
    items = store.run_items(run_id)
    seeds = {store.get_run(run_id).seed} | {i.seed for i in items}
    # a short seed could match some other number by chance and prove nothing
    assert all(s >= 10_000_000 for s in seeds), sorted(seeds)
    out = [form for s in sorted(seeds) for form in (str(s), f"{s:x}", f"{s:X}")]
    for item in items:
        body = item.to_dict()
        out += [
            canonical_json(body).decode(),
            json.dumps(body),
            json.dumps(body, indent=2),
            canonical_json(dict(item.params)).decode(),
        ]
    scenarios = sorted({str(i.meta["scenario"]) for i in items if i.meta.get("scenario")})
    assert len(scenarios) == 2
    return out + scenarios, scenarios


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """Run "held" (held-out seed, stored as the scheduler stores one) and run "dev"."""
    url = f"sqlite:///{tmp_path_factory.mktemp('held') / 'h.db'}"
    settings = load_settings(None, env={}, flags={"db_url": url})
    store = Store(open_engine(url))
    planned = plan_agents(settings, agents=(), references=REFERENCES)
    items = get_suite("quick").build(HELD_SEED) + games.generate_abc_items(HELD_SEED, 2)
    store.create_run(
        "held", suite="quick", seed=HELD_SEED, held_out=True,
        params={"suite": "quick", "seed": HELD_SEED}, agents=planned, items=items,
    )  # fmt: skip
    create_run(store, settings, suite="quick", planned=planned, seed=DEV_SEED, run_id="dev")
    for run_id in ("held", "dev"):
        asyncio.run(execute_stored_run(store, settings, run_id))
    assert store.get_run("held").held_out and not store.get_run("dev").held_out
    secrets, scenarios = _secrets(store, "held")
    yield Runs(store, url, scenarios, secrets)
    store.engine.dispose()


def _cli(runs: Runs, *args: str) -> Result:
    result = CliRunner().invoke(cli, ["--db", runs.url, *args])
    assert result.exit_code == 0, result.output
    return result


# -- the rule, once --------------------------------------------------------------------------


def test_the_rule_shows_a_held_out_seed_to_operators_only() -> None:
    assert shown_seed(HELD_SEED, held_out=True) is None
    assert shown_seed(HELD_SEED, held_out=True, reveal_held_out=True) == HELD_SEED
    assert shown_seed(DEV_SEED, held_out=False) == DEV_SEED
    assert seed_cell(HELD_SEED, held_out=True) == "withheld"
    assert seed_cell(None, held_out=True, reveal_held_out=True) == "withheld"
    assert seed_cell(HELD_SEED, held_out=True, reveal_held_out=True) == str(HELD_SEED)
    assert seed_phrase(HELD_SEED, held_out=True) == WITHHELD
    assert seed_phrase(DEV_SEED, held_out=False) == f"seed {DEV_SEED}"


# -- reports through the Python functions --------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_withholds_by_default(runs: Runs, fmt: str) -> None:
    text = report(runs.store, "held", fmt, n_boot=N_BOOT)
    assert runs.leaks(text) == []
    if fmt in ("md", "html"):
        assert WITHHELD in text
    if fmt == "json":
        run = json.loads(text)["run"]
        assert run["seed"] is None and run["seed_withheld"] is True and run["held_out"] is True
    if fmt == "csv":  # the A/B/C rows still group by scenario, under labels that say nothing
        assert "scenario-1" in text and "scenario-2" in text


@pytest.mark.parametrize("fmt", ["md", "json", "csv"])
def test_the_operator_flag_reveals(runs: Runs, fmt: str) -> None:
    text = report(runs.store, "held", fmt, n_boot=N_BOOT, reveal_held_out=True)
    if fmt == "csv":  # CSV never had a seed column; the scenario ids come back
        assert all(s in text for s in runs.scenarios)
        return
    assert str(HELD_SEED) in text
    if fmt == "md":
        assert f"seed {HELD_SEED}, held-out seeds" in text and WITHHELD not in text
    else:
        run = json.loads(text)["run"]
        assert run["seed"] == HELD_SEED and run["seed_withheld"] is False


def test_renderers_withhold_even_from_an_operator_profile(runs: Runs) -> None:
    profile = build_profile(runs.store, "held", n_boot=N_BOOT, reveal_held_out=True)
    assert profile.run.seed == HELD_SEED
    for text in (
        render_json(profile),
        render_markdown(profile),
        render_html(profile, figures=()),
    ):
        assert runs.leaks(text) == []
    assert str(HELD_SEED) in render_html(profile, figures=(), reveal_held_out=True)
    assert str(HELD_SEED) in render_markdown(profile, reveal_held_out=True)


def test_figures_and_their_captions_withhold(runs: Runs, tmp_path: Path) -> None:
    text = report(runs.store, "held", "md", n_boot=N_BOOT, figures_dir=tmp_path / "f")
    pngs = sorted(p.name for p in (tmp_path / "f").iterdir())
    assert pngs and runs.leaks(text + " ".join(pngs)) == []


def test_compare_withholds_the_held_out_side(runs: Runs) -> None:
    for a, b in (("dev", "held"), ("held", "dev")):
        cmp = compare(runs.store, a, b, n_boot=N_BOOT)
        text = json.dumps(cmp.to_json()) + render_compare_markdown(cmp)
        assert runs.leaks(text) == []
        held, dev = (cmp.run_b, cmp.run_a) if b == "held" else (cmp.run_a, cmp.run_b)
        assert held.seed is None and held.seed_withheld is True
        assert dev.seed == DEV_SEED and dev.seed_withheld is False
    cmp = compare(runs.store, "dev", "held", n_boot=N_BOOT, reveal_held_out=True)
    assert cmp.run_b.seed == HELD_SEED
    # analyses an operator built are still withheld when the comparison is not for one
    ops = [analyse(load_run(runs.store, r), n_boot=N_BOOT, reveal_held_out=True)
           for r in ("dev", "held")]  # fmt: skip
    assert runs.leaks(json.dumps(compare_runs(*ops).to_json())) == []

def test_a_development_run_keeps_its_seed(runs: Runs) -> None:
    assert f"seed {DEV_SEED}, development seeds" in report(runs.store, "dev", "md", n_boot=N_BOOT)
    run = json.loads(report(runs.store, "dev", "json", n_boot=N_BOOT))["run"]
    assert run["seed"] == DEV_SEED and run["seed_withheld"] is False


# -- the CLI -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_cli_report_withholds_unless_revealed(runs: Runs, fmt: str) -> None:
    base = ["report", "held", "--format", fmt, "--bootstrap", str(N_BOOT)]
    assert runs.leaks(_cli(runs, *base).output) == []
    if fmt == "json":
        revealed = json.loads(_cli(runs, *base, "--reveal-held-out").output)
        assert revealed["run"]["seed"] == HELD_SEED


def test_cli_report_md_with_figures_withholds(runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "held.md"
    _cli(runs, "report", "held", "--out", str(out), "--bootstrap", str(N_BOOT))
    files = " ".join(p.name for p in (tmp_path / "held_files").iterdir())
    assert runs.leaks(out.read_text() + files) == [] and WITHHELD in out.read_text()


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_cli_compare_withholds_unless_revealed(runs: Runs, fmt: str) -> None:
    base = ["report", "--compare", "dev", "held", "--format", fmt, "--bootstrap", str(N_BOOT)]
    assert runs.leaks(_cli(runs, *base).output) == []
    if fmt == "json":
        revealed = json.loads(_cli(runs, *base, "--reveal-held-out").output)
        assert revealed["run_b"]["seed"] == HELD_SEED


def test_cli_runs_lists_withheld_unless_revealed(runs: Runs) -> None:
    text = _cli(runs, "runs").output
    assert runs.leaks(text) == []
    rows = {cells[0]: cells for cells in (line.split() for line in text.splitlines()) if cells}
    assert rows["held"][2:4] == ["withheld", "yes"] and rows["dev"][2] == str(DEV_SEED)
    assert str(HELD_SEED) in _cli(runs, "runs", "--reveal-held-out").output
    assert "operators" in _cli(runs, "runs", "--help").output


def test_cli_runs_json_withholds_unless_revealed(runs: Runs) -> None:
    text = _cli(runs, "runs", "--format", "json").stdout
    assert runs.leaks(text) == []
    listed = {r["id"]: r for r in json.loads(text)}
    assert listed["held"]["seed"] is None and listed["held"]["seed_withheld"] is True
    assert listed["held"]["held_out"] is True and listed["dev"]["seed"] == DEV_SEED
    revealed = json.loads(_cli(runs, "runs", "--format", "json", "--reveal-held-out").stdout)
    assert {r["id"]: r["seed"] for r in revealed}["held"] == HELD_SEED


def test_cli_run_held_out_prints_no_seed(isolated_home: Path) -> None:
    url = f"sqlite:///{isolated_home / 'run.db'}"
    args = ["--db", url, "run", "--suite", "quick", "--reference", "oracle", "--held-out",
            "--seed", str(OTHER_HELD_SEED)]  # fmt: skip
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    text = result.stdout + result.stderr
    assert WITHHELD in result.stderr and WITHHELD in result.stdout  # start line, summary title
    assert str(OTHER_HELD_SEED) not in text and f"{OTHER_HELD_SEED:x}" not in text
    run_id = Store(open_engine(url)).list_runs()[0].id
    resumed = CliRunner().invoke(cli, ["--db", url, "run", "--resume", run_id])
    assert resumed.exit_code == 0 and str(OTHER_HELD_SEED) not in resumed.output


# -- the dashboard ---------------------------------------------------------------------------


def test_dashboard_views_and_exports_withhold(runs: Runs, tmp_path: Path) -> None:
    source = DashboardSource(runs.store, n_boot=N_BOOT)
    rows = {r.key: r.cells for r in run_rows(source.runs())}
    assert rows["held"][2] == "withheld" and rows["dev"][2] == str(DEV_SEED)
    profile = source.profile("held")
    header = run_header(profile)
    assert header.title == f"Run held · suite quick · {WITHHELD}"
    shown = [*(c for cells in rows.values() for c in cells), header.title, header.detail,
             *header.notices, repr(agent_views(profile))]  # fmt: skip
    for fmt in ("md", "html"):
        shown.append(source.export("held", fmt, tmp_path).read_text())
    shown += [p.name for p in (tmp_path / "held_files").iterdir()]
    assert runs.leaks("\n".join(shown)) == []
    # the view-model withholds whatever profile it is handed
    operator = build_profile(runs.store, "held", n_boot=N_BOOT, reveal_held_out=True)
    assert str(HELD_SEED) not in run_header(operator).title
    assert run_header(source.profile("dev")).title.endswith(f"seed {DEV_SEED}")
