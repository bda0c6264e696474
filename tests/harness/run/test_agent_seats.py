"""Repeated games against the run's own agents (issue 15 item 4): agent vs control and agent vs
itself, with command agents playing known PD policies through real run storage, so every
figure is known exactly."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from games.repeated import agent_seat_design
from harness.agent.families import verify_items
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.run.build import plan_agents
from harness.run.execution import execute_batch
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.models import TrialRow
from ledger.store import Store
from reports import build_profile, render_markdown

PD_AGENT = str(Path(__file__).parents[1] / "scripts" / "pd_agent.py")
SEED = 20261201
C, D = "cooperation", "defection"


def settings_for(home: Path, db_url: str) -> Settings:
    settings = load_settings(None, env={}, flags={"db_url": db_url, "home": str(home)})

    def player(name: str, policy: str, **kw: Any) -> AgentConfig:
        return AgentConfig(name=name, adapter="command", command=(sys.executable, PD_AGENT, policy),
                           concurrency=2, **kw)

    return replace(settings, cache=False, agents={
        "tft": player("tft", "tit-for-tat", control="defector"),
        "defector": player("defector", "always-defect"),
        "dove": player("dove", "always-cooperate", control="broken"),
        "broken": player("broken", "fail"),
    })


def stored_run(store: Store, settings: Settings, agents: list[str], rounds: int | None = None,
               **kw: Any) -> str:
    items = agent_seat_design(SEED, 1, games=("pd",), counterfactuals=("default", "label"),
                              rounds=rounds)
    planned = plan_agents(settings, agents=agents, **kw)
    run_id, _, n = create_run(store, settings, suite="seats", planned=planned, seed=SEED,
                              items=items)
    assert n == 4  # 1 set × PD × 2 seats × 2 settings
    return run_id


def trials_by(store: Store, run_id: str) -> dict[tuple[str, str, str], TrialRow]:
    items = {it.id: it for it in store.run_items(run_id)}
    return {(t.agent, items[t.item_id].meta["seat"], items[t.item_id].meta["counterfactual"]): t
            for t in store.trials(run_id)}


def details(t: TrialRow) -> dict[str, Any]:
    return dict(json.loads(t.score_json or "{}")["details"])


def test_tit_for_tat_against_an_always_defecting_control(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", db_url)
    store = Store(open_engine(db_url))
    run_id = stored_run(store, settings, ["tft"])
    asyncio.run(execute_stored_run(store, settings, run_id))
    assert store.get_run(run_id).status == "complete"
    assert verify_items(store.run_items(run_id)) == []
    t = trials_by(store, run_id)

    # agent vs control: TFT cooperates once, then copies the defector (both seats recorded)
    for cf in ("default", "label"):
        trial = t[("tft", "control", cf)]
        assert trial.status == "ok"
        d = details(trial)
        labels = (C, D) if cf == "default" else ("stag", "hare")
        assert d["moves"] == [labels[0]] + [labels[1]] * 15
        assert d["opponent_moves"] == [labels[1]] * 16
        assert d["opponent"] == "agent:control" and d["seat"] == "control"
        assert (d["total"], d["opponent_total"]) == (1 + 2 * 15, 6 + 2 * 15)
        # hindsight benchmark: always defect scores 32, random play 24 → (31 − 24) / (32 − 24)
        assert d["benchmark"] == 32 and d["random_expected"] == 24
        assert d["exploitation"] == 0.875
        assert d["opponent_seat"]["exploitation"] == 1
        assert d["comprehension_round"] == 1 and d["opponent_seat"]["comprehension_round"] == 1
        # 16 turns of 12 tokens per seat
        assert d["tokens"] == d["opponent_seat"]["tokens"] == 192
        assert d["efficiency"] == pytest.approx(31 / 192 * 1000)
        assert d["opponent_seat"]["efficiency"] == pytest.approx(36 / 192 * 1000)
        assert d["adaptation_latency"] is None
        assert d["not_estimable"]["adaptation_latency"].startswith("not estimable: ")
        prov = json.loads(trial.provider_json or "{}")["opponent"]
        assert prov["agent"] == "defector" and prov["turns"] == 16
        assert trial.turns == 16 and trial.tokens_in == 160 and trial.tokens_out == 32
    # the control sits in its agent's seat: it has no control-seat game of its own
    assert t[("defector", "control", "default")].status == "not_applicable"

    # each seat read the game from its own side
    transcript = json.loads(t[("tft", "control", "default")].transcript_json)
    def user_text(seat: str, rnd: int) -> str:
        return next(m["content"] for m in transcript
                    if m["seat"] == seat and m["round"] == rnd and m["role"] == "user")
    assert f"Round 1: {C} / {D}: 1 / 6" in user_text("agent", 2)
    assert f"Round 1: {D} / {C}: 6 / 1" in user_text("opponent", 2)

    # agent vs itself: TFT meets TFT and both cooperate throughout; the defector meets itself
    d = details(t[("tft", "self", "default")])
    assert d["moves"] == d["opponent_moves"] == [C] * 16
    assert (d["total"], d["opponent_total"]) == (64, 64)
    assert d["exploitation"] == -1  # always defecting would have scored 96; random play 80
    assert d["efficiency"] == pytest.approx(64 / 192 * 1000)
    assert d["mutual_cooperation_rate"] == 1.0
    d = details(t[("defector", "self", "default")])
    assert (d["total"], d["exploitation"], d["mutual_cooperation_rate"]) == (32, 1, 0.0)

    # the profile's agent-seat block: every metric with a value and n, or why not
    profile = build_profile(store, run_id)
    doc = profile.to_json()
    seats = doc["agents"]["tft"]["repeated"]["agent_seats"]
    assert seats["available"] and seats["n_episodes"] == 4
    control = next(s for s in seats["by_seat"] if s["seat"] == "control")
    assert control["exploitation"]["value"] == 0.875 and control["exploitation"]["n"] == 2
    assert control["opponent_seat"]["exploitation"]["value"] == 1.0
    assert control["comprehension"]["value"] == 1.0 and control["comprehension"]["n"] == 2
    assert control["efficiency"]["value"] == pytest.approx(31 / 192 * 1000)
    assert control["adaptation_latency"]["reason"].startswith("not estimable: ")
    (gap,) = control["counterfactual_gap"]
    assert (gap["game"], gap["counterfactual"], gap["difference"], gap["n"]) == (
        "pd", "label", 0.0, 1)
    own = next(s for s in seats["by_seat"] if s["seat"] == "self")
    assert own["exploitation"]["value"] == -1.0
    # the scripted cells are not touched by the agent-seat episodes
    assert doc["agents"]["tft"]["repeated"]["n_episodes"] == 0
    ctl = doc["agents"]["defector"]["repeated"]["agent_seats"]
    assert [s["seat"] for s in ctl["by_seat"]] == ["self"]
    # the schema-checked profile renders (the agent-seat block is data in the JSON profile)
    assert "Repeated games" in render_markdown(profile)


def test_a_batch_of_one_agent_builds_the_control_in_its_seat(sqlite_url: str,
                                                             tmp_path: Path) -> None:
    """A queued batch runs one agent's items; its control still sits across the table."""
    settings = settings_for(tmp_path / "home", sqlite_url)
    store = Store(open_engine(sqlite_url))
    run_id = stored_run(store, settings, ["tft"], rounds=4)
    result = asyncio.run(execute_batch(store, settings, run_id, agents=["tft"], others_pending=None))
    assert result.summary is not None and result.summary.attempted == 4
    t = trials_by(store, run_id)
    assert {k[0] for k in t} == {"tft"}
    assert details(t[("tft", "control", "default")])["opponent_moves"] == [D] * 4


