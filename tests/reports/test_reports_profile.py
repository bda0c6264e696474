"""The profile of synthetic runs stored through the real Store: known values are recovered,
anti-inflation and held-out marking, base-model subtraction and ablation credit, references."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ledger.db import open_engine
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.errors import NotFoundError
from mindledger.items import Item
from reports import build_profile, diagnose_references, profile_from_data
from reports.model import Estimate, RunProfile
from reports.profile import analyse
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run

StoredRun = Any  # the conftest fixture's type (tests/ has no packages to import it from)


REQUIRED_KEYS = {
    "d50", "leakage_resistance", "accuracy_by_depth", "true_belief_control_accuracy", "valid",
    "error_types_by_depth", "games", "calibration", "minus_control", "ablation_credit",
}


@pytest.fixture
def profile(stored_profile: RunProfile) -> dict[str, Any]:
    return stored_profile.to_json()  # the JSON form, a copy each test may not spoil


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}[{i}]")


def test_build_profile_returns_the_typed_profile(stored_profile: RunProfile) -> None:
    """``build_profile`` hands over the schema's own model, not a dict to read by key."""
    assert typing.get_type_hints(build_profile)["return"] is RunProfile
    assert typing.get_type_hints(profile_from_data)["return"] is RunProfile
    assert isinstance(stored_profile, RunProfile)
    assert stored_profile.agents["oracle"].d50.status == "beyond"


def test_the_typed_profile_writes_back_the_same_bytes(profile: dict[str, Any]) -> None:
    """Parsing a profile's JSON and writing it again changes nothing: no key moves, no key
    appears (a default not given stays unwritten) and an integer stays an integer."""
    again = RunProfile.of(profile).to_json()
    assert again == profile
    assert json.dumps(again) == json.dumps(profile)
    given = {"n": 4, "value": 1, "k": 4, "ci": [0, 1], "later": "kept"}  # not the field order
    written = Estimate.model_validate(given).model_dump(mode="json", exclude_unset=True)
    assert json.dumps(written) == json.dumps(given)  # not "value": 1.0, "ci": [0.0, 1.0]


def test_json_shape_every_figure_has_n_and_names_its_interval(profile: dict[str, Any]) -> None:
    json.dumps(profile, allow_nan=False)  # strict JSON: no NaN anywhere
    assert set(profile["agents"]) == {
        "piper", "piper-control", "piper-no-perspective", "piper-no-witness-log", "oracle",
        "depth-capped:2", "not-reality",
    }
    for name, agent in profile["agents"].items():
        assert set(agent) >= REQUIRED_KEYS, name
    checked = 0
    for path, d in _walk(profile["agents"]):
        if d.get("ci") is not None and ("value" in d or "difference" in d):
            assert "n" in d or "n_a" in d, path
            assert d.get("interval"), path
            assert d["interval"].split(" ")[0] in profile["intervals"]["kinds"] or \
                d["interval"].startswith("bootstrap-percentile-95"), path
            checked += 1
    assert checked > 100
    assert profile["intervals"]["bootstrap_seed"] == 1
    assert profile["multiple_comparisons"]["method"] == "holm"


def test_d50_and_accuracy_recover_known_values(profile: dict[str, Any],
                                               known: dict[str, float]) -> None:
    D50_AGENT, D50_CONTROL = known["d50_agent"], known["d50_control"]
    piper = profile["agents"]["piper"]
    d50 = piper["d50"]
    assert d50["status"] == "estimated"
    assert d50["value"] == pytest.approx(D50_AGENT, abs=0.5)
    lo, hi = d50["ci"]
    assert lo < D50_AGENT < hi
    assert d50["chance"] == pytest.approx(0.25) and d50["halfway"] == pytest.approx(0.625)
    control = profile["agents"]["piper-control"]["d50"]
    assert control["value"] == pytest.approx(D50_CONTROL, abs=0.5)
    f = logistic_accuracy(D50_AGENT, -1.2, 0.25)
    for label, cell in piper["accuracy_by_depth"]["false"].items():
        assert cell["ci"][0] - 0.05 <= f(cell["depth_n"]) <= cell["ci"][1] + 0.05, label
        assert cell["interval"] in ("wilson-95", "cluster-bootstrap-95")
        assert cell["n"] > 0
    slope = piper["degradation_slope"]
    assert slope["status"] == "estimated" and slope["ci"][0] < -1.2 < slope["ci"][1]
    assert "length" in slope["model"]
    joint = piper["joint_accuracy_by_depth"]["false"]
    assert joint["R5"]["value"] <= piper["accuracy_by_depth"]["false"]["R5"]["value"]


