"""The profile's repeated-games section (family "repeated"): a real stored run of repeated-game
episodes played by reference policies, scored by the harness, read back through the store."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from games.repeated import b6_episodes, counterfactual_design, reference_answer
from harness.agent.agents import Attempt
from harness.run.runner import score_attempt
from ledger.db import open_engine
from ledger.store import RunAgent, Store
from mindledger.items import Item
from reports import build_profile, render_html, render_json, render_markdown
from reports.model import RunProfile
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run

RUN = "run-rp"
PLAYER_TOKENS = 2000

AGENTS = [
    RunAgent("oracle", "reference", {"policy": "oracle"}),
    RunAgent("random", "reference", {"policy": "random"}),
    RunAgent("player", "agent", {"adapter": "test", "model": "m"}),
    RunAgent("player-control", "control", {"adapter": "test", "model": "m"}, "player"),
]
POLICY = {"oracle": "oracle", "random": "random", "player": "myopic", "player-control": "random"}


@dataclass
class Built:
    store: Store
    items: list[Item]
    details: dict[str, list[dict[str, Any]]]
    profile: dict[str, Any]
    """The profile's JSON form."""
    typed: RunProfile


def _answer(agent: str, item: Item, i: int, rng: np.random.Generator) -> dict[str, Any]:
    ans = reference_answer(item, POLICY[agent], rng)
    if agent == "player":
        ans["tokens"] = PLAYER_TOKENS
        if i % 4 == 0:  # an unparseable move now and then
            ans["moves"][0] = None
    return ans


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    # the balanced design at 4 episodes per cell (one matched set per opponent and game: 32
    # episodes) plus the four B6 bots once each
    items = counterfactual_design(5, 4) + b6_episodes(6, 1)
    path: Path = tmp_path_factory.mktemp("repeated") / "rp.db"
    store = Store(open_engine(f"sqlite:///{path}"))
    store.create_run(RUN, suite="repeated-test", seed=3, held_out=False, params={},
                     agents=AGENTS, items=items)
    details: dict[str, list[dict[str, Any]]] = {}
    for k, a in enumerate(AGENTS):
        rng = np.random.default_rng(100 + k)
        details[a.name] = []
        for i, item in enumerate(items):
            rec = score_attempt(RUN, a.name, item,
                                Attempt(answer=_answer(a.name, item, i, rng)))
            assert rec.status == "ok" and rec.score is not None
            details[a.name].append(rec.score["details"])
            store.record_trial(rec)
    store.set_run_status(RUN, "complete", finished=True)
    profile = build_profile(store, RUN, seed=2, n_boot=400)
    yield Built(store, items, details, profile.to_json(), profile)
    store.engine.dispose()


def _cell(rp: dict[str, Any], game: str, cf: str) -> dict[str, Any]:
    (cell,) = [c for c in rp["by_game_counterfactual"]
               if c["game"] == game and c["counterfactual"] == cf]
    return cell


def _defined(ds: list[dict[str, Any]]) -> list[float]:
    return [float(d["exploitation"]) for d in ds if d["exploitation"] is not None]


def test_oracle_exploits_and_random_does_not(built: Built) -> None:
    oracle = built.profile["agents"]["oracle"]["repeated"]
    rnd = built.profile["agents"]["random"]["repeated"]
    assert oracle["available"] and rnd["available"]
    # the counterfactual cells' episodes; the four B6 episodes are reported on their own
    assert oracle["n_episodes"] == len(built.items) - 4 == 32
    assert oracle["b6"]["n"] == 4
    cells = [d for d, it in zip(built.details["oracle"], built.items, strict=True)
             if "switch_round" not in it.meta]
    ex_o = oracle["exploitation"]
    assert ex_o["value"] == pytest.approx(np.mean(_defined(cells)))
    assert ex_o["value"] == pytest.approx(1.0, abs=0.15)
    assert ex_o["ci"][0] < ex_o["value"] < ex_o["ci"][1]
    assert ex_o["interval"] == "t-95"
    assert rnd["exploitation"]["value"] < 0.5 < ex_o["value"]
    # exploitation is undefined against the RPS equilibrium player, and said so
    eq = _cell(oracle, "rps", "default")["exploitation"]
    assert eq["n_undefined"] >= 1
    assert "equilibrium" in eq["note"]


def test_cells_match_the_scored_episodes(built: Built) -> None:
    for agent in ("oracle", "random", "player"):
        rp = built.profile["agents"][agent]["repeated"]
        cells = {(c["game"], c["counterfactual"]): c for c in rp["by_game_counterfactual"]}
        assert set(cells) == {(g, c) for g in ("pd", "rps")
                              for c in ("default", "label", "payoff", "joint")}
        for (g, cf), cell in cells.items():
            ds = [d for d, it in zip(built.details[agent], built.items, strict=True)
                  if it.meta["game"] == g and it.meta["counterfactual"] == cf
                  and "switch_round" not in it.meta]
            assert cell["n_episodes"] == len(ds) == 4
            comp = [d["comprehension_round"] for d in ds if d["comprehended"]]
            assert cell["comprehension"]["k"] == len(comp)
            assert cell["comprehension"]["value"] == pytest.approx(len(comp) / len(ds))
            if comp:
                assert cell["comprehension"]["median_m"] == pytest.approx(np.median(comp))
            else:
                assert cell["comprehension"]["median_m"] is None
            inv = sum(len(d["invalid_rounds"]) for d in ds)
            assert cell["invalid_moves"]["invalid_rounds"] == inv
            assert cell["invalid_moves"]["value"] == pytest.approx(
                inv / sum(d["rounds"] for d in ds))
            ex = _defined(ds)
            if ex:
                assert cell["exploitation"]["value"] == pytest.approx(np.mean(ex))
    # the oracle understands the games at least as often as random play
    o = built.profile["agents"]["oracle"]["repeated"]["by_game_counterfactual"]
    r = built.profile["agents"]["random"]["repeated"]["by_game_counterfactual"]
    assert sum(c["comprehension"]["k"] for c in o) > sum(c["comprehension"]["k"] for c in r)
    # invalid moves: only the player made some
    assert all(c["invalid_moves"]["value"] == 0 for c in o)
    player = built.profile["agents"]["player"]["repeated"]["by_game_counterfactual"]
    assert sum(c["invalid_moves"]["invalid_rounds"] for c in player) == 8  # items 0, 4, … 28
    assert player_b6_invalid(built) == 1  # item 32, the first B6 episode


