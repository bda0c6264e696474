"""Acceptance of issue 15 item 4 on the embedded model: an agent-vs-control repeated game runs
with the default agent (``local``) and its control, and the profile reports every metric of
seed 003 for the agent's seat — a value with its n, or "not estimable: <reason>".

Skipped only where the model is not installed and CI is unset; `.ci/run` installs it.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from games.repeated import agent_seat_design
from harness.build import plan_agents
from harness.families import verify_items
from harness.local_model import model_status
from harness.runs import create_run, execute_stored_run
from harness.settings import load_settings
from ledger.db import open_engine
from ledger.store import Store
from reports import build_profile

pytestmark = [pytest.mark.model, pytest.mark.slow]

if not model_status()[0]:
    if os.environ.get("CI"):
        raise RuntimeError("the embedded model must be installed under CI: " + model_status()[1])
    pytest.skip("embedded model not installed", allow_module_level=True)

METRICS = ("exploitation", "comprehension", "efficiency", "adaptation_latency")


def reported(figure: dict[str, Any]) -> bool:
    """A value with its n, or a reason that says it is not estimable."""
    if figure.get("value") is not None:
        return isinstance(figure.get("n"), int) and figure["n"] >= 1
    return str(figure.get("reason", "")).startswith("not estimable: ")


def test_agent_versus_control_on_the_embedded_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    url = f"sqlite:///{tmp_path / 'seats.db'}"
    settings = load_settings(None, env={}, flags={"db_url": url, "home": str(home)})
    # a loaded CI machine can take minutes per turn: the test is about the figures, not speed
    settings = replace(settings, timeout=3600.0)
    planned = plan_agents(settings, agents=["local"])
    assert [(ra.name, ra.role) for ra in planned] == [("local", "agent"),
                                                      ("local-control", "control")]
    # a tiny matched set: PD in the default and the label setting, 3 rounds, agent vs control
    items = agent_seat_design(5, 1, games=("pd",), seats=("control",),
                              counterfactuals=("default", "label"), rounds=3)
    store = Store(open_engine(url))
    run_id, _, n = create_run(store, settings, suite="seats", planned=planned, seed=5,
                              items=items)
    assert n == 2
    asyncio.run(execute_stored_run(store, settings, run_id))  # starts and stops the model
    assert store.get_run(run_id).status == "complete"
    assert verify_items(store.run_items(run_id)) == []

    trials: dict[str, list[Any]] = {}
    for t in store.trials(run_id):
        trials.setdefault(t.agent, []).append(t)
    assert {t.status for t in trials["local"]} == {"ok"}
    assert {t.status for t in trials["local-control"]} == {"not_applicable"}
    for t in trials["local"]:
        d = json.loads(t.score_json or "{}")["details"]
        # both seats' moves were recorded, each seat spent its own model tokens
        assert len(d["moves"]) == len(d["opponent_moves"]) == 3
        assert d["tokens"] > 0 and d["opponent_seat"]["tokens"] > 0
        assert json.loads(t.provider_json or "{}")["opponent"]["agent"] == "local-control"

    seats = build_profile(store, run_id)["agents"]["local"]["repeated"]["agent_seats"]
    assert seats["available"]
    (control,) = seats["by_seat"]
    assert control["seat"] == "control" and control["n_episodes"] == 2
    for metric in METRICS:
        assert reported(control[metric]), (metric, control[metric])
    for metric in ("exploitation", "comprehension", "efficiency"):
        assert reported(control["opponent_seat"][metric]), (metric, control["opponent_seat"])
    assert control["adaptation_latency"]["value"] is None  # no scripted switch: says why
    gaps = control["counterfactual_gap"]
    assert [(g["game"], g["counterfactual"]) for g in gaps] == [("pd", "label")]
    assert reported(gaps[0]), gaps[0]