def test_anti_inflation_marks_invalid_first(profile: dict[str, Any]) -> None:
    bad = profile["agents"]["not-reality"]
    assert bad["valid"] is False
    assert bad["true_belief_control_accuracy"]["value"] < 0.9
    assert bad["notices"][0].startswith("INVALID")
    assert any(n.startswith("INVALID: not-reality") for n in profile["notices"])
    assert profile["agents"]["piper"]["valid"] is True
    assert profile["agents"]["piper"]["notices"] == []


def test_references_get_the_profile_they_must(profile: dict[str, Any]) -> None:
    assert diagnose_references(RunProfile.of(profile)) == []
    assert profile["agents"]["oracle"]["d50"]["status"] == "beyond"
    capped = profile["agents"]["depth-capped:2"]["d50"]
    assert capped["status"] == "bracketed"
    assert (capped["lower_bound"], capped["upper_bound"]) == (2, 3)
    # the check itself catches a wrong profile
    broken = json.loads(json.dumps(profile))
    broken["agents"]["not-reality"]["valid"] = True
    broken["agents"]["oracle"]["d50"] = {"status": "estimated", "value": 3.0, "display": "3.0"}
    assert len(diagnose_references(RunProfile.of(broken))) == 2


def test_minus_control_and_ablation_credit_signs(profile: dict[str, Any],
                                                 known: dict[str, float]) -> None:
    D50_AGENT, D50_CONTROL = known["d50_agent"], known["d50_control"]
    mc = profile["agents"]["piper"]["minus_control"]
    assert mc["available"] and mc["control"] == "piper-control"
    fb = mc["metrics"]["false_belief_accuracy"]
    assert fb["difference"] > 0 and fb["ci"][0] > 0
    assert fb["interval"] == "newcombe-paired-95" and fb["test"] == "exact McNemar"
    assert fb["difference"] == pytest.approx(fb["agent"] - fb["control"])
    d50 = mc["metrics"]["d50"]
    assert d50["difference"] > 0 and d50["difference"] == pytest.approx(
        D50_AGENT - D50_CONTROL, abs=0.7
    )
    lr = mc["metrics"]["leakage_resistance"]
    assert lr["difference"] > 0  # the control leaks more (leak_share 0.7, lower accuracy)
    assert mc["metrics"]["applied_gap"]["n"] > 0
    # piper predicts behaviour as well as it knows beliefs; its control (behaviour 50%) does not
    gap = profile["agents"]["piper"]["applied_gap"]
    control_gap = profile["agents"]["piper-control"]["applied_gap"]
    assert abs(gap["value"]) < 0.15 and control_gap["ci"][0] > 0
    assert mc["metrics"]["applied_gap"]["difference"] < 0
    credit = profile["agents"]["piper"]["ablation_credit"]
    assert set(credit) == {"perspective-filtering", "witness-log"}
    pf = credit["perspective-filtering"]["metrics"]["false_belief_accuracy"]
    assert pf["difference"] > 0 and pf["ci"][0] > 0
    wl = credit["witness-log"]["metrics"]["false_belief_accuracy"]
    assert wl["ci"][0] < 0 < wl["ci"][1]  # same accuracies: no credit
    # Holm across every contrast shown: adjusted p never below raw p, and listed at top level
    assert profile["contrasts"]
    for c in profile["contrasts"]:
        assert c["p_holm"] >= c["p"] - 1e-12
    assert profile["multiple_comparisons"]["m"] == len(profile["contrasts"])
    assert profile["agents"]["oracle"]["minus_control"]["available"] is False