def player_b6_invalid(built: Built) -> int:
    rp = built.profile["agents"]["player"]["repeated"]
    return int(rp["b6"]["invalid_moves"]["invalid_rounds"])


def test_efficiency_b6_and_counterfactual_gap(built: Built) -> None:
    agents = built.profile["agents"]
    # references play without a model: no tokens, so no efficiency, and the reason says so
    eff_o = _cell(agents["oracle"]["repeated"], "pd", "default")["efficiency"]
    assert eff_o["value"] is None and "no token counts" in eff_o["reason"]
    eff_p = _cell(agents["player"]["repeated"], "pd", "default")["efficiency"]
    ds = [d for d, it in zip(built.details["player"], built.items, strict=True)
          if it.meta["game"] == "pd" and it.meta["counterfactual"] == "default"]
    assert eff_p["value"] == pytest.approx(
        np.mean([d["total"] / PLAYER_TOKENS * 1000 for d in ds]))
    # B6 is reported on its own, in no counterfactual cell
    rp_o = agents["oracle"]["repeated"]
    b6 = rp_o["b6"]
    assert b6["available"] and b6["n"] == 4
    assert not _cell(rp_o, "rps", "default")["b6"]["available"]
    b6_details = [d for d, it in zip(built.details["oracle"], built.items, strict=True)
                  if "switch_round" in it.meta]
    adapted = [d["adaptation_latency"] for d in b6_details if d["adapted"]]
    assert b6["adapted"]["k"] == len(adapted)
    if adapted:
        assert b6["adaptation_latency"]["value"] == pytest.approx(np.mean(adapted))
    assert "on their own" in _cell(rp_o, "pd", "default")["b6"]["reason"]
    # counterfactual gap: default − each setting, per game and both games, over matched sets
    # (one per opponent here: too few for an interval, and said so)
    gaps = {(g["game"], g["counterfactual"]): g for g in rp_o["counterfactual_gap"]}
    assert set(gaps) == {(g, c) for g in ("pd", "rps", "pd+rps")
                         for c in ("label", "payoff", "joint")}
    for gap in gaps.values():
        assert gap["available"] and gap["n_pairs"] <= 8
        assert gap["status"] == "not_estimable" and "at least 10" in gap["reason"]


def test_minus_control_on_exploitation(built: Built) -> None:
    profile = built.profile
    mc = profile["agents"]["player"]["minus_control"]
    assert mc["available"] and mc["control"] == "player-control"
    d = mc["metrics"]["repeated_exploitation"]
    px = built.details["player"]
    py = built.details["player-control"]
    both = [(a["exploitation"], b["exploitation"]) for a, b in zip(px, py, strict=True)
            if a["exploitation"] is not None and b["exploitation"] is not None]
    assert d["n"] == len(both)
    assert d["difference"] == pytest.approx(np.mean([a - b for a, b in both]))
    assert d["ci"][0] < d["difference"] < d["ci"][1]
    assert d["interval"] == "paired-t-95" and d["test"].startswith("sign-flip permutation")
    assert d["difference"] > 0  # myopic best replies beat random play
    assert any(c["metric"] == "repeated_exploitation" for c in profile["contrasts"])
    # references are not under test
    assert profile["agents"]["oracle"]["minus_control"]["available"] is False


def test_renderings_contain_the_section(built: Built) -> None:
    profile = built.typed
    md = render_markdown(profile)
    assert "### Repeated games" in md
    assert "| game | counterfactual | episodes | exploitation [N]" in md
    assert "Counterfactual gap on exploitation" in md
    assert "B6 (switching bots, apart from the counterfactual cells): 4 episodes" in md
    assert "no token counts" in md
    assert "| repeated-game exploitation |" in md
    html = render_html(profile)
    assert "<h3>Repeated games</h3>" in html
    assert "<th>exploitation [N]</th>" in html
    assert "<td>rps</td>" in html
    section = html[html.index("<h3>Repeated games</h3>"):]
    section = section[:section.index("API errors:")]
    assert "|---|" not in section  # a real table, row by row
    js = json.loads(render_json(profile))
    rp = js["agents"]["oracle"]["repeated"]
    assert rp["available"] and rp["by_game_counterfactual"]
    assert not any(isinstance(v, float) and not math.isfinite(v)
                   for v in _leaves(rp))


def _leaves(v: Any) -> Iterator[Any]:
    if isinstance(v, dict):
        for x in v.values():
            yield from _leaves(x)
    elif isinstance(v, list):
        for x in v:
            yield from _leaves(x)
    else:
        yield v


def test_runs_without_episodes_say_so() -> None:
    from reports.profile import profile_from_data

    run = synthetic_run(np.random.default_rng(1),
                        [SyntheticAgent("a", logistic_accuracy(2.0, -1.0, 0.25))],
                        stories=3)
    prof = profile_from_data(run.run_data(), n_boot=50)
    rp = prof.to_json()["agents"]["a"]["repeated"]
    assert rp == {"available": False, "reason": "no repeated-game episodes in this run"}
    assert "Repeated games" not in render_markdown(prof)
