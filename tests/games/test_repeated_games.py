"""Repeated games: the seed's exact payoffs, the counterfactual settings, the scripted opponents,
and deterministic, regenerable episode items."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest

from games.repeated import (
    B6_OPPONENTS,
    B6_PRESET,
    COUNTERFACTUALS,
    GAMES,
    GENERATOR,
    OPPONENTS,
    PAPER_OPPONENTS,
    Episode,
    Round,
    episode_from_item,
    generate_episodes,
    make_episode,
    make_episode_item,
    play_reference,
    repeated_game,
    score_episode,
)
from mindledger.errors import InputError
from mindledger.items import Item


def play(ep: Episode, pick: Callable[[int, str, list[Round]], str | None]) -> list[Round]:
    """Play ``ep`` choosing each move with ``pick(round index, opponent's move, history)``:
    moves are simultaneous, so knowing the opponent's scripted move is just a test device."""
    history: list[Round] = []
    for t in range(ep.rounds):
        b = ep.opponent_move(history)
        history.append((pick(t, b, history), b))
    return history


def beating(ep: Episode, b: str) -> str:
    """The label that beats ``b`` (RPS)."""
    g = ep.game
    return next(x for x in g.labels if g.payoff[g.index(x)][g.index(b)] > 0)


# ------------------------------------------------------------------------------ exact payoffs


def test_pd_default_payoffs_are_the_seeds() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "always-defect"})
    assert ep.rounds == 16 and ep.labels == ("cooperation", "defection")
    c, d = ep.labels
    assert ep.payoffs(c, c) == (4, 4)
    assert ep.payoffs(c, d) == (1, 6)
    assert ep.payoffs(d, c) == (6, 1)
    assert ep.payoffs(d, d) == (2, 2)
    # "cumulative scores for 16 rounds ranging from 16 to 96"; continuous (D,D) is 32
    assert score_episode(ep, play(ep, lambda *_: c))["total"] == 16
    assert score_episode(ep, play(ep, lambda *_: d))["total"] == 32
    coop = make_episode(1, {"game": "pd", "opponent": "always-cooperate"})
    assert score_episode(coop, play(coop, lambda *_: d))["total"] == 96
    assert score_episode(coop, play(coop, lambda *_: c))["total"] == 64


def test_rps_default_payoffs_are_the_seeds() -> None:
    ep = make_episode(1, {"game": "rps", "opponent": "pattern"})
    assert ep.rounds == 24 and ep.labels == ("rock", "paper", "scissors")
    for winner, loser in (("rock", "scissors"), ("paper", "rock"), ("scissors", "paper")):
        assert ep.payoffs(winner, loser) == (1, -1)
        assert ep.payoffs(loser, winner) == (-1, 1)
    for x in ep.labels:
        assert ep.payoffs(x, x) == (0, 0)
    # "scores for 24 rounds ranging from -24 to 24"
    assert score_episode(ep, play(ep, lambda t, b, h: beating(ep, b)))["total"] == 24
    lose = score_episode(ep, play(ep, lambda t, b, h: next(
        x for x in ep.labels if x not in (b, beating(ep, b)))))
    assert lose["total"] == -24


def test_rps_payoff_counterfactual_moves_the_equilibrium_to_the_seeds() -> None:
    g = repeated_game("rps", "payoff")
    ep = make_episode(2, {"game": "rps", "counterfactual": "payoff", "opponent": "pattern"})
    # "increases the magnitude of the Rock-Paper combination to 3"
    assert ep.payoffs("paper", "rock") == (3, -3)
    assert ep.payoffs("rock", "paper") == (-3, 3)
    assert ep.payoffs("rock", "scissors") == (1, -1)
    assert ep.payoffs("scissors", "paper") == (1, -1)
    # "π*(R)=0.2, π*(P)=0.2, π*(S)=0.6"
    assert g.stage_equilibrium() == (Fraction(1, 5), Fraction(1, 5), Fraction(3, 5))
    assert repeated_game("rps").stage_equilibrium() == (Fraction(1, 3),) * 3


def test_pd_payoff_counterfactual_is_a_stag_hunt() -> None:
    pd, sh = repeated_game("pd"), repeated_game("pd", "payoff")
    assert sh.labels == pd.labels == ("cooperation", "defection")
    assert sh.payoff == ((6, 1), (4, 2))
    # defection strictly dominates in the PD, not in the Stag Hunt
    assert pd.best_replies(0) == pd.best_replies(1) == (1,)
    assert sh.best_replies(0) == (0,) and sh.best_replies(1) == (1,)
    assert pd.stage_equilibrium() == (0, 1)
    assert sh.stage_equilibrium() == (Fraction(1, 3), Fraction(2, 3))


