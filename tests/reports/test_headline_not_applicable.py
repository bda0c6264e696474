"""A headline row of an agent that took no NestToM story says so once a cell, ``n/a (no NestToM
trials)``, not four reasons its figures are "not estimable": ``level:2``, a games-only
reference in the quick suite every newcomer's quickstart runs, declines the stories (its
trials are n/a). Through the real runner and storage; an agent whose stories failed is not
n/a (that is the run failing, said elsewhere)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.config.settings import load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.store import Store
from reports import build_profile, render_markdown
from reports.model import RunProfile
from reports.present import NO_STORY_TRIALS, agent_headline, no_story_trials


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> RunProfile:
    path: Path = tmp_path_factory.mktemp("na") / "t.db"
    settings = load_settings(None, env={}, flags={"db_url": f"sqlite:///{path}"})
    store = Store(open_engine(settings.database_url))
    planned = plan_agents(settings, agents=(), references=("oracle", "level:2"))
    run_id, _, _ = create_run(store, settings, suite="quick", planned=planned, seed=5)
    asyncio.run(execute_stored_run(store, settings, run_id))
    try:
        return build_profile(store, run_id, n_boot=200)
    finally:
        store.engine.dispose()


def test_a_games_only_reference_reads_n_a_once_a_cell(profile: RunProfile) -> None:
    level = profile.agents["ref:level:2"]
    assert no_story_trials(level)
    h = agent_headline("ref:level:2", level)
    cells = (h.d50, h.false_belief, h.leakage_resistance, h.true_belief)
    assert cells == (NO_STORY_TRIALS,) * 4 and h.valid == "n/a"
    row = next(
        line for line in render_markdown(profile).splitlines() if line.startswith("| ref:level:2 |")
    )
    assert row.count(NO_STORY_TRIALS) == 4 and "not estimable" not in row
    # its games figures are still its own
    assert level.families is not None and (level.families["games"].n or 0) > 0


def test_an_agent_with_stories_is_not_n_a(profile: RunProfile) -> None:
    oracle = profile.agents["ref:oracle"]
    assert not no_story_trials(oracle)
    h = agent_headline("ref:oracle", oracle)
    assert NO_STORY_TRIALS not in (h.d50, h.false_belief, h.true_belief)
    assert h.valid == "yes" and h.false_belief.startswith("100.0%")


def test_stories_that_failed_are_not_n_a(profile: RunProfile) -> None:
    """The same reference with its stories recorded as API errors instead: not applicable is
    what it declined, not what failed."""
    level = profile.agents["ref:level:2"]
    assert level.api_errors is not None
    failed = level.model_copy(
        update={"api_errors": level.api_errors.model_copy(update={"by_family": {"nesttom": 22}})}
    )
    assert not no_story_trials(failed)
    assert agent_headline("ref:level:2", failed).d50 != NO_STORY_TRIALS
