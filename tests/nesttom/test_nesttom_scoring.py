"""The scorer, error coding, and the reference reasoners (each must be diagnosed as what it is)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest

from mindledger.items import Item
from nesttom import b1_items, b4_items, normalize_answer, reference_answer, score


def item(truth: dict[str, Any], choices: list[str] | None = None) -> Item:
    spec: dict[str, Any] = (
        {"kind": "yesno"} if choices is None else {"kind": "choice", "choices": choices}
    )
    return Item(
        family="nesttom",
        generator="test",
        version="0",
        seed=0,
        params={},
        prompt="?",
        answer=spec,
        truth=truth,
    )


# A depth-4 chain whose prefixes answer: [a]=safe, [a,b]=box, [a,b,c]=safe; reality=box.
DEPTH4 = item(
    {
        "answer": "drawer",
        "reality": "box",
        "chain": ["a", "b", "c", "d"],
        "object": "key",
        "prefix_answers": ["safe", "box", "safe"],
        "projection": "safe",
    },
    ["box", "drawer", "safe", "tin"],
)


@pytest.mark.parametrize(
    ("answer", "codes", "primary"),
    [
        ("drawer", (), None),
        (" The Drawer. ", (), None),  # normalised
        # box is reality and also the length-2 prefix's answer: both codes, reality first
        ("box", ("reality_leak", "truncation:2"), "reality_leak"),
        # safe is the outermost agent's own belief and the length-3 prefix's answer
        ("safe", ("projection", "truncation:3"), "projection"),
        ("tin", ("other",), "other"),
        ("somewhere else", ("other",), "other"),
    ],
)
def test_error_codes(answer: str, codes: tuple[str, ...], primary: str | None) -> None:
    s = score(DEPTH4, answer)
    assert s.correct == (primary is None)
    assert s.value == (1.0 if primary is None else 0.0)
    assert s.error_codes == codes and s.primary_error == primary


def test_truncation_names_its_prefix_length() -> None:
    t = dict(DEPTH4.truth, prefix_answers=["safe", "jar", "tin"], reality="box")
    assert score(item(t, ["box", "drawer", "jar", "safe", "tin"]), "jar").error_codes == (
        "truncation:2",
    )
    assert score(item(t, ["box", "drawer", "jar", "safe", "tin"]), "tin").error_codes == (
        "truncation:3",
    )


def test_no_projection_code_at_depth_one() -> None:
    # at R1 the projection is the answer itself: a wrong answer is reality or other
    t = {
        "answer": "safe",
        "reality": "box",
        "chain": ["a"],
        "object": "key",
        "prefix_answers": [],
        "projection": "safe",
    }
    assert score(item(t, ["box", "safe", "tin"]), "tin").error_codes == ("other",)
    assert score(item(t, ["box", "safe", "tin"]), "box").error_codes == ("reality_leak",)


def test_judgment_error_codes() -> None:
    # X looked in the box; X believes the safe (answer "no"); reality is the box, so judging by
    # reality says "yes": a reality leak. The projection (a's own belief) is the box too.
    t = {
        "answer": "no",
        "belief": "safe",
        "looked": "box",
        "reality": "box",
        "chain": ["a", "b"],
        "object": "key",
        "prefix_answers": ["box"],
        "projection": "box",
    }
    assert score(item(t), "no").correct
    s = score(item(t), "Yes.")
    assert s.error_codes == ("reality_leak", "projection") and s.primary_error == "reality_leak"


def test_normalize() -> None:
    assert normalize_answer(" The Green_Drawer. ") == "green drawer"
    assert normalize_answer("**safe**") == "safe"
    assert normalize_answer("YES!") == "yes"


@pytest.fixture(scope="module")
def b1() -> list[Item]:
    return b1_items(21, per_cell=20)


def test_oracle_is_always_right(b1: list[Item]) -> None:
    rng = np.random.default_rng(0)
    assert all(score(i, reference_answer(i, "oracle", rng)).correct for i in b1)


def test_reality_leak_is_diagnosed(b1: list[Item]) -> None:
    rng = np.random.default_rng(0)
    for i in b1:
        s = score(i, reference_answer(i, "reality-leak", rng))
        if i.meta["depth"] == "R0" or i.meta["belief"] == "true":
            assert s.correct
        else:
            assert s.primary_error == "reality_leak"


def test_not_reality_fails_every_true_belief_control(b1: list[Item]) -> None:
    rng = np.random.default_rng(0)
    for i in b1:
        s = score(i, reference_answer(i, "not-reality", rng))
        if i.meta["belief"] == "true" or i.meta["depth"] == "R0":
            assert not s.correct


@pytest.mark.parametrize("cap", [0, 1, 2, 3, 4])
def test_depth_capped_reasoners_truncate_at_their_depth(b1: list[Item], cap: int) -> None:
    rng = np.random.default_rng(0)
    for i in b1:
        s = score(i, reference_answer(i, f"depth-capped:{cap}", rng))
        n = i.meta["depth_n"]
        if n <= cap:
            assert s.correct
        elif i.meta["belief"] == "false":  # adversarial items catch the shortcut
            expected = {0: "reality_leak", 1: "projection"}.get(cap, f"truncation:{cap}")
            assert not s.correct and expected in s.error_codes


def test_random_is_near_chance(b1: list[Item]) -> None:
    rng = np.random.default_rng(3)
    hits = sum(score(i, reference_answer(i, "random", rng)).correct for i in b1)
    chance = sum(1 / len(i.answer["choices"]) for i in b1)
    assert abs(hits - chance) < 4 * np.sqrt(chance)


def test_reference_reasoners_on_judgments() -> None:
    items = [i for i in b4_items(4, per_cell=12) if i.meta["question"] == "judgment"]
    rng = np.random.default_rng(0)
    outcome: Counter[tuple[str, str, bool]] = Counter()
    for i in items:
        for policy in ("oracle", "reality-leak", "not-reality"):
            ok = score(i, reference_answer(i, policy, rng)).correct
            outcome[(policy, i.meta["belief"], ok)] += 1
    assert outcome[("oracle", "false", False)] == outcome[("oracle", "true", False)] == 0
    # judging by reality is wrong on every false-belief judgment (the look is either at the
    # believed place or at the real one, and they differ) and right on every true-belief one
    assert outcome[("reality-leak", "false", True)] == 0
    assert outcome[("reality-leak", "true", False)] == 0
    # always deviating from reality is wrong on every true-belief judgment
    assert outcome[("not-reality", "true", True)] == 0


def test_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown reference policy"):
        reference_answer(DEPTH4, "level:2", np.random.default_rng(0))


def test_r2_self_notes_an_answer_that_is_your_own_belief() -> None:
    t = {
        "answer": "box",
        "reality": "safe",
        "chain": ["Ann", "you"],
        "object": "key",
        "prefix_answers": ["safe"],
        "projection": "safe",
        "self_belief": "tin",
    }
    # "tin" is what you yourself believe, not what Ann thinks you believe
    s = score(item(t, ["box", "safe", "tin"]), "tin")
    assert not s.correct and s.error_codes == ("other",) and s.details["is_own_belief"] is True
    assert score(item(t, ["box", "safe", "tin"]), "box").details["is_own_belief"] is False


def _stories(n: int) -> list[Item]:
    """``n`` hand-built stories, each asked once as a choice (the depth-4 chain's, its answer
    moved round the containers) and once as a yes/no judgment."""
    containers = ["box", "drawer", "safe", "tin"]
    out = []
    for k in range(n):
        answer = containers[k % 4]
        out.append(item({**DEPTH4.truth, "answer": answer}, containers))
        looked = containers[(k + 1) % 4]
        out.append(item({"answer": "no", "belief": answer, "looked": looked, "reality": looked,
                         "chain": ["a", "b"], "object": "key", "prefix_answers": [looked],
                         "projection": looked}))  # fmt: skip
    return out


@pytest.mark.parametrize("policy", ["noisy:1", "noisy:1.0"])
def test_noisy_at_one_is_the_oracle(policy: str) -> None:
    rng = np.random.default_rng(0)
    for i in _stories(50):
        assert reference_answer(i, policy, rng) == reference_answer(i, "oracle", rng)


@pytest.mark.parametrize("policy", ["noisy:0", "noisy:0.0"])
def test_noisy_at_zero_is_never_right_and_answers_among_the_choices(policy: str) -> None:
    rng = np.random.default_rng(1)
    answers: Counter[str] = Counter()
    for i in _stories(200):
        given = reference_answer(i, policy, rng)
        assert not score(i, given).correct
        assert given in (i.answer.get("choices") or ("yes", "no"))
        answers[given] += 1
    # the wrong answer is drawn among the wrong choices, not always the same one
    assert {"box", "drawer", "safe", "tin", "yes"} <= set(answers)


def test_noisy_at_one_half_is_right_about_half_the_time() -> None:
    rng = np.random.default_rng(2)
    stories = _stories(1000)  # 2,000 questions: the share's sd is 0.011
    hits = sum(bool(score(i, reference_answer(i, "noisy:0.5", rng)).correct) for i in stories)
    assert abs(hits / len(stories) - 0.5) < 0.045  # 4 sd


@pytest.mark.parametrize("p", [0.2, 0.8])
def test_noisy_accuracy_is_p_on_generated_items(b1: list[Item], p: float) -> None:
    """On B1's items (choices of 3 to 5 containers, false and true belief, every depth): the
    expected accuracy is P whatever the item."""
    rng = np.random.default_rng(5)
    hits = sum(bool(score(i, reference_answer(i, f"noisy:{p}", rng)).correct) for i in b1)
    sd = np.sqrt(p * (1 - p) / len(b1))
    assert abs(hits / len(b1) - p) < 4 * sd


@pytest.mark.parametrize("policy", ["noisy:1.5", "noisy:", "noisy:-0.1", "noisy:half", "noisy"])
def test_a_malformed_noisy_policy_is_refused(policy: str) -> None:
    with pytest.raises(ValueError, match="noisy"):
        reference_answer(DEPTH4, policy, np.random.default_rng(0))