# ------------------------------------------------------------------------- counterfactuals


@pytest.mark.parametrize(("game", "plain", "relabelled"), [
    ("pd", "default", "label"), ("pd", "payoff", "joint"),
    ("rps", "default", "label"), ("rps", "payoff", "joint"),
])
def test_relabelling_preserves_the_strategic_structure(game: str, plain: str,
                                                       relabelled: str) -> None:
    a, b = repeated_game(game, plain), repeated_game(game, relabelled)
    assert a.payoff == b.payoff and a.labels != b.labels
    assert sorted(a.labels) != sorted(b.labels) or game == "rps"
    assert a.stage_equilibrium() == b.stage_equilibrium()
    for opp in OPPONENTS[game]:
        params = {"game": game, "opponent": opp, "rounds": 30 if opp in B6_OPPONENTS else None}
        ea = make_episode(7, {**params, "counterfactual": plain})
        eb = make_episode(7, {**params, "counterfactual": relabelled})
        assert ea.opponent == eb.opponent and ea.noise == eb.noise
        ha = play_reference(ea, "oracle", np.random.default_rng(0))
        hb = play_reference(eb, "oracle", np.random.default_rng(0))
        roles = [(a.index(x or ""), a.index(y)) for x, y in ha]
        assert roles == [(b.index(x or ""), b.index(y)) for x, y in hb]
        sa, sb = score_episode(ea, ha), score_episode(eb, hb)
        for key in ("payoffs", "opponent_payoffs", "benchmark", "random_expected",
                    "comprehension_round", "best_response_round", "adaptation_latency"):
            assert sa[key] == sb[key], (opp, key)


def test_rps_label_swap_reverses_the_familiar_rules() -> None:
    ep = make_episode(3, {"game": "rps", "counterfactual": "label", "opponent": "pattern"})
    assert ep.payoffs("rock", "paper") == (1, -1)
    assert ep.payoffs("paper", "scissors") == (1, -1)
    assert ep.payoffs("scissors", "rock") == (1, -1)
    text = ep.intro()
    assert "- rock beats paper: the winner scores 1" in text
    assert "paper beats rock" not in text
    joint = make_episode(3, {"game": "rps", "counterfactual": "joint", "opponent": "pattern"})
    assert joint.payoffs("rock", "paper") == (3, -3)
    assert "- rock beats paper: the winner scores 3 and the loser scores -3." in joint.intro()
    eq = dict(zip(joint.labels, joint.game.stage_equilibrium(), strict=True))
    assert eq == {"paper": Fraction(1, 5), "rock": Fraction(1, 5), "scissors": Fraction(3, 5)}


def test_rules_are_written_from_the_settings_own_labels_and_payoffs() -> None:
    label = make_episode(1, {"game": "pd", "counterfactual": "label", "opponent": "grim"})
    text = label.intro()
    assert "Actions: stag, hare." in text and "cooperation" not in text
    assert "you choose stag and your opponent chooses hare: you score 1, your opponent " \
           "scores 6." in text
    payoff = make_episode(1, {"game": "pd", "counterfactual": "payoff", "opponent": "grim"})
    assert ("you choose cooperation and your opponent chooses cooperation: you score 6, your "
            "opponent scores 6.") in payoff.intro()
    assert "for 16 rounds" in text and "beats" not in text


def test_round_prompt_shows_the_rounds_so_far_and_the_totals() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "tit-for-tat"})
    first = ep.round_prompt([])
    assert first.startswith("Round 1 of 16.") and "No rounds have been played yet." in first
    history: list[Round] = [("defection", "cooperation"), (None, "defection")]
    text = ep.round_prompt(history)
    assert text.startswith("Round 3 of 16.")
    assert "Round 1: defection / cooperation: 6 / 1" in text
    assert "Round 2: (no valid action) / defection: 1 / 6" in text
    assert "Total so far: you 7, your opponent 7." in text
    assert text.endswith("Choose your action for round 3: one of cooperation, defection.")


# ------------------------------------------------------------------------ scripted opponents


def moves_of(ep: Episode, agent: list[str | None]) -> list[str]:
    history: list[Round] = []
    for a in agent:
        history.append((a, ep.opponent_move(history)))
    return [b for _, b in history]


