"""The lines ``mindledger quickstart`` ends with come from the run's profile: constructed profiles
with different outcomes give different lines (the real quickstart run, in
``test_local_model.py``, checks that the printed lines are these for its own profile)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from harness.cli.quickstart_cmd import DASHBOARD_COMMAND, README_SECTION, explain_run

README = Path(__file__).resolve().parents[2] / "README.md"


def _proportion(k: int, n: int) -> dict[str, Any]:
    return {"value": k / n, "k": k, "n": n, "status": "not_estimable", "reason": "small n"}


def _agent(
    *,
    role: str,
    valid: bool | None,
    fb: tuple[int, int] = (3, 7),
    tb: tuple[int, int] = (2, 7),
    rc: tuple[int, int] = (0, 2),
    d50: dict[str, Any] | None = None,
    policy: str | None = None,
    leakage: float = 0.5,
    k_l: float | None = None,
) -> dict[str, Any]:
    return {
        "role": role,
        "spec": {"adapter": "reference", "policy": policy} if policy else {"adapter": "local"},
        "valid": valid,
        "validity": {"valid": valid, "threshold": 0.9, "rule": "controls >= 90%"},
        "false_belief_accuracy": _proportion(*fb),
        "true_belief_control_accuracy": _proportion(*tb),
        "reality_check": _proportion(*rc),
        "leakage_resistance": {"value": leakage, "n": 7},
        "d50": d50 or {"status": "not_estimable", "display": "not estimable", "chance": 0.2},
        "depth_signals": (
            {"available": True, "K_L": {"value": k_l}, "K_B": {"value": k_l},
             "br_consistency": {"value": 1.0}}
            if k_l is not None
            else {"available": False}
        ),
    }


DEPTHS = [1.0, 2.0, 3.0, 4.0, 5.0]


def _references() -> dict[str, dict[str, Any]]:
    return {
        "ref:oracle": _agent(
            role="reference", valid=True, policy="oracle", fb=(7, 7), tb=(7, 7), rc=(2, 2),
            leakage=1.0,
            d50={"status": "beyond", "lower_bound": 5.0, "depths_tested": DEPTHS,
                 "display": "> 5 (beyond the deepest level tested)"},
        ),
        "ref:depth-capped:2": _agent(
            role="reference", valid=True, policy="depth-capped:2", fb=(3, 7), tb=(7, 7),
            rc=(2, 2), leakage=1.0,
            d50={"status": "bracketed", "lower_bound": 2.0, "upper_bound": 3.0,
                 "depths_tested": DEPTHS, "display": "between 2 and 3"},
        ),
        "ref:reality-leak": _agent(
            role="reference", valid=True, policy="reality-leak", fb=(0, 7), tb=(7, 7),
            rc=(2, 2), leakage=0.0,
            d50={"status": "below", "upper_bound": 1.0, "depths_tested": DEPTHS,
                 "display": "< 1 (below the shallowest level tested)"},
        ),
        "ref:not-reality": _agent(role="reference", valid=False, policy="not-reality"),
        "ref:random": _agent(role="reference", valid=False, policy="random"),
        "ref:level:2": _agent(role="reference", valid=None, policy="level:2", k_l=2.0),
    }  # fmt: skip


def _profile(local: dict[str, Any]) -> dict[str, Any]:
    return {"agents": {"local": local, **_references()}}


def test_an_invalid_agent_at_chance_is_said_to_be_invalid_with_its_own_figures() -> None:
    lines = explain_run(_profile(_agent(role="agent", valid=False, fb=(3, 7), tb=(2, 7))))
    text = "\n".join(lines)
    assert lines[0] == "What you just saw:"
    assert "local, the agent under test, answered 3 of the 7 false-belief questions (43%) " \
           "right: no better than the 20% that guessing gets." in lines  # fmt: skip
    assert "2 of the 7 true-belief controls (29%) and 0 of the 2 reality checks (0%)" in text
    assert "marked INVALID" in text and "below the 90%" in text
    # a different run, different figures
    other = "\n".join(explain_run(_profile(_agent(role="agent", valid=False, fb=(1, 9),
                                                  tb=(9, 10), rc=(1, 3)))))  # fmt: skip
    assert "1 of the 9 false-belief questions (11%)" in other
    assert "1 of the 3 reality checks (33%)" in other and "true-belief controls" not in other


def test_a_valid_agent_above_chance_is_not_called_invalid() -> None:
    d50 = {"status": "estimated", "value": 3.1, "display": "3.10 [2.81, 3.42]", "chance": 0.25}
    lines = explain_run(_profile(_agent(role="agent", valid=True, fb=(38, 40), tb=(40, 40),
                                        rc=(10, 10), d50=d50)))  # fmt: skip
    text = "\n".join(lines)
    assert "answered 38 of the 40 false-belief questions (95%) right: above the 25% that " \
           "guessing gets." in text  # fmt: skip
    assert "It passed the controls (40 of the 40 true-belief controls (100%) and 10 of the " \
           "10 reality checks (100%) right), so its profile counts: D50 3.10 [2.81, 3.42]." \
           in lines  # fmt: skip
    assert "INVALID" not in text


def test_below_chance_and_unchecked_validity() -> None:
    d50 = {"status": "not_estimable", "display": "not estimable", "chance": 0.5}
    text = "\n".join(explain_run(_profile(_agent(role="agent", valid=None, fb=(0, 30), d50=d50))))
    assert "below the 50% that guessing gets" in text
    assert "whether its profile counts is unchecked" in text and "INVALID" not in text


def test_the_references_line_quotes_the_profile_and_its_diagnosis() -> None:
    line = explain_run(_profile(_agent(role="agent", valid=False)))[-3]
    assert line == (
        "The reference agents are scripted reasoners, and the suite diagnosed each as what it "
        "is: oracle has D50 > 5 (beyond the deepest level tested); depth-capped:2 has D50 "
        "between 2 and 3; reality-leak answers reality for every false belief (leakage "
        "resistance 0%); level:2 plays at level 2.00 (not tested against chance) in the games; "
        "not-reality and random are marked invalid by the controls."
    )


def test_the_references_line_says_a_level_only_when_one_is_identified() -> None:
    refs = _references()
    signals = refs["ref:level:2"]["depth_signals"]
    signals["K_B"] |= {"ci": [2.0, 2.0], "identifiable": True}
    identified = explain_run({"agents": {"local": _agent(role="agent", valid=False), **refs}})
    assert "level:2 plays at level 2.00 [2.00, 2.00] in the games" in identified[-3]
    signals["K_B"] = {"value": None, "identifiable": False, "reason": "no level explains them"}
    noise = explain_run({"agents": {"local": _agent(role="agent", valid=False), **refs}})
    assert "level:2 is not identifiable as a level-k player in the games" in noise[-3]
    assert "plays at" not in noise[-3]


def test_a_reference_the_suite_gets_wrong_is_reported_not_praised() -> None:
    profile = _profile(_agent(role="agent", valid=False))
    wrong = copy.deepcopy(profile)
    wrong["agents"]["ref:depth-capped:2"]["d50"] = {
        "status": "bracketed", "lower_bound": 3.0, "upper_bound": 4.0,
        "depths_tested": DEPTHS, "display": "between 3 and 4",
    }  # fmt: skip
    line = explain_run(wrong)[-3]
    assert "diagnosed each as what it is" not in line
    assert re.search(r"but 1 of their figures did not come out as designed \(.*depth-capped:2.*"
                     r"between 3 and 4", line)  # fmt: skip
    assert "depth-capped:2 has D50 between 3 and 4" in line


def test_no_references_no_references_line() -> None:
    lines = explain_run({"agents": {"local": _agent(role="agent", valid=False)}})
    assert not any("reference agents" in line for line in lines)


@pytest.mark.parametrize("valid", [True, False, None])
def test_it_ends_with_the_dashboard_and_the_readme_section(valid: bool | None) -> None:
    lines = explain_run(_profile(_agent(role="agent", valid=valid)))
    assert lines[-2] == f"Browse the results: {DASHBOARD_COMMAND}"
    assert lines[-1] == f'Evaluate your own agent: the README section "{README_SECTION}".'


def test_the_readme_section_it_names_exists() -> None:
    assert f"\n## {README_SECTION}\n" in README.read_text(encoding="utf-8")


def test_a_control_with_no_scored_items_is_not_called_failed() -> None:
    agent = _agent(role="agent", valid=False, rc=(0, 2))
    agent["true_belief_control_accuracy"] = {"value": None, "k": 0, "n": 0}
    text = "\n".join(explain_run(_profile(agent)))
    assert "It answered 0 of the 2 reality checks (0%) right, below the 90%" in text
    assert "true-belief controls" not in text.split("\n")[2]


def test_quickstart_through_the_command_line_ends_with_its_own_profile_explained(
    isolated_home: Path,
) -> None:
    """The whole command, without the embedded model: `local` declared in the settings as a
    scripted depth-capped:3 reasoner, so the run is quick and its profile known (valid, above
    chance, D50 between 3 and 4). The real model's run is in test_local_model.py."""
    from click.testing import CliRunner

    from harness.cli.main import cli
    from ledger.db import open_engine
    from ledger.store import Store
    from reports import build_profile

    (isolated_home / "mindledger.toml").write_text(
        '[agents.local]\nadapter = "reference"\npolicy = "depth-capped:3"\n', encoding="utf-8"
    )
    result = CliRunner().invoke(cli, ["quickstart", "--seed", "12"])
    assert result.exit_code == 0, result.output
    url = f"sqlite:///{isolated_home / 'mindledger.db'}"
    store = Store(open_engine(url))
    run_id = store.list_runs()[0].id
    lines = explain_run(build_profile(store, run_id))
    store.engine.dispose()
    assert result.stdout.rstrip().endswith("\n".join(lines))
    text = "\n".join(lines)
    assert "local, the agent under test, answered" in text and "above the" in text
    assert "so its profile counts: D50 between 3 and 4" in text and "INVALID" not in text
    assert "the suite diagnosed each as what it is" in text
