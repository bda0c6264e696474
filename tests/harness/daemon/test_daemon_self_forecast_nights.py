"""Issue 29's acceptance through the daemon's nightly path: over 20 nightly runs of a scripted
agent whose accuracy drifts, the three reference self-forecasters are diagnosed as what they are
(oracle skill > 0.5 with its interval above 0; naive skill 0 inside its interval; overconfident
90%-interval coverage below 50%).

Three agents, one per forecaster (each forecasts for itself), play the same drifting policy:
``noisy:P`` (the exact answer with probability P), P a seeded random walk reflected into
[0.15, 0.95], the agents' settings changed between nights. Each night, before the runs, each
agent asks ``GET /schedule/next`` for its announced run and commits a held forecast of that run's
false-belief accuracy through ``POST /forecasts`` with its own token: the oracle from P and the
suite's item mix (every question counts, and noisy:P is right on each with probability P: a
normal around P with the binomial spread), the naive and overconfident forecasters from the
agent's previous run's profile. Then each nightly job's work runs under the announced id
(:meth:`DaemonContext.nightly`, what the job calls when it fires: the fire itself is
``test_daemon_schedule_next``'s), which seals the run, executes it and reveals the forecasts;
the job's next fire is moved a day on, as APScheduler does after a fire.

Why these sizes. The suite is 105 false-belief questions (R1 and deeper, 15 per depth): the
figure's sampling sd is at most 0.049, against the walk's steps of sd 0.15, so the naive
forecast (last night's value) misses by about sqrt(0.15² + 2·0.049²) ≈ 0.16 while the oracle's
spread is the sampling sd alone. Simulated with the pure scoring (no daemon) over 200 walks, the
oracle's skill averaged 0.76 (5th percentile 0.65), its interval's lower end was above 0 in
every walk, and the overconfident forecaster's 90% coverage was at most 0.16 (at 70 questions
the skill fell below 0.5 in 1 walk in 100, at 56 in 1 in 20). The walk here (seed 16) is a
typical one: over 60 draws of its outcomes the oracle's skill averaged 0.76, its 1st percentile
0.64 (the lower end of its interval: 0.38). Every seed is fixed (the walk, the held-out seeds the
daemon draws), so the test is deterministic; with four seeds for the draws the oracle's skill
was 0.70 (interval 0.59 to 0.80), 0.84 (0.73, 0.89), 0.75 (0.51, 0.86) and 0.83 (0.75, 0.87),
the overconfident 90% coverage at most 0.11. The margins are in the assertions' messages.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from harness.config.schedule_config import MatrixSchedule
from harness.config.seeds import SEED_SPACE, is_held_out
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.daemon import BackgroundServer, Daemon, build_daemon, create_token
from harness.run import suites
from harness.run.forecasting import scheduled_run_id
from ledger.forecasts import read_forecasts
from mindledger.forecasts import Quantiles
from mindledger.items import Item
from nesttom import Design, generate_items
from reports.profile import build_profile
from reports.self_forecast import figure_value
from reports.self_forecasters import naive, oracle, overconfident

NIGHTS = 20
FIGURE = "false_belief_accuracy"
SUITE = "nightly-false-belief"
DEPTHS = ("R1", "R2", "R2-self", "R3", "R3-loop", "R4", "R5")
PER_DEPTH = 15
QUESTIONS = PER_DEPTH * len(DEPTHS)
"""Every question of the suite is one the figure counts (B1, false belief, R1 and deeper)."""
AGENTS = ("oracle", "naive", "overconfident")
"""One agent per reference forecaster, named after it."""
WALK_SEED = 16
SEED_DRAWS = 2029
N_BOOT = 200


def _walk(seed: int) -> list[float]:
    """P night by night: from 0.6, steps of sd 0.15, reflected into [0.15, 0.95]."""
    out, x = [], 0.6
    for step in np.random.default_rng(seed).normal(0.0, 0.15, NIGHTS):
        x += float(step)
        x = 1.9 - x if x > 0.95 else 0.3 - x if x < 0.15 else x
        out.append(round(x, 4))
    return out


def _questions(seed: int, hitom_path: Path | None) -> Iterator[Item]:
    design = Design(depths=DEPTHS, belief_types=("false",))
    yield from generate_items(seed, QUESTIONS, design, block="B1")


@dataclass
class Night:
    """The daemon, served, and what the forecasters call it with."""

    daemon: Daemon
    settings: Settings
    client: httpx.Client
    tokens: dict[str, str]

    def send(self, method: str, path: str, agent: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[agent]}"}
        return self.client.request(method, path, headers=headers, **kw)

    def with_policy(self, p: float) -> None:
        """The agents' settings changed (the settings the scheduled jobs run against): they
        all play ``noisy:p`` from the next run on."""
        agents = {n: replace(a, policy=f"noisy:{p}") for n, a in self.settings.agents.items()}
        assert self.daemon.scheduler is not None
        self.daemon.scheduler.context.settings = replace(self.settings, agents=agents)


@pytest.fixture
def night(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Night]:
    suite = suites.Suite(SUITE, "false-belief questions only", {"nesttom_belief": QUESTIONS},
                         _questions)  # fmt: skip
    monkeypatch.setitem(suites.SUITES, SUITE, suite)
    draws = np.random.default_rng(SEED_DRAWS)

    def draw_seed(*, held_out: bool, fraction: float = 0.3) -> int:
        while True:  # the daemon's held-out draws, from a fixed seed
            seed = int(draws.integers(SEED_SPACE))
            if is_held_out(seed, fraction) == held_out:
                return seed

    monkeypatch.setattr("harness.config.workspace.draw_seed", draw_seed)
    base = load_settings(None, env={}, flags={"db_url": f"sqlite:///{tmp_path / 'n.db'}",
                                              "home": str(tmp_path)})  # fmt: skip
    agents = {n: AgentConfig(name=n, adapter="reference", policy="noisy:0.6") for n in AGENTS}
    settings = replace(base, agents=agents, head_interval=0, api_rate_limit=100_000.0,
                       schedule="0 3 * * *",
                       schedule_matrix=replace(MatrixSchedule(), enabled=False))  # fmt: skip
    daemon = build_daemon(settings, suite=SUITE, scheduler_options={"expire_every": None})
    assert daemon.scheduler is not None
    daemon.scheduler.start(paused=True)  # its jobs never fire on their own here
    today = dt.datetime.now(dt.UTC).replace(hour=3, minute=0, second=0, microsecond=0)
    first = today + dt.timedelta(days=1)  # tomorrow's night: its deadline is hours away
    for agent in AGENTS:
        daemon.scheduler.scheduler.modify_job(f"nightly:{agent}", next_run_time=first)
    tokens = {n: create_token(daemon.engine, n) for n in AGENTS}
    try:
        with (
            BackgroundServer(daemon.app) as server,
            httpx.Client(base_url=server.url, timeout=120) as client,
        ):
            yield Night(daemon, settings, client, tokens)
    finally:
        daemon.close()


def _previous(night: Night, agent: str, run_id: str) -> tuple[float, tuple[float, float], float]:
    """The agent's figure in its run ``run_id``, with its interval and the interval's level."""
    was = figure_value(build_profile(night.daemon.store, run_id, n_boot=N_BOOT), agent, FIGURE)
    assert was.value is not None and was.ci is not None, was.reason
    return was.value, was.ci, was.level


def _forecast(agent: str, p: float, previous: tuple[float, tuple[float, float], float] | None
              ) -> Quantiles | None:  # fmt: skip
    if agent == "oracle":  # the expected accuracy and its binomial spread: from P and the suite
        return oracle(p, math.sqrt(p * (1.0 - p) / QUESTIONS))
    if previous is None:
        return None  # no previous value yet: nothing to forecast from
    value, ci, level = previous
    return naive(value, ci, level) if agent == "naive" else overconfident(value)


@pytest.mark.slow
def test_twenty_nights_diagnose_the_reference_forecasters(night: Night) -> None:
    assert night.daemon.scheduler is not None
    context = night.daemon.scheduler.context
    runs: dict[str, list[str]] = {a: [] for a in AGENTS}
    walk = _walk(WALK_SEED)
    assert max(walk) - min(walk) > 0.4  # the agent's accuracy does drift
    for p in walk:
        night.with_policy(p)
        announced = {}
        for agent in AGENTS:
            r = night.send("GET", "/schedule/next", agent)
            assert r.status_code == 200, r.text
            (run,) = r.json()["runs"]
            fire = dt.datetime.fromisoformat(run["fire_time"].replace("Z", "+00:00"))
            assert run["run"] == scheduled_run_id(f"nightly:{agent}", fire)
            assert run["suite"] == SUITE and FIGURE in run["figures"]
            announced[agent] = (run["run"], fire)
            previous = _previous(night, agent, runs[agent][-1]) if runs[agent] else None
            forecast = _forecast(agent, p, previous)
            if forecast is None:
                continue
            made = night.send("POST", "/forecasts", agent, json={
                "run": run["run"], "figure": FIGURE, "forecast": forecast.to_json(),
                "reason": f"self-forecast:{agent}"})  # fmt: skip
            assert made.status_code == 201 and made.json()["held"] is True, made.text
        for agent in AGENTS:  # each job fires: its work, under the id it announced
            run_id, fire = announced[agent]
            assert context.nightly(suite=SUITE, agents=(agent,), run_id=run_id) == (run_id, None)
            night.daemon.scheduler.scheduler.modify_job(
                f"nightly:{agent}", next_run_time=fire + dt.timedelta(days=1)
            )
            runs[agent].append(run_id)

    store, ledger = night.daemon.store, night.daemon.ledger
    assert ledger.verify() == []
    for agent in AGENTS:
        # each night's run played that night's policy
        policies = [store.run_agents(r)[0].spec["policy"] for r in runs[agent]]
        assert policies == [f"noisy:{p}" for p in walk]
        states = read_forecasts(store.engine, predictor=agent)
        assert len(states) == (NIGHTS if agent == "oracle" else NIGHTS - 1)
        assert {s.status for s in states} == {"scored"}, [s.note for s in states]
    # every forecast was committed before its run's seal
    seals = {
        e.subject.removeprefix("run:"): e.seq for e in ledger.entries() if e.kind == "run-start"
    }
    for f in read_forecasts(store.engine):
        assert f.seq < seals[f.run_id]

    sections = {}
    for agent in AGENTS:
        profile = build_profile(store, runs[agent][-1], n_boot=N_BOOT)
        a = profile.agents[agent]
        assert a.false_belief_accuracy.n == QUESTIONS  # the item mix the oracle assumed
        assert a.self_forecast is not None, agent
        assert a.self_forecast.counts.scored == (NIGHTS if agent == "oracle" else NIGHTS - 1)
        sections[agent] = a.self_forecast
    sf = sections["oracle"]
    skill = sf.skill["quantile_score"]
    cover = sections["overconfident"].coverage["90"]
    naive_skill = sections["naive"].skill["quantile_score"]
    margins = (f"oracle skill {skill.value} {skill.ci}; naive {naive_skill.value} "
               f"{naive_skill.ci}; overconfident 90% coverage {cover.value}; oracle 90% "
               f"coverage {sf.coverage['90'].value}")  # fmt: skip
    assert skill.value is not None and skill.value > 0.5, margins
    assert skill.ci is not None and (skill.ci[0] or 0) > 0, margins
    assert naive_skill.value == pytest.approx(0.0, abs=1e-9), margins
    lo, hi = naive_skill.ci or (None, None)
    assert lo is not None and hi is not None and lo <= 0.0 <= hi, margins
    assert cover.value is not None and cover.value < 0.5, margins
    assert sf.coverage["90"].value is not None and sf.coverage["90"].value >= 0.7, margins