def test_pd_scripted_opponents_behave_as_specified() -> None:
    C, D = "cooperation", "defection"
    agent: list[str | None] = [C, D, D, C, None, C, D, C]

    def opp(name: str) -> list[str]:
        return moves_of(make_episode(4, {"game": "pd", "opponent": name, "rounds": 8}), agent)

    assert opp("always-cooperate") == [C] * 8
    assert opp("always-defect") == [D] * 8
    assert opp("equilibrium") == [D] * 8  # defection dominates
    assert opp("pattern") == [D, C] * 4
    # tit-for-tat: cooperate, then copy the agent's last valid move (round 5 was invalid)
    assert opp("tit-for-tat") == [C, C, D, D, C, C, C, D]
    # grim: cooperate until the agent's first defection, then defect forever
    assert opp("grim") == [C, C] + [D] * 6
    # the paper's MF and TFT best-respond to the agent: defection, whatever it did
    assert opp("counter-frequent")[1:] == [D] * 7
    assert opp("counter-last")[1:] == [D] * 7


def test_stag_hunt_counter_bots_coordinate_on_the_agents_habit() -> None:
    S, H = "stag", "hare"
    ep = make_episode(4, {"game": "pd", "counterfactual": "joint", "opponent": "counter-last",
                          "rounds": 5})
    assert moves_of(ep, [S, H, S, S, H])[1:] == [S, H, S, S]
    ep = make_episode(4, {"game": "pd", "counterfactual": "joint",
                          "opponent": "counter-frequent", "rounds": 6})
    # most frequent so far; ties go to the first action (stag)
    assert moves_of(ep, [H, S, H, S, S, S])[1:] == [H, S, H, S, S]


def test_rps_scripted_opponents_behave_as_specified() -> None:
    R, P, S = "rock", "paper", "scissors"

    def ep(name: str, rounds: int = 6, seed: int = 4) -> Episode:
        return make_episode(seed, {"game": "rps", "opponent": name, "rounds": rounds})

    # the paper's pattern player: scissors, rock, paper, ...
    assert moves_of(ep("pattern"), [R] * 6) == [S, R, P, S, R, P]
    # counter-last beats the agent's previous move
    assert moves_of(ep("counter-last"), [R, P, S, S, R, P])[1:] == [P, S, R, R, P]
    # counter-frequent beats the agent's most frequent move (ties: first in role order)
    assert moves_of(ep("counter-frequent"), [S, P, P, S, S, R])[1:] == [R, S, S, S, R]
    # win-stay; lose or tie: shift to the move that beats its own last move
    w = ep("wsls", rounds=12)
    hist: list[Round] = []
    for mine in [R, R, P, S, S, P, R, S, P, P, R, S]:
        hist.append((mine, w.opponent_move(hist)))
    outcomes = set()
    for (x, b), (_, nxt) in itertools.pairwise(hist):
        won = w.payoffs(x, b)[1] > w.payoffs(x, b)[0]
        outcomes.add(won)
        assert nxt == (b if won else beating(w, b))
    assert outcomes == {True, False}


def test_equilibrium_and_biased_bots_draw_their_mixes() -> None:
    counts: Counter[str] = Counter()
    fav: Counter[bool] = Counter()
    for seed in range(150):
        eq = make_episode(seed, {"game": "pd", "counterfactual": "payoff",
                                 "opponent": "equilibrium"})
        counts.update(moves_of(eq, ["cooperation"] * eq.rounds))
        bi = make_episode(seed, {"game": "rps", "opponent": "biased"})
        weights = bi.opponent["weights"]
        top = bi.labels[weights.index(3)]
        fav.update(m == top for m in moves_of(bi, ["rock"] * bi.rounds))
    # Stag Hunt's mixed equilibrium: cooperate (stag) with probability 1/3
    assert abs(counts["cooperation"] / sum(counts.values()) - 1 / 3) < 0.03
    assert abs(fav[True] / sum(fav.values()) - 0.6) < 0.03


def test_switching_bots_change_regime_at_their_switch_round() -> None:
    for seed in range(5):
        ep = make_episode(seed, {"game": "rps", "opponent": "cycle-switch", "rounds": 30})
        at = ep.switch_round
        assert at is not None and 14 <= at <= 18
        moves = moves_of(ep, ["rock"] * 30)
        g = ep.game
        steps = [g.payoff[g.index(n)][g.index(p)] for p, n in itertools.pairwise(moves)]
        # forward cycle (each move beats the previous) before, backward after
        assert all(s > 0 for s in steps[: at - 2])
        assert all(s < 0 for s in steps[at - 1:])
    spec = make_episode(9, {"game": "rps", "opponent": "biased-switch", "rounds": 30}).opponent
    assert spec["kind"] == "switch"
    assert spec["first"]["weights"] != spec["then"]["weights"]


