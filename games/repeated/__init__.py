"""Repeated games with counterfactual payoffs against scripted opponents.

Built on a paper on counterfactual strategic reasoning ("the paper" below; see
docs/architecture.md, "Where the specifications come from"):
the Repeated Prisoner's Dilemma (16 rounds) and Rock-Paper-Scissors (24 rounds), each in four
settings — default, label, payoff and joint counterfactual — played against algorithmic
opponents; and on the baseline test B6 (30-round RPS against four biased bots that switch
strategy mid-game; exploitation and adaptation latency). Pure code: no I/O, no clock, no global
random state.

**Games** (role order ``a, b[, c]``; the agent is the row player and the games are symmetric, so
the opponent's payoff for ``(a, b)`` is the agent's for ``(b, a)``):

- ``pd`` default: ``cooperation``/``defection`` with (C,C)=(4,4), (C,D)=(1,6), (D,C)=(6,1),
  (D,D)=(2,2) — 16 rounds score 16…96; ``label``: the same payoffs under the labels ``stag``/
  ``hare``; ``payoff``: ``cooperation``/``defection`` with the Stag Hunt payoffs (6,6), (1,4),
  (4,1), (2,2), so defection no longer dominates; ``joint``: both (``stag``/``hare`` with the Stag
  Hunt payoffs). These are the paper code's ``pd``, ``sh-alt``, ``pd-alt`` and ``sh`` settings.
- ``rps`` default: rock/paper/scissors, win +1, loss −1, tie 0 — 24 rounds score −24…24;
  ``payoff``: "increases the magnitude of the Rock-Paper combination to 3", which moves the
  equilibrium to π*(R)=0.2, π*(P)=0.2, π*(S)=0.6; ``label``: two labels swapped (paper and rock
  trade roles), so the rules read "rock beats paper, scissors beats rock, paper beats scissors"
  — the familiar relation reversed, the strategic structure unchanged; ``joint``: both (the
  amplified pair is then "rock beats paper" for 3). The paper's own code rotates the labels
  instead, which leaves every "X beats Y" rule as usual; the swap makes label anchoring visible.

**Opponents** (scripted; the paper's SREP, PP, MF/AP and its "TFT" are ``equilibrium``,
``pattern``, ``counter-frequent`` and ``counter-last``):

- ``equilibrium`` — plays the stage game's symmetric equilibrium mix every round (PD: always
  defect; Stag Hunt: the mixed equilibrium, stag with probability 1/3 — the indifference
  condition; the paper's code computes 3/7; RPS: uniform, or (0.2, 0.2, 0.6) under the payoff
  counterfactual);
- ``pattern`` — a fixed cycle (PD: defect, cooperate, …; RPS: scissors, rock, paper, … in role
  terms, each move beating the one before);
- ``counter-frequent`` — best response to the agent's most frequent move so far (ties: first in
  role order; uniform before any move);
- ``counter-last`` — best response to the agent's previous move (uniform in round 1);
- PD only: ``tit-for-tat`` (cooperate, then copy), ``grim`` (cooperate until the agent defects
  once), ``always-cooperate``, ``always-defect``;
- RPS only: ``biased`` (3:1:1 towards one move drawn from the seed), ``wsls`` (win-stay,
  lose-or-tie-shift to the move that beats its own last move), and B6's switching bots
  ``biased-switch`` (biased to X, then to Y ≠ X), ``cycle-switch`` (forward cycle, then
  backward), ``wsls-switch`` (shift forward, then backward), ``counter-switch``
  (``counter-last``, then ``counter-frequent``). A switching bot changes regime at a round drawn
  from the middle five of the game and starts its new regime afresh.

An invalid agent move is invisible to ``tit-for-tat``, ``grim`` and the counter bots (they react
to valid moves only); ``wsls`` counts the round as its win.

**Determinism.** An opponent is a finite-state machine whose random choices come from one
pre-drawn integer per round, part of the item: the agent and its control face the very same
draws, and every figure below is exact.

**Scoring** (:func:`score_episode`):

- per-round and total payoffs; an invalid move scores the game's worst outcome for the agent
  (it gets its minimum payoff, the opponent its payoff in that outcome: PD (1, 6), RPS (−1, 1) or
  (−3, 3));
- ``benchmark``: the expected total of the best response to the actual opponent — the optimal
  policy against its script, knowing the script but not its coin flips (dynamic programming
  over the opponent's states). Against an opponent that does not react to the agent this is
  the best response to its next move each round; against ``tit-for-tat`` it is to cooperate and
  defect in the last round. ``benchmark_realized`` is what that policy scores on this episode's
  draws (the ``oracle`` reference agent's total);
- ``exploitation`` = (total − E[random play]) / (benchmark − E[random play]): 1 in expectation
  for the best response (exactly 1 against an opponent without coin flips), 0 in expectation for
  uniform random play, None when the two coincide (nothing to exploit, e.g. the RPS
  equilibrium player); ``regret`` = benchmark_realized − total;
- ``comprehension_round`` *m*, exactly as the paper defines it: "the earliest round such that
  from that round until the end of the game, the LLM achieves a payoff no lower than the
  opponent's in at least t_p = 90% of the subsequent rounds … if m exceeds the game length, it
  is determined that no stable understanding was reached" — rounds counted from 1, the suffix
  includes round m, the threshold is compared exactly; no such round gives m = rounds + 1;
- ``best_response_round``: the same rule applied to "the agent's move is a best response (an
  optimal action of the benchmark policy) to the opponent in that round";
- ``adaptation_latency`` (switching bots): rounds from the switch until the best-response rule
  above holds from there to the end (0 = adapted at once; None = never);
- ``efficiency``: "points/tokens × c (default c = 1000)", tokens being all prompt and completion
  tokens of the episode; action shares, cooperation rate (PD) and invalid rounds.

**The balanced design** (:func:`counterfactual_design`, issue 15). Seed 003's counterfactual
cells are game × label condition × payoff condition: ``pd`` and ``rps``, each in ``default``
(familiar labels and payoffs), ``label`` (counterfactual labels), ``payoff`` (counterfactual
payoffs) and ``joint`` (both) — 8 cells. Every cell gets exactly ``episodes_per_cell`` episodes.
Episodes come in *matched sets*: set ``j`` of a game is one opponent and one episode seed,
played in all four settings, so the four episodes face the same opponent and the very same
draws and differ only in labels and payoffs (a paired counterfactual gap, not a comparison of
two opponent mixes). A game's sets cycle through the paper's four opponents in a seeded order,
so a multiple of 4 episodes per cell balances them exactly. The presets
(``harness/run/suites.py``): ``baseline`` 8 per cell — 64 episodes, 2 matched sets per opponent
and game, 32 × 16 PD rounds + 32 × 24 RPS rounds = 1,280 agent turns; ``quick`` none (one
per cell would be 160 turns, six times the rest of ``quick``).

B6's switching-bot episodes (:func:`b6_episodes`: 4 bots × 5 sessions of 30-round RPS, 600
turns) are generated apart from these cells; their design record says ``b6`` and reports keep
them out of the counterfactual cells and report them on their own.

**Agents as opponents** (issue 15 item 4; seed 003's LLM-vs-LLM setting). The opponent
``agent:control`` or ``agent:self`` (:data:`AGENT_OPPONENTS`) is not a script but another agent
of the run, in a *seat* the harness resolves: the agent's control, or a second instance of the
agent. The item holds the rules and ``{"kind": "agent", "seat": ...}`` (no draws, no benchmark);
:class:`SeatEpisode` gives each seat its own view of the history, and :func:`score_seats`
scores both seats' moves: payoffs, *m*, efficiency per seat's own tokens, and exploitation
against the best fixed action in hindsight (:data:`SEAT_BENCHMARK`); adaptation latency has no
switch to measure from. :func:`agent_seat_design` lays them out in matched sets (one seed per
set, played in every setting), so the counterfactual gap is paired there too.

**Layout.** The package's modules, each holding one part: ``_common`` (the family's names and
fixed figures), ``_game`` (the stage games and what a player reads), ``_opponents`` (the
scripted opponents), ``_episode`` (an episode against a script and its exact planner),
``_seats`` (agents as opponents), ``_items`` (items in and out), ``_design`` (the seeded
designs), ``_scoring`` (every figure of an episode, and :func:`score`) and ``_reference``
(reference agents). Everything public is re-exported here; import it from ``games.repeated``.
"""

