"""Condition C against the run's own LLM population on the embedded model (issue 15 item 4):
the default agent (``local``), its control and a level-2 reference player each play a beauty
contest three times and predict the others' plays; the profile scores the predictions against
the run's plays and reports each figure with its n (or why it is not estimable).

Skipped only where the model is not installed and CI is unset; `.ci/run` installs it.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import games
from harness.build import plan_agents
from harness.families import verify_items
from harness.local_model import model_status
from harness.runs import create_run, execute_stored_run
from harness.settings import load_settings
from ledger.db import open_engine
from ledger.store import Store
from reports import build_profile, render_markdown

pytestmark = [pytest.mark.model, pytest.mark.slow]

if not model_status()[0]:
    if os.environ.get("CI"):
        raise RuntimeError("the embedded model must be installed under CI: " + model_status()[1])
    pytest.skip("embedded model not installed", allow_module_level=True)


def test_the_run_predicts_its_own_plays_on_the_embedded_model(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'population.db'}"
    settings = load_settings(None, env={}, flags={"db_url": url, "home": str(tmp_path / "h")})
    settings = replace(settings, timeout=3600.0)  # a loaded machine: figures, not speed
    planned = plan_agents(settings, agents=["local"], references=("level:2",))
    assert [ra.name for ra in planned] == ["local", "local-control", "ref:level:2"]
    # one beauty contest, K = 3 plays: every predictor's population is 6 plays of the others
    items = games.make_population_scenario(7, "beauty", samples=3)
    store = Store(open_engine(url))
    run_id, _, n = create_run(store, settings, suite="baseline", planned=planned, seed=5,
                              items=items)
    assert n == 4
    asyncio.run(execute_stored_run(store, settings, run_id))  # starts and stops the model
    assert store.get_run(run_id).status == "complete"
    assert verify_items(store.run_items(run_id)) == []
    by_item: dict[str, list[Any]] = {}
    for t in store.trials(run_id):
        by_item.setdefault(t.item_id, []).append(t)
        # scored at report time, never per trial; a reply without a readable answer is
        # recorded as the harness records one for every item (no_answer)
        assert t.correct is None or t.primary_error == "no_answer", t
    for play in items[:3]:
        assert len(by_item[play.id]) == 3  # agent, control and reference all played

    profile = build_profile(store, run_id, n_boot=50)
    for name in ("local", "local-control", "ref:level:2"):
        c = profile["agents"][name]["games"]["abc"]["c_llm"]
        assert c["scenarios"] == 1 and c["samples"] == [3]
        for key in ("log_score", "brier", "top1"):
            assert reported(c[key]), (name, key, c[key])
    # the reference player's prediction is known: all mass on a level-1 play; its population
    # is the model's six plays (agent and control), whatever they were
    details = {(t.agent, t.item_id): json.loads(t.score_json or "{}").get("details", {})
               for ts in by_item.values() for t in ts}
    others = [details[(a, p.id)].get("label") for a in ("local", "local-control")
              for p in items[:3]]
    valid = [lab for lab in others if lab]
    ref = profile["agents"]["ref:level:2"]["games"]["abc"]["c_llm"]
    if len(valid) < games.POPULATION_MIN_ANSWERS:
        assert ref["reason"].startswith("not estimable: "), ref
    else:
        believed = _label(items[-1], items[-1].truth["own_level_actions"][0])
        hits = sum(lab == believed for lab in valid)
        expected = (hits * 0.0 + (len(valid) - hits) * math.log(1e-9)) / len(valid)
        assert ref["log_score"]["n"] == 1
        assert ref["log_score"]["value"] == pytest.approx(expected)
        assert ref["brier"]["value"] == pytest.approx(2 * (len(valid) - hits) / len(valid))
    levels = [details[("ref:level:2", p.id)]["label"] for p in items[:3]]
    assert levels == [_label(items[0], items[0].truth["own_level_actions"][1])] * 3
    assert "C against the run's agents" in render_markdown(profile)


def reported(figure: dict[str, Any]) -> bool:
    """A value with its n, or a reason that says it is not estimable."""
    if figure.get("value") is not None:
        return isinstance(figure.get("n"), int) and figure["n"] >= 1
    return str(figure.get("reason", "")).startswith("not estimable: ")


def _label(item: Any, value: int) -> str:
    ranges = item.truth["label_ranges"]
    return str(item.truth["labels"][next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)])
