"""Item families through one registry (issue 13, item 1).

Acceptance: a toy family needs one module (``toy_family.py``) and one registry line, and then
it runs through the real runner, its trials are stored, and it appears in the profile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import reports
from harness.agent import families
from harness.config.settings import load_settings
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from ledger.db import open_engine
from ledger.store import Store
from mindledger import family
from mindledger.errors import NotFoundError
from mindledger.family import DuplicateFamilyError, Registry, UnknownFamilyError
from reports.model import RunProfile
from tests.harness import toy_family
from tests.harness.toy_family import TOY


@pytest.fixture
def toy() -> Iterator[family.Family]:
    with family.registered(TOY):  # the one registry line
        yield TOY


# -- the acceptance test ---------------------------------------------------------------------


def test_toy_family_runs_is_stored_and_appears_in_the_profile(
    toy: family.Family, tmp_path: Path
) -> None:
    settings = load_settings(None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 't.db'}"})
    store = Store(open_engine(settings.database_url))
    planned = plan_agents(settings, agents=(), references=("oracle", "random", "level:2"))
    items = toy_family.generate(7, 30)
    run_id, _, n = create_run(store, settings, suite="toy", planned=planned, seed=12,
                              items=items)
    assert n == 30

    asyncio.run(execute_stored_run(store, settings, run_id))

    assert store.get_run(run_id).status == "complete"
    oracle = store.trials(run_id, "ref:oracle")
    assert len(oracle) == 30 and all(t.status == "ok" and t.correct for t in oracle)
    assert all(t.primary_error is None for t in oracle)
    guesses = store.trials(run_id, "ref:random")
    assert len(guesses) == 30 and not all(t.correct for t in guesses)
    assert {t.primary_error for t in guesses if not t.correct} == {"wrong_sum"}
    # a policy the family does not declare is recorded as not applicable, not scored
    assert {t.status for t in store.trials(run_id, "ref:level:2")} == {"not_applicable"}

    profile = reports.analyse(reports.load_run(store, run_id), n_boot=50).profile
    doc = profile.to_json()
    assert RunProfile.of(doc) == profile
    section = doc["agents"]["ref:oracle"]["families"]["toy-sum"]
    assert section["title"] == "Toy sums (a test family)"
    assert (section["value"], section["k"], section["n"]) == (1.0, 30, 30)
    assert section["interval"] == "wilson-95"
    assert section["ci"][0] == pytest.approx(reports.wilson_interval(30, 30)[0])
    rnd = doc["agents"]["ref:random"]["families"]["toy-sum"]
    assert rnd["n"] == 30 and rnd["value"] < 0.5
    assert doc["agents"]["ref:level:2"]["families"]["toy-sum"]["n"] == 0
    # and every rendering takes the profile with the toy family in it
    markdown = reports.report(store, run_id, "md", n_boot=50)
    assert "| Toy sums (a test family) (`toy-sum`) | 100.0%" in markdown


def test_the_same_items_regenerate(toy: family.Family) -> None:
    items = toy_family.generate(3, 5)
    assert families.verify_items(items) == []
    forged = replace(items[0], prompt="What is 1 + 1?", id="")
    assert families.verify_items([forged]) == [f"{forged.id}: regenerated item differs "
                                               f"({items[0].id})"]


def test_a_family_is_known_only_while_registered() -> None:
    with family.registered(TOY):
        assert "toy-sum" in family.names()
    assert "toy-sum" not in family.names()
    with pytest.raises(UnknownFamilyError):
        family.get("toy-sum")


def test_items_of_an_unregistered_family_are_refused_before_anything_is_stored(
    tmp_path: Path,
) -> None:
    settings = load_settings(None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 't.db'}"})
    store = Store(open_engine(settings.database_url))
    planned = plan_agents(settings, agents=(), references=("oracle",))
    with pytest.raises(UnknownFamilyError, match="'toy-sum'"):
        create_run(store, settings, suite="toy", planned=planned, seed=12,
                   items=toy_family.generate(1, 2))
    assert store.list_runs() == []


# -- the registry ----------------------------------------------------------------------------


def test_the_built_in_families_are_registered() -> None:
    assert {"nesttom", "hitom", "games", "repeated"} <= set(family.names())
    assert family.get("repeated").plays == "episode"
    assert {f.name: f.plays for f in family.all_families()
            if f.name != "repeated"} == dict.fromkeys(
        set(family.names()) - {"repeated"}, "single")
    assert family.get("nesttom").scaffold_modules == ("witness_log", "perspective")
    assert family.get("games").scaffold_modules == ("opponent_sim",)


def test_an_unknown_family_names_itself_and_the_registered_ones() -> None:
    with pytest.raises(UnknownFamilyError) as err:
        family.get("tarot")
    message = str(err.value)
    assert "'tarot'" in message
    for name in ("games", "hitom", "nesttom", "repeated"):
        assert name in message
    assert isinstance(err.value, NotFoundError)  # a user error: the CLI exits 2
    assert err.value.family == "tarot" and "nesttom" in err.value.known


def test_the_harness_dispatch_refuses_an_unknown_family() -> None:
    item = replace(toy_family.make_item(1, {}), family="tarot", id="")
    with pytest.raises(UnknownFamilyError, match="tarot"):
        families.score(item, 3)
    with pytest.raises(UnknownFamilyError, match="tarot"):
        families.applies(item, "oracle")
    with pytest.raises(UnknownFamilyError, match="tarot"):
        families.reference_answer(item, "oracle", np.random.default_rng(0))
    assert families.verify_items([item]) == [
        f"{item.id}: unknown item family 'tarot' (registered families: "
        f"{', '.join(family.names())})"
    ]


def test_a_second_family_under_a_taken_name_is_refused() -> None:
    reg = Registry()
    reg.register(TOY)
    reg.register(TOY)  # the same family again changes nothing
    with pytest.raises(DuplicateFamilyError, match="'toy-sum' is already registered"):
        reg.register(toy_family.ToySum())
    assert reg.names() == ("toy-sum",) and reg.get("toy-sum") is TOY
    with pytest.raises(DuplicateFamilyError):
        family.register(toy_family.ToySum(name="nesttom"))
    assert family.get("nesttom") is not None and family.get("nesttom").title.startswith("NestToM")


def test_an_empty_registry_says_so() -> None:
    with pytest.raises(UnknownFamilyError, match=r"registered families: none"):
        Registry().get("nesttom")


def test_every_reference_policy_is_known_and_applies_where_it_means_something() -> None:
    from harness.agent.families import POLICIES, applies, check_policy, reference_answer
    from harness.run.suites import get_suite

    assert "myopic" in POLICIES
    check_policy("myopic")  # the repeated games' myopic reference is a reference agent
    items = get_suite("baseline").build(12)
    episode = next(i for i in items if i.family == "repeated")
    story = next(i for i in items if i.family == "nesttom")
    assert applies(episode, "myopic") and not applies(story, "myopic")
    moves = reference_answer(episode, "myopic", np.random.default_rng(0))
    assert moves is not None


@pytest.mark.parametrize("policy", ["noisy:0", "noisy:0.35", "noisy:.5", "noisy:1", "noisy:1.0"])
def test_noisy_names_a_reference_agent(policy: str) -> None:
    from harness.agent.families import check_policy

    check_policy(policy)


@pytest.mark.parametrize(
    "policy", ["noisy", "noisy:", "noisy:1.5", "noisy:2", "noisy:0.", "noisy:x"]
)
def test_a_noisy_policy_without_a_probability_is_refused(policy: str) -> None:
    from harness.agent.families import check_policy
    from mindledger.errors import UserError

    with pytest.raises(UserError, match="unknown reference agent"):
        check_policy(policy)


def test_a_noisy_reference_agent_answers_the_same_on_a_rerun() -> None:
    """Its draws are seeded by the run's seed, its name and the item: a rerun (a fresh agent)
    answers each item as before; another run's seed answers otherwise."""
    from harness.agent.agents import ReferenceAgent
    from nesttom import b1_items

    items = b1_items(3, per_cell=5)

    def answers(seed: int) -> list[object]:
        agent = ReferenceAgent("n", "noisy:0.5", seed=seed)
        return [asyncio.run(agent.attempt(i)).answer for i in items]

    first = answers(11)
    assert answers(11) == first
    assert answers(12) != first
    oracle = [str(i.truth["answer"]) for i in items]
    assert 0 < sum(a == o for a, o in zip(first, oracle, strict=True)) < len(items)
