"""The profile's depth signals on reference players with known beliefs (issue 15): through the
real runner and storage, ``level:K`` reads K_B = K_L = K and acts on its belief; ``believer:K``
reads K_L = K with best-response consistency at chance and is flagged an inconsistent player;
each figure with the n behind it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from games import generate_items
from harness.build import plan_agents
from harness.runs import create_run, execute_stored_run
from harness.settings import load_settings
from ledger.db import open_engine
from ledger.store import Store
from reports import build_profile
from reports.model import RunProfile
from reports.present import depth_signals_lines
from reports.profile import diagnose_references

REFERENCES = ("level:2", "level:3", "believer:2", "random")
ITEMS = generate_items(2041, 48)  # both conditions, every game, canonical and balanced
SCORED = sum(1 for i in ITEMS if not i.meta["excluded"])


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path: Path = tmp_path_factory.mktemp("depth") / "t.db"
    settings = load_settings(None, env={}, flags={"db_url": f"sqlite:///{path}"})
    store = Store(open_engine(settings.database_url))
    planned = plan_agents(settings, agents=(), references=REFERENCES)
    run_id, _, _ = create_run(store, settings, suite="quick", planned=planned, seed=12,
                              items=ITEMS)
    asyncio.run(execute_stored_run(store, settings, run_id))
    try:
        return build_profile(store, run_id, n_boot=200)
    finally:
        store.engine.dispose()


def signals(profile: dict[str, Any], policy: str) -> dict[str, Any]:
    ds = profile["agents"][f"ref:{policy}"]["depth_signals"]
    assert ds["available"] and ds["n"] == SCORED
    return ds


@pytest.mark.parametrize("k", [2, 3])
def test_level_k_reads_k_b_and_k_l_exactly(profile: dict[str, Any], k: int) -> None:
    ds = signals(profile, f"level:{k}")
    for key in ("K_B", "K_L"):
        assert ds[key]["value"] == k and ds[key]["ci"] == [k, k]
        assert ds[key]["n"] == SCORED and ds[key]["unresolved"] == 0
    assert ds["K_L_minus_K_B"]["value"] == 0 and ds["K_agreement"]["value"] == 1.0
    br = ds["br_consistency"]
    assert br["value"] == 1.0 and br["n"] == SCORED and br["ci"][0] > ds["br_chance"]
    assert ds["inconsistent_player"] is False
    assert ds["chain_consistency"]["value"] == 1.0 and ds["chain_length"]["value"] == k


def test_believer_reads_k_l_and_is_flagged_inconsistent(profile: dict[str, Any]) -> None:
    ds = signals(profile, "believer:2")
    kl = ds["K_L"]
    assert kl["value"] == 2 and kl["ci"] == [2, 2] and kl["n"] == SCORED
    assert kl["unresolved"] == 0
    br = ds["br_consistency"]
    assert br["n"] == SCORED and 0 < ds["br_chance"] < 0.1
    assert br["ci"][0] <= ds["br_chance"] <= br["ci"][1]
    assert ds["inconsistent_player"] is True
    # its K_B is wherever its random action lands, rarely on its stated depth
    assert ds["K_agreement"]["value"] < 0.5 and ds["K_B"]["ci"] != [2, 2]


def test_random_states_no_belief(profile: dict[str, Any]) -> None:
    ds = signals(profile, "random")
    assert ds["K_L"]["n"] == 0 and ds["K_L"]["unresolved"] == SCORED
    assert ds["br_consistency"]["n"] == 0 and ds["inconsistent_player"] is None
    assert "inconsistent_reason" in ds


def test_profile_fits_its_schema_and_diagnoses_the_references(profile: dict[str, Any]) -> None:
    parsed = RunProfile.of(profile)
    believer = parsed.agents["ref:believer:2"].depth_signals
    assert believer is not None and believer.K_L is not None and believer.K_L.n == SCORED
    # (random's control-rule check needs NestToM items, which this games-only run has none of)
    assert [p for p in diagnose_references(profile) if "(random)" not in p] == []


def test_diagnosis_catches_a_wrong_k_l(profile: dict[str, Any]) -> None:
    import copy

    broken = copy.deepcopy(profile)
    broken["agents"]["ref:level:3"]["depth_signals"]["K_L"]["value"] = 2.0
    broken["agents"]["ref:believer:2"]["depth_signals"]["inconsistent_player"] = False
    problems = [p for p in diagnose_references(broken) if "(random)" not in p]
    assert len(problems) == 2
    assert any("level:3" in p and "K_L" in p for p in problems)
    assert any("believer:2" in p and "inconsistent" in p for p in problems)


def test_the_wording_puts_k_b_beside_k_l_and_flags_the_believer(
    profile: dict[str, Any],
) -> None:
    level = depth_signals_lines(profile["agents"]["ref:level:2"]["depth_signals"])
    assert level[0] == (f"K_B 2.00 [2.00, 2.00] n={SCORED} · K_L 2.00 [2.00, 2.00] n={SCORED}")
    assert not any("INCONSISTENT" in line for line in level)
    believer = depth_signals_lines(profile["agents"]["ref:believer:2"]["depth_signals"])
    assert any(line.startswith("INCONSISTENT PLAYER") for line in believer)
    assert "(chance " in believer[2]
    assert depth_signals_lines({"available": False, "reason": "x"}) == []