def test_a_history_that_contradicts_the_script_is_refused() -> None:
    ep = make_episode(1, {"game": "pd", "opponent": "always-cooperate"})
    with pytest.raises(InputError) as err:
        ep.opponent_move([("defection", "defection")])
    assert err.value.where == "history[0][1]"
    with pytest.raises(InputError) as err:
        ep.round_prompt([("betray", "cooperation")])
    assert err.value.where == "history[0][0]"


# ------------------------------------------------------------------------------------ items


def test_generation_is_deterministic_and_regenerable() -> None:
    a = generate_episodes(11, 12)
    b = generate_episodes(11, 12)
    assert [i.id for i in a] == [i.id for i in b]
    assert [i.id for i in generate_episodes(12, 12)] != [i.id for i in a]
    for item in a:
        assert item.family == "repeated" and item.generator == GENERATOR
        assert item.verify() == []
        assert make_episode_item(item.seed, item.params) == item
        assert Item.from_dict(json.loads(json.dumps(item.to_dict()))) == item
        assert episode_from_item(item) == make_episode(item.seed, item.params)
        assert item.answer == {"kind": "choice", "choices": item.truth["labels"]}
        assert item.prompt == episode_from_item(item).intro()
        assert {"game", "counterfactual", "opponent", "rounds"} <= set(item.meta)


def test_a_full_batch_covers_every_design_cell_once() -> None:
    cells = len(GAMES) * len(COUNTERFACTUALS) * len(PAPER_OPPONENTS)
    items = generate_episodes(3, cells)
    seen = Counter((i.meta["game"], i.meta["counterfactual"], i.meta["opponent"])
                   for i in items)
    assert len(seen) == cells and set(seen.values()) == {1}
    assert {i.meta["rounds"] for i in items if i.meta["game"] == "pd"} == {16}
    assert {i.meta["rounds"] for i in items if i.meta["game"] == "rps"} == {24}


def test_b6_preset_is_four_switching_bots_by_five_sessions_of_30_rounds() -> None:
    items = generate_episodes(5, **B6_PRESET)
    assert len(items) == 20
    assert Counter(i.meta["opponent"] for i in items) == dict.fromkeys(B6_OPPONENTS, 5)
    assert {i.meta["rounds"] for i in items} == {30}
    assert all(14 <= i.meta["switch_round"] <= 18 for i in items)
    assert len({i.id for i in items}) == 20


def test_opponents_join_only_the_games_they_are_defined_for() -> None:
    items = generate_episodes(1, 8, opponents=("tit-for-tat", "biased"))
    assert {(i.meta["game"], i.meta["opponent"]) for i in items} == {
        ("pd", "tit-for-tat"), ("rps", "biased")}


@pytest.mark.parametrize(("params", "where"), [
    ({"game": "chess", "opponent": "grim"}, "game"),
    ({"game": "pd", "opponent": "grim", "counterfactual": "mirror"}, "counterfactual"),
    ({"game": "rps", "opponent": "grim"}, "opponent"),
    ({"game": "pd", "opponent": "grim", "rounds": 0}, "rounds"),
    ({"game": "rps", "opponent": "wsls-switch", "rounds": 4}, "rounds"),
])
def test_bad_parameters_name_the_field(params: dict[str, object], where: str) -> None:
    with pytest.raises(InputError) as err:
        make_episode_item(1, params)
    assert err.value.where == where


def test_bad_batch_arguments_name_the_field() -> None:
    with pytest.raises(InputError) as err:
        generate_episodes(1, 3, opponents=("biased",), games=("pd",))
    assert err.value.where == "opponents"
    with pytest.raises(InputError) as err:
        generate_episodes(1, -1)
    assert err.value.where == "n"


def test_a_tampered_opponent_spec_is_refused() -> None:
    item = make_episode_item(1, {"game": "rps", "opponent": "biased"})
    body = item.to_dict()
    body["truth"]["opponent"] = {"kind": "mixed", "weights": [1, 1]}
    del body["id"]
    with pytest.raises(InputError) as err:
        episode_from_item(Item.from_dict(body))
    assert err.value.where == "opponent.weights"