def test_without_a_control_the_control_seat_is_not_applicable(sqlite_url: str,
                                                              tmp_path: Path) -> None:
    settings = settings_for(tmp_path / "home", sqlite_url)
    store = Store(open_engine(sqlite_url))
    run_id = stored_run(store, settings, ["dove"], rounds=4, no_control=True,
                        references=["random", "oracle"])
    asyncio.run(execute_stored_run(store, settings, run_id))
    t = trials_by(store, run_id)
    assert t[("dove", "control", "default")].status == "not_applicable"
    reason = json.loads(t[("dove", "control", "default")].transcript_json)[0]["reason"]
    assert "control seat" in reason
    assert details(t[("dove", "self", "label")])["total"] == 4 * 4
    # a random reference plays a second random instance of itself; the oracle has no script
    assert t[("ref:random", "self", "default")].status == "ok"
    assert t[("ref:random", "control", "default")].status == "not_applicable"
    assert t[("ref:oracle", "self", "default")].status == "not_applicable"
    profile = build_profile(store, run_id)
    doc = profile.to_json()
    own = doc["agents"]["dove"]["repeated"]["agent_seats"]["by_seat"]
    assert [s["seat"] for s in own] == ["self"]
    ref = doc["agents"]["ref:random"]["repeated"]["agent_seats"]["by_seat"][0]
    # reference agents spend no tokens: efficiency says why it has no value
    assert ref["efficiency"]["value"] is None
    assert ref["efficiency"]["reason"].startswith("not estimable: ")


def test_an_api_error_in_the_opponent_seat_ends_the_episode(sqlite_url: str,
                                                           tmp_path: Path) -> None:
    settings = replace(settings_for(tmp_path / "home", sqlite_url), max_retries=0)
    store = Store(open_engine(sqlite_url))
    run_id = stored_run(store, settings, ["dove"], rounds=2)
    asyncio.run(execute_stored_run(store, settings, run_id))
    t = trials_by(store, run_id)
    trial = t[("dove", "control", "default")]
    assert trial.status == "api_error" and trial.correct is None
    assert "round 1, opponent seat" in (trial.error or "")
    assert json.loads(trial.answer_json or "{}")["opponent_agent"] == "broken"
    assert t[("dove", "self", "default")].status == "ok"
    assert store.get_run(run_id).status == "complete"  # an API error is a stored trial