from __future__ import annotations

from games.repeated._common import (
    B6_OPPONENTS,
    B6_PRESET,
    COUNTERFACTUALS,
    DEFAULT_ROUNDS,
    EFFICIENCY_SCALE,
    FAMILY,
    GAMES,
    GENERATOR,
    OPPONENTS,
    PAPER_OPPONENTS,
    REFERENCE_POLICIES,
    T_P,
    VERSION,
    Round,
)
from games.repeated._design import (
    MATCHED_SET_KEYS,
    agent_seat_design,
    b6_episodes,
    counterfactual_design,
    generate_episodes,
    matched_set,
)
from games.repeated._episode import (
    Episode,
)
from games.repeated._game import (
    RepeatedGame,
    repeated_game,
)
from games.repeated._items import (
    episode_from_item,
    make_episode,
    make_episode_item,
)
from games.repeated._reference import (
    play_reference,
    reference_answer,
    reference_move,
)
from games.repeated._scoring import (
    ERROR_CODES,
    play_moves,
    score,
    score_episode,
    score_seats,
)
from games.repeated._seats import (
    AGENT_OPPONENTS,
    SEAT_BENCHMARK,
    SEATS,
    SeatEpisode,
    agent_seat,
    seat_episode_from_item,
)

__all__ = [
    "AGENT_OPPONENTS",
    "B6_OPPONENTS",
    "B6_PRESET",
    "COUNTERFACTUALS",
    "DEFAULT_ROUNDS",
    "EFFICIENCY_SCALE",
    "ERROR_CODES",
    "FAMILY",
    "GAMES",
    "GENERATOR",
    "MATCHED_SET_KEYS",
    "OPPONENTS",
    "PAPER_OPPONENTS",
    "REFERENCE_POLICIES",
    "SEATS",
    "SEAT_BENCHMARK",
    "T_P",
    "VERSION",
    "Episode",
    "RepeatedGame",
    "Round",
    "SeatEpisode",
    "agent_seat",
    "agent_seat_design",
    "b6_episodes",
    "counterfactual_design",
    "episode_from_item",
    "generate_episodes",
    "make_episode",
    "make_episode_item",
    "matched_set",
    "play_moves",
    "play_reference",
    "reference_answer",
    "reference_move",
    "repeated_game",
    "score",
    "score_episode",
    "score_seats",
    "seat_episode_from_item",
]