def test_api_errors_are_excluded_and_counted(stored_run: StoredRun,
                                             profile: dict[str, Any]) -> None:
    trials = [t for t in stored_run.run.trials if t.agent == "piper"]
    errors = sum(t.status == "api_error" for t in trials)
    assert errors > 0
    api = profile["agents"]["piper"]["api_errors"]
    assert api["count"] == errors and api["excluded_from_accuracy"] is True
    fb_ok = sum(
        1 for t in trials
        if t.status == "ok" and (it := _item(stored_run, t.item_id)).family == "nesttom"
        and it.meta["belief"] == "false" and it.meta["question"] == "belief"
    )
    assert profile["agents"]["piper"]["false_belief_accuracy"]["n"] == fb_ok


def _item(run: StoredRun, item_id: str) -> Item:
    return next(i for i in run.run.items if i.id == item_id)


def test_games_calibration_cost_sections(profile: dict[str, Any]) -> None:
    g = profile["agents"]["piper"]["games"]
    assert g["available"] and g["by_game_condition"] and g["k_curves"]
    assert g["abc"]["dissociation"]["n"] == 8  # 2 games x 4 scenarios
    assert g["abc"]["log_score_c"]["value"] < 0
    cal = profile["agents"]["piper"]["calibration"]
    assert cal["available"] and 0 <= cal["ece"]["value"] < 0.2 and cal["reliability"]
    assert cal["confidence_depth_slope"]["value"] < 0  # confidence tracks accuracy down
    assert profile["agents"]["oracle"]["calibration"]["available"] is False
    cost = profile["agents"]["piper"]["cost"]["by_depth"]
    assert cost["R5"]["tokens_per_correct"] > cost["R1"]["tokens_per_correct"]


def test_held_out_run_is_marked_and_unknown_run_raises(tmp_path: Any) -> None:
    store = Store(open_engine(f"sqlite:///{tmp_path / 'h.db'}"))
    run = synthetic_run(
        np.random.default_rng(3),
        [SyntheticAgent("a", logistic_accuracy(2.5, -1.2, 0.25), confidence_noise=None)],
        stories=4, behaviour_every=0,
    )
    run.write(store, "held", held_out=True)
    p = build_profile(store, "held", n_boot=200)
    assert p.held_out is True and p.notices[0].startswith("HELD-OUT")
    with pytest.raises(NotFoundError, match="no run with id 'nope'"):
        build_profile(store, "nope")


def test_missing_meta_says_what_cannot_be_computed(tmp_path: Any) -> None:
    """Items without depth, belief or choices: every metric says why, nothing is invented."""
    store = Store(open_engine(f"sqlite:///{tmp_path / 'm.db'}"))
    items = [
        Item(family="nesttom", generator="g", version="1", seed=i, params={}, prompt="?",
             answer={"kind": "free"}, truth={"answer": "x"},
             meta={"belief": "false", "question": "belief"} if i % 2 else {})
        for i in range(12)
    ]
    store.create_run("m", suite="s", seed=0, held_out=False, params={},
                     agents=[RunAgent("a", "agent", {})], items=items)
    for i, it in enumerate(items):
        store.record_trial(TrialRecord(run_id="m", agent="a", item_id=it.id, status="ok",
                                       transcript=[], correct=i % 3 == 0, confidence=150.0))
    p = build_profile(store, "m", n_boot=200).to_json()
    a = p["agents"]["a"]
    assert a["d50"]["status"] == "not_estimable" and a["d50"]["reason"]
    assert a["valid"] is None and a["notices"][0].startswith("UNCHECKED")
    assert a["games"]["available"] is False and a["games"]["reason"]
    assert a["applied_gap"]["available"] is False
    assert a["calibration"]["available"] is False or "note" in a["calibration"]
    json.dumps(p, allow_nan=False)


