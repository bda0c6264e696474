"""Condition C against the run's own LLM population on the embedded model (issue 15 item 4):
the default agent (``local``), its control and a level-2 reference player each play a beauty
contest three times and predict the others' plays; the profile scores the predictions against
the run's plays and reports each figure with its n (or why it is not estimable).

Skipped only where the model is not installed and CI is unset; `.ci/run` installs it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import games
from harness.run.build import plan_agents
from reports import build_profile, render_markdown
from tests.harness.embedded import embedded_settings, reported, require_embedded_model, run_stored

pytestmark = [pytest.mark.model, pytest.mark.slow]

require_embedded_model()


def test_the_run_predicts_its_own_plays_on_the_embedded_model(tmp_path: Path) -> None:
    settings = embedded_settings(tmp_path, "population.db")
    planned = plan_agents(settings, agents=["local"], references=("level:2",))
    assert [ra.name for ra in planned] == ["local", "local-control", "ref:level:2"]
    # one beauty contest, K = 3 plays: every predictor's population is 6 plays of the others
    items = games.make_population_scenario(7, "beauty", samples=3)
    store, run_id = run_stored(settings, planned, items, suite="baseline", trials=4)
    by_item: dict[str, list[Any]] = {}
    for t in store.trials(run_id):
        by_item.setdefault(t.item_id, []).append(t)
        # scored at report time, never per trial; a reply without a readable answer is
        # recorded as the harness records one for every item (no_answer)
        assert t.correct is None or t.primary_error == "no_answer", t
    for play in items[:3]:
        assert len(by_item[play.id]) == 3  # agent, control and reference all played

    profile = build_profile(store, run_id, n_boot=50)
    doc = profile.to_json()
    for name in ("local", "local-control", "ref:level:2"):
        c = doc["agents"][name]["games"]["abc"]["c_llm"]
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
    ref = doc["agents"]["ref:level:2"]["games"]["abc"]["c_llm"]
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


def _label(item: Any, value: int) -> str:
    ranges = item.truth["label_ranges"]
    return str(item.truth["labels"][next(i for i, (a, b) in enumerate(ranges) if a <= value <= b)])
