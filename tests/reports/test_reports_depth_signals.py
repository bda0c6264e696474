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
from harness.config.settings import load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
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
        return build_profile(store, run_id, n_boot=200).to_json()
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
    assert [p for p in diagnose_references(RunProfile.of(profile)) if "(random)" not in p] == []


def test_diagnosis_catches_a_wrong_k_l(profile: dict[str, Any]) -> None:
    import copy

    broken = copy.deepcopy(profile)
    broken["agents"]["ref:level:3"]["depth_signals"]["K_L"]["value"] = 2.0
    broken["agents"]["ref:believer:2"]["depth_signals"]["inconsistent_player"] = False
    problems = [p for p in diagnose_references(RunProfile.of(broken)) if "(random)" not in p]
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
    assert any(line.startswith("best-response consistency") and "(chance " in line
               for line in believer)
    assert depth_signals_lines({"available": False, "reason": "x"}) == []


# -- issue 24 item 6: no depth without its doubt -----------------------------------------------


def test_random_is_not_identifiable_and_says_why(profile: dict[str, Any]) -> None:
    kb = signals(profile, "random")["K_B"]
    assert kb["identifiable"] is False
    assert kb["value"] is None and kb["ci"] is None and kb["status"] == "not_estimable"
    assert "better than chance" in kb["reason"]
    fit = kb["fit"]
    # it matched no more often than chance would: the fit's interval reaches down to 0
    assert fit["n"] == SCORED and fit["ci"][0] <= 0.0
    assert fit["p_chance"] >= fit["alpha"] and fit["matched_share"] < fit["chance"] + 0.2
    # its curve has no points either: each would be noise
    curves = profile["agents"]["ref:random"]["games"]["k_curves"]
    assert all(c["K_B"]["mean"] is None for c in curves)
    assert any(c["K_B"].get("identifiable") is False for c in curves)


@pytest.mark.parametrize("k", [2, 3])
def test_level_k_is_identified_at_its_level(profile: dict[str, Any], k: int) -> None:
    ds = signals(profile, f"level:{k}")
    for key in ("K_B", "K_L"):
        d = ds[key]
        assert d["identifiable"] is True and d["interval"] == "cluster-bootstrap-95"
        assert d["fit"]["value"] == 1.0 and d["fit"]["matched"] == SCORED
        assert not (d["ci"][0] <= k - 2 <= d["ci"][1]) and not (d["ci"][0] <= k + 2 <= d["ci"][1])


def test_believer_states_a_level_but_acts_on_none(profile: dict[str, Any]) -> None:
    ds = signals(profile, "believer:2")
    assert ds["K_L"]["identifiable"] is True and ds["K_L"]["value"] == 2
    assert ds["K_B"]["identifiable"] is False


def test_the_fit_travels_through_the_typed_model(profile: dict[str, Any]) -> None:
    parsed = RunProfile.of(profile)
    rnd = parsed.agents["ref:random"].depth_signals
    assert rnd is not None and rnd.K_B is not None
    assert rnd.K_B.identifiable is False and rnd.K_B.reason and rnd.K_B.ci is None
    assert rnd.K_B.fit is not None and rnd.K_B.fit.n == SCORED
    lvl = parsed.agents["ref:level:2"].depth_signals
    assert lvl is not None and lvl.K_B is not None and lvl.K_B.ci == (2.0, 2.0)


def test_diagnosis_catches_an_identified_random_player(profile: dict[str, Any]) -> None:
    import copy

    assert not [p for p in diagnose_references(RunProfile.of(profile)) if "K_B" in p]
    broken = copy.deepcopy(profile)
    broken["agents"]["ref:random"]["depth_signals"]["K_B"]["identifiable"] = True
    problems = diagnose_references(RunProfile.of(broken))
    assert any("(random)" in p and "identifiable" in p for p in problems)


def test_the_wording_says_not_identifiable_instead_of_a_depth(profile: dict[str, Any]) -> None:
    from reports.present import level_text

    rnd = profile["agents"]["ref:random"]["depth_signals"]
    first = depth_signals_lines(rnd)[0]
    assert first.startswith("K_B not identifiable (its actions match")
    assert level_text(rnd["K_B"]) == "not identifiable as a level-k player"
    level = depth_signals_lines(profile["agents"]["ref:level:2"]["depth_signals"])
    assert level[1].startswith("K_B level-k fit 1.00 [1.00, 1.00]: ")
    assert level_text(profile["agents"]["ref:level:2"]["depth_signals"]["K_B"]) == (
        "level 2.00 [2.00, 2.00]")


def test_a_signal_too_small_to_test_says_so_once() -> None:
    from reports.present import depth_text, level_fit_text

    small = {"value": 1.33, "n": 3, "status": "not_estimable", "identifiable": None,
             "unresolved": 1, "reason": "n = 4 trials: at least 10 are needed for an interval "
             "that keeps its coverage",
             "fit": {"value": 0.41, "n": 4, "matched": 3, "chance": 0.57}}  # fmt: skip
    assert depth_text(small) == "1.33 n=3 (not tested against chance: n < 10) (unresolved 1)"
    assert level_fit_text(small) == "level-k fit 0.41: 3 of 4 choices are some level's (chance 57%)"
    # an old profile's K_B (no fit) keeps its old wording
    old = {k: v for k, v in small.items() if k not in ("fit", "identifiable")}
    assert depth_text(old) == "1.33 n=3 (no interval: n < 10) (unresolved 1)"
