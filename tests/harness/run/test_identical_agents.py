"""Two identical agents never come out different (the statistics issue's acceptance criterion),
on the real suites' items scored by the real scorers: a CI-sized run of
``bench/bench_identical_agents.py``, a check that the same machinery does see a real
difference, and one run of ``quick`` end to end through the runner and the OpenAI adapter."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bench.bench_identical_agents import (
    NULL_POLICY,
    ORACLE,
    NoisyOracle,
    development_seeds,
    null_study,
    zero_width_contrasts,
)
from harness.agent.agents import answer_tool_name
from harness.config.settings import load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from harness.testing import FakeOpenAI
from harness.testing.fake_openai import request_key
from ledger.db import open_engine
from ledger.store import Store
from mindledger.items import Item
from reports import analyse, load_run, render_markdown


def test_quick_identical_agents_are_never_told_apart() -> None:
    res = null_study("quick", development_seeds(20), n_boot=100)
    assert res.seeds == 20
    assert res.any_significant <= 1
    # quick is too small for any agent − control contrast to be tested (every one has n < 10):
    # the criterion holds on it because nothing is claimed, which is what the report must say
    assert res.tests == 0
    assert all(o.zero_width == () for o in res.outcomes)


def test_baseline_identical_agents_are_never_told_apart() -> None:
    res = null_study("baseline", development_seeds(3), n_boot=200)
    # the family is not empty: accuracy by depth, D50, leakage, applied gap, games, A/B/C and
    # repeated-game exploitation are all tested in every seed
    assert all(o.m >= 12 for o in res.outcomes), [o.m for o in res.outcomes]
    assert res.any_significant == 0, [o.holm_significant for o in res.outcomes]
    # three seeds x ~15 tests at 5% each: more than 8 raw hits would be a 1-in-1000 event
    assert sum(len(o.raw_significant) for o in res.outcomes) <= 8
    assert all(o.zero_width == () for o in res.outcomes)


def test_a_real_difference_is_detected_on_baseline() -> None:
    """The study can fail: a weaker agent (D50 2 instead of the oracle's ∞, games 30%) against
    an oracle control comes out significantly worse after Holm."""
    weaker = NoisyOracle(d50=2.0, games=0.3)
    res = null_study("baseline", development_seeds(1, start=100), n_boot=200,
                     agent=weaker, control=ORACLE)
    (outcome,) = res.outcomes
    assert res.any_significant == 1
    assert {"false_belief_accuracy", "games_accuracy", "leakage_resistance"} <= set(
        outcome.holm_significant), outcome.holm_significant


def test_the_policy_falls_with_depth_and_slips_into_real_errors() -> None:
    """The scripted policy is what the bench says it is (else the null study proves little)."""
    from harness.agent.families import score
    from harness.run.suites import get_suite

    items = [i for i in get_suite("baseline").build(5)
             if i.family == "nesttom" and i.meta.get("question") == "belief"
             and i.meta.get("belief") == "false" and i.meta.get("selection") != "companion"]
    rng = np.random.default_rng(0)
    by_depth: dict[int, list[bool]] = {}
    codes: set[str] = set()
    for item in items:
        s = score(item, NULL_POLICY.answer(item, rng))
        by_depth.setdefault(int(item.meta["depth_n"]), []).append(s.correct)
        if s.primary_error:
            codes.add(s.primary_error.split(":")[0])
    acc = [float(np.mean(by_depth[d])) for d in sorted(by_depth)]
    assert acc[1] > 0.8 and acc[-1] < 0.35 and acc == sorted(acc, reverse=True), acc
    assert {"reality_leak", "truncation"} <= codes


# -- end to end: the real runner, the OpenAI adapter, the store and the report ---------------


def _answer_function(items: list[Item], policy: NoisyOracle) -> Any:
    """The fake server's answer function: find the item in the last user message and answer it
    with ``policy``, drawing from a generator seeded by the request's hash — agent and control
    send different requests (their system prompts differ), so they draw independently."""
    by_prompt = sorted(((it.prompt, it) for it in items), key=lambda p: -len(p[0]))

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        user = next(m for m in reversed(body["messages"]) if m.get("role") == "user")
        item = next(it for prompt, it in by_prompt if str(user["content"]).startswith(prompt))
        rng = np.random.default_rng(int(request_key(body), 16))
        tool = answer_tool_name(item)
        field = "action" if tool == "submit_action" else "answer"
        args = {field: policy.answer(item, rng), "confidence": round(policy.p_correct(item), 3)}
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": tool, "arguments": json.dumps(args)}}]}

    return answer


def _flat(metrics: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    for key, d in metrics.items():
        if key == "accuracy_by_depth":
            out += [(f"{key}.{label}", dd) for label, dd in d.items()]
        elif isinstance(d, Mapping) and d.get("available") is not False:
            out.append((key, d))
    return out


@pytest.mark.parametrize("seed", [12, 40])
def test_quick_through_the_runner_claims_no_difference(tmp_path: Path, seed: int) -> None:
    """An agent and its control (the bare-model control ``plan_agents`` derives) behind the
    OpenAI adapter, both answered by the same noisy oracle with independent randomness, run
    through ``create_run`` / ``execute_stored_run``: the report finds no difference and, where
    n is too small, says the contrast is not estimable instead of printing an interval."""
    with FakeOpenAI() as server:
        config = tmp_path / "mindledger.toml"
        config.write_text(
            "[agents.scripted]\n"
            'adapter = "openai"\n'
            f'endpoint = "{server.base_url}"\n'
            'model = "noisy-oracle"\n'
            'answer_mode = "tools"\n'
        )
        settings = load_settings(config, env={}, flags={
            "db_url": f"sqlite:///{tmp_path / 't.db'}", "home": str(tmp_path)})
        store = Store(open_engine(settings.database_url))
        planned = plan_agents(settings, agents=("scripted",))
        assert [(a.name, a.role, a.base_agent) for a in planned] == [
            ("scripted", "agent", None), ("scripted-control", "control", "scripted")]
        run_id, _, n_items = create_run(store, settings, suite="quick", planned=planned,
                                        seed=seed)
        server.configure(answer=_answer_function(store.run_items(run_id), NULL_POLICY))
        asyncio.run(execute_stored_run(store, settings, run_id))

    trials = store.trials(run_id)
    assert len(trials) == 2 * n_items and all(t.status == "ok" for t in trials)
    answers = {(t.agent, t.item_id): t.answer_json for t in trials}
    ids = {item_id for agent, item_id in answers if agent == "scripted"}
    differ = sum(answers[("scripted", i)] != answers[("scripted-control", i)] for i in ids)
    assert differ > 0  # independent draws, not one agent twice

    profile = analyse(load_run(store, run_id), n_boot=200).profile
    doc = profile.to_json()
    assert not any((c.get("p_holm") or 1.0) < 0.05 for c in doc["contrasts"])
    block = doc["agents"]["scripted"]["minus_control"]
    assert block["available"] and block["control"] == "scripted-control"
    metrics = _flat(block["metrics"])
    assert any(key == "false_belief_accuracy" for key, _ in metrics)
    for key, d in metrics:
        if d.get("status") == "not_estimable":
            # the difference is kept, but no interval and no p-value, and it says why
            assert d.get("ci") is None and d.get("p") is None and d.get("reason"), (key, d)
        elif d.get("ci") is not None:
            lo, hi = d["ci"]
            assert lo is None or hi is None or lo < hi, (key, d)
    assert zero_width_contrasts(doc) == []
    # at quick's size (one story per depth cell) nothing is testable ...
    assert doc["multiple_comparisons"]["m"] == 0
    fb = block["metrics"]["false_belief_accuracy"]
    assert fb["status"] == "not_estimable" and fb["n"] < 10
    # ... and the rendered report says so instead of printing an interval
    md = render_markdown(profile)
    section = md.split("### Base-model subtraction", 1)[1].split("\n## ", 1)[0]
    assert "no interval: n < 10" in section or "not estimable" in section