def test_real_nesttom_items_and_reference_reasoners(tmp_path: Any) -> None:
    """The acceptance check on real generated items: NestToM's own reference reasoners, scored
    by its scorer, stored through the Store, diagnosed by the profile as what they are."""
    from nesttom import b1_items, reference_answer, score

    items = b1_items(5, per_cell=5)
    store = Store(open_engine(f"sqlite:///{tmp_path / 'n.db'}"))
    policies = ["oracle", "depth-capped:2", "not-reality", "reality-leak"]
    store.create_run(
        "quick-ish", suite="b1-mini", seed=5, held_out=False, params={},
        agents=[RunAgent(p, "reference", {"adapter": "reference", "policy": p})
                for p in policies],
        items=items,
    )
    rng = np.random.default_rng(0)
    for p in policies:
        for it in items:
            ans = reference_answer(it, p, rng)
            sc = score(it, ans)
            store.record_trial(TrialRecord(
                run_id="quick-ish", agent=p, item_id=it.id, status="ok", transcript=[],
                answer=ans, correct=sc.correct, score_value=sc.value,
                primary_error=sc.primary_error, score=sc.to_dict(),
            ))
    prof = build_profile(store, "quick-ish", n_boot=300)
    assert diagnose_references(prof) == []
    assert prof.agents["oracle"].d50.lower_bound == 5
    leakage = prof.agents["reality-leak"].leakage_resistance.value
    assert leakage is not None and leakage < 0.5


def test_profile_reads_sqlite_and_postgresql_alike(db_url: str) -> None:
    """The column loader issues plain SQLAlchemy Core queries: same profile on both backends."""
    store = Store(open_engine(db_url))
    run = synthetic_run(
        np.random.default_rng(9),
        [SyntheticAgent("a", logistic_accuracy(2.5, -1.2, 0.25)),
         SyntheticAgent("a-control", logistic_accuracy(1.5, -1.2, 0.25), role="control",
                        base_agent="a", api_error_rate=0.1)],
        stories=4, games=1, abc_scenarios=1, items_per_game_cell=1,
    )
    run.write(store, "pg-or-not")
    p = build_profile(store, "pg-or-not", n_boot=200).to_json()
    local = profile_from_data(run.run_data("pg-or-not"), n_boot=200).to_json()
    assert p["agents"]["a"]["accuracy_by_depth"] == local["agents"]["a"]["accuracy_by_depth"]
    assert p["agents"]["a"]["minus_control"]["metrics"]["false_belief_accuracy"] == \
        local["agents"]["a"]["minus_control"]["metrics"]["false_belief_accuracy"]
    assert p["agents"]["a-control"]["api_errors"]["count"] == sum(
        t.status == "api_error" for t in run.trials if t.agent == "a-control")
    store.engine.dispose()


def test_a_second_control_is_a_typed_contrast_outside_the_holm_family() -> None:
    """An agent with two controls: the first is its minus_control (in the Holm family), the
    second is under other_controls, a ContrastSection whose tests are not adjusted; the JSON
    reads back the same."""
    curve = logistic_accuracy(2.5, -1.2, 0.25)
    agents = [
        SyntheticAgent("piper", curve, confidence_noise=None),
        SyntheticAgent("piper-control", logistic_accuracy(1.5, -1.2, 0.25), role="control",
                       base_agent="piper", confidence_noise=None),
        SyntheticAgent("piper-bare", logistic_accuracy(1.0, -1.2, 0.25), role="control",
                       base_agent="piper", confidence_noise=None),
    ]
    run = synthetic_run(np.random.default_rng(7), agents, stories=12, games=0, abc_scenarios=0)
    profile = analyse(run.run_data("two-controls"), seed=1, n_boot=100).profile
    piper = profile.agents["piper"]
    assert piper.minus_control is not None and piper.minus_control.control == "piper-control"
    assert piper.other_controls is not None and set(piper.other_controls) == {"piper-bare"}
    bare = piper.other_controls["piper-bare"].metrics
    assert bare is not None and bare.false_belief_accuracy is not None
    assert bare.false_belief_accuracy.p is not None and bare.false_belief_accuracy.p_holm is None
    assert {c.other for c in profile.contrasts} == {"piper-control"}
    doc = profile.to_json()
    assert RunProfile.of(doc).to_json() == doc
