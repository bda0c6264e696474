"""Benchmark: do two identical agents ever come out different on the real suites?

The acceptance criterion of the statistics issue: *two identical scripted agents with
independent randomness as agent and control: no contrast significant after Holm in >= 95% of
seeds, on ``quick`` and on ``baseline``*. ``bench/bench_stats.py`` checks it on synthetic
items; this checks it on the **real** items (``harness.run.suites.get_suite(name).build(seed)``),
answered by a scripted policy through the reference agents' answers
(:func:`harness.agent.families.reference_answer`), scored by the runner's own scoring step
(:func:`harness.run.runner.score_attempt`, i.e. each family's real scorer with its error codes and
episode details), and profiled exactly as ``mindledger report`` does
(:func:`reports.profile.analyse`).

The policy (:class:`NoisyOracle`) knows the answer but not always: on a NestToM item it answers
correctly with a probability that falls with the belief depth (a logistic curve with D50 3);
otherwise it slips, answering as the ``random``, ``reality-leak`` or ``depth-capped:d-1``
reference agent would (one of the three at random), so wrong answers carry the error codes
real models produce. On a game item it answers as the oracle with probability 0.6, else as
``random``; in a repeated game it does the same round by round, against the episode's scripted
opponent (:func:`games.repeated.reference_move`), so episodes get real exploitation figures.
Agent and control play this policy with independent generators.

For each suite and development seed (held-out seeds are skipped: their items stay unseen) it
prints the share of seeds in which any agent − control contrast is significant after Holm
(goal <= 5%) with its Monte Carlo interval, the per-test rate before correction, the family
size m, and which metrics came out significant when any did, beside the time each step took
and, side by side, the same figures of the synthetic null runs of ``bench/bench_stats.py`` on
the suite's design over the same seeds (``--no-synthetic`` to skip them).

Usage: ``python bench/bench_identical_agents.py [--seeds 100 40] [--boot 500]
[--suites quick baseline] [--no-synthetic]`` (one ``--seeds`` value for every suite, or one
per suite).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from games.repeated import Round, agent_seat, episode_from_item, reference_move
from harness.agent.agents import Attempt
from harness.agent.families import reference_answer
from harness.config.seeds import is_held_out
from harness.run.runner import score_attempt
from harness.run.suites import get_suite
from ledger.store import RunAgent, TrialRecord
from mindledger.items import Item
from reports._data import RunData, run_data, trial_columns
from reports._stats import wilson_interval
from reports.profile import analyse

__all__ = [
    "NULL_POLICY",
    "ORACLE",
    "NoisyOracle",
    "SeedOutcome",
    "StudyResult",
    "development_seeds",
    "null_study",
    "play",
    "profile_seed",
    "scripted_run",
    "zero_width_contrasts",
]


@dataclass(frozen=True)
class NoisyOracle:
    """A scripted reasoner that knows every answer and gives it with a probability that depends
    on the item: ``1 / (1 + exp(-slope · (d50 − depth)))`` on a NestToM or Hi-ToM item of belief
    depth ``depth_n``, ``games`` on a game item and in each round of a repeated game. When it
    does not give the answer it slips: NestToM items get the answer of the ``random``,
    ``reality-leak`` or ``depth-capped:depth−1`` reference agent (one of the three, uniformly),
    game items and rounds the ``random`` one's."""

    d50: float = 3.0
    slope: float = 1.2
    games: float = 0.6

    def p_correct(self, item: Item) -> float:
        """The probability of answering ``item`` as the oracle does."""
        if item.family in ("nesttom", "hitom"):
            depth = _depth(item)
            return 1.0 / (1.0 + math.exp(-self.slope * (self.d50 - depth)))
        return self.games

    def answer(self, item: Item, rng: np.random.Generator) -> Any:
        """This policy's answer to ``item`` (a whole episode's moves for a repeated game)."""
        if item.family == "repeated":
            if agent_seat(item) is not None:  # against an agent of the run: a random twin
                return reference_answer(item, "random", rng)
            return self._episode(item, rng)
        if rng.random() < self.p_correct(item):
            return reference_answer(item, "oracle", rng)
        slip = "random"
        if item.family == "nesttom":
            depth = int(_depth(item))
            slip = ("random", "reality-leak", f"depth-capped:{max(depth - 1, 0)}")[
                int(rng.integers(3))]
        return reference_answer(item, slip, rng)

    def _episode(self, item: Item, rng: np.random.Generator) -> dict[str, Any]:
        episode = episode_from_item(item)
        history: list[Round] = []
        for _ in range(episode.rounds):
            policy = "oracle" if rng.random() < self.games else "random"
            move = reference_move(episode, policy, history, rng)
            history.append((move, episode.opponent_move(history)))
        return {"moves": [a for a, _ in history], "tokens": 0}


def _depth(item: Item) -> float:
    d = item.meta.get("depth_n")
    return float(d) if isinstance(d, int | float) and not isinstance(d, bool) else 0.0


NULL_POLICY = NoisyOracle()
"""The policy agent and control both play in the null study."""

ORACLE = NoisyOracle(d50=math.inf, games=1.0)
"""Always the oracle's answer (for checks that the study can see a real difference)."""


def play(
    policy: NoisyOracle, items: Sequence[Item], rng: np.random.Generator, agent: str
) -> list[TrialRecord]:
    """``agent``'s trials on ``items``, answered by ``policy`` and scored by the runner's own
    scoring step (:func:`harness.run.runner.score_attempt`)."""
    out = []
    for item in items:
        att = Attempt(answer=policy.answer(item, rng), provider={"policy": "noisy-oracle"})
        out.append(score_attempt("", agent, item, att))
    return out


def scripted_run(
    suite: str,
    seed: int,
    items: Sequence[Item],
    *,
    agent: NoisyOracle = NULL_POLICY,
    control: NoisyOracle = NULL_POLICY,
    item_dicts: Sequence[Mapping[str, Any]] | None = None,
) -> RunData:
    """A run of ``items`` with an agent (role ``agent``) and its control (role ``control``,
    base agent ``agent``) playing the given policies with independent generators."""
    spec = {"adapter": "scripted", "policy": "noisy-oracle"}
    agents = [
        RunAgent("agent", "agent", spec | {"d50": agent.d50, "games": agent.games}),
        RunAgent("agent-control", "control", spec | {"d50": control.d50, "games": control.games},
                 base_agent="agent"),
    ]
    trials = [
        *play(agent, items, np.random.default_rng([seed, 0xA6E, 1]), "agent"),
        *play(control, items, np.random.default_rng([seed, 0xA6E, 2]), "agent-control"),
    ]
    run = {"id": f"identical-{suite}-{seed}", "suite": suite, "seed": seed, "held_out": False,
           "status": "complete", "created_at": None, "finished_at": None, "params": {}}
    bodies = item_dicts if item_dicts is not None else [it.to_dict() for it in items]
    return run_data(run, agents, bodies, [trial_columns(t) for t in trials])


def _flat_contrasts(metrics: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key, value in metrics.items():
        if key == "accuracy_by_depth" and isinstance(value, Mapping):
            for label, d in value.items():
                yield f"accuracy_by_depth.{label}", d
        elif isinstance(value, Mapping) and value.get("available") is not False:
            yield key, value


def zero_width_contrasts(profile: Mapping[str, Any]) -> list[str]:
    """The agent − control and ablation contrasts of ``profile`` whose interval has no width
    (``ci`` lo == hi), as ``"agent − other: metric [lo, hi] (n)"``; empty when there are none."""
    out = []
    for name, ag in (profile.get("agents") or {}).items():
        blocks = [ag.get("minus_control") or {}, *(ag.get("other_controls") or {}).values(),
                  *(ag.get("ablation_credit") or {}).values()]
        for block in blocks:
            for metric, d in _flat_contrasts(block.get("metrics") or {}):
                ci = d.get("ci")
                if ci and ci[0] is not None and ci[0] == ci[1]:
                    out.append(f"{block.get('direction', name)}: {metric} {ci} (n = {d.get('n')})")
    return out


@dataclass(frozen=True)
class SeedOutcome:
    """What the profile of one seed's run said."""

    seed: int
    m: int
    """Family size: contrasts with a p-value."""
    tested: tuple[str, ...]
    """Metrics of the contrasts with a p-value (the Holm family)."""
    raw_significant: tuple[str, ...]
    """Metrics with p < 0.05 before correction."""
    holm_significant: tuple[str, ...]
    """Metrics with p < 0.05 after Holm."""
    zero_width: tuple[str, ...]
    """Contrasts whose interval has no width (:func:`zero_width_contrasts`)."""


def profile_seed(rd: RunData, seed: int, n_boot: int) -> SeedOutcome:
    """Profile ``rd`` (bootstrap seed ``seed``) and read off its contrasts."""
    prof = analyse(rd, seed=seed, n_boot=n_boot).profile.to_json()
    contrasts = prof["contrasts"]
    return SeedOutcome(
        seed=seed,
        m=int(prof["multiple_comparisons"]["m"]),
        tested=tuple(c["metric"] for c in contrasts if c.get("p") is not None),
        raw_significant=tuple(c["metric"] for c in contrasts
                              if c.get("p") is not None and c["p"] < 0.05),
        holm_significant=tuple(c["metric"] for c in contrasts
                               if c.get("p_holm") is not None and c["p_holm"] < 0.05),
        zero_width=tuple(zero_width_contrasts(prof)),
    )


@dataclass
class StudyResult:
    """The outcome of :func:`null_study` on one suite."""

    suite: str
    n_boot: int
    outcomes: list[SeedOutcome] = field(default_factory=list)
    n_items: list[int] = field(default_factory=list)
    build_s: float = 0.0
    play_s: float = 0.0
    profile_s: float = 0.0

    @property
    def seeds(self) -> int:
        return len(self.outcomes)

    @property
    def any_significant(self) -> int:
        """Seeds with at least one contrast significant after Holm."""
        return sum(1 for o in self.outcomes if o.holm_significant)

    @property
    def fwer(self) -> float:
        return self.any_significant / self.seeds if self.seeds else math.nan

    @property
    def fwer_interval(self) -> tuple[float, float]:
        """Wilson 95% interval of the family-wise rate over the seeds (Monte Carlo error)."""
        return wilson_interval(self.any_significant, self.seeds)

    @property
    def tests(self) -> int:
        return sum(o.m for o in self.outcomes)

    @property
    def raw_rate(self) -> float:
        """Share of all tests with p < 0.05 before correction."""
        raw = sum(len(o.raw_significant) for o in self.outcomes)
        return raw / self.tests if self.tests else math.nan

    @property
    def mean_m(self) -> float:
        return self.tests / self.seeds if self.seeds else math.nan

    def raw_by_metric(self) -> dict[str, tuple[int, int]]:
        """Per metric: (seeds with p < 0.05 before correction, seeds in which it was tested)."""
        tested = Counter(m for o in self.outcomes for m in o.tested)
        hits = Counter(m for o in self.outcomes for m in o.raw_significant)
        return {m: (hits[m], n) for m, n in tested.items()}

    def significant_metrics(self) -> Counter[str]:
        """How often each metric came out significant after Holm."""
        return Counter(m for o in self.outcomes for m in o.holm_significant)


def development_seeds(n: int, start: int = 0, fraction: float = 0.3) -> list[int]:
    """The first ``n`` seeds from ``start`` that are not in the held-out share."""
    out: list[int] = []
    seed = start
    while len(out) < n:
        if not is_held_out(seed, fraction):
            out.append(seed)
        seed += 1
    return out


def null_study(
    suite: str,
    seeds: Iterable[int],
    n_boot: int = 500,
    *,
    agent: NoisyOracle = NULL_POLICY,
    control: NoisyOracle = NULL_POLICY,
    progress: Callable[[int, StudyResult], None] | None = None,
) -> StudyResult:
    """For each seed: build ``suite``'s items, let ``agent`` and ``control`` answer them (the
    same policy by default, with independent randomness), profile the run and record its
    contrasts."""
    res = StudyResult(suite, n_boot)
    spec = get_suite(suite)
    for count, seed in enumerate(seeds, start=1):
        t0 = time.perf_counter()
        items = spec.build(seed)
        bodies = [it.to_dict() for it in items]
        t1 = time.perf_counter()
        rd = scripted_run(suite, seed, items, agent=agent, control=control, item_dicts=bodies)
        t2 = time.perf_counter()
        res.outcomes.append(profile_seed(rd, seed, n_boot))
        t3 = time.perf_counter()
        res.n_items.append(len(items))
        res.build_s += t1 - t0
        res.play_s += t2 - t1
        res.profile_s += t3 - t2
        if progress is not None:
            progress(count, res)
    return res


def _pct(v: float) -> str:
    return "—" if math.isnan(v) else f"{100 * v:.1f}%"


def report(res: StudyResult, wall_s: float, synthetic: Any = None) -> str:
    """The summary of one suite's study, as printed (``synthetic``: the
    :class:`reports.simulation.StudyResult` of the same design and seeds, printed beside it)."""
    lo, hi = res.fwer_interval if res.seeds else (math.nan, math.nan)
    verdict = "PASS" if res.fwer <= 0.05 else "FAIL"
    ms = sorted({o.m for o in res.outcomes})
    per = wall_s / res.seeds if res.seeds else math.nan
    lines = [
        f"## {res.suite}: {res.seeds} seeds, {int(np.mean(res.n_items))} items a run, "
        f"B={res.n_boot}, {wall_s:.0f} s ({per:.2f} s/seed: build "
        f"{res.build_s / wall_s:.0%}, answer+score {res.play_s / wall_s:.0%}, profile "
        f"{res.profile_s / wall_s:.0%})",
        f"  seeds with any contrast significant after Holm: {res.any_significant}/{res.seeds} "
        f"= {_pct(res.fwer)} (MC 95% {_pct(lo)}–{_pct(hi)}); goal <= 5%: {verdict}",
        f"  per test before correction: {_pct(res.raw_rate)} of {res.tests} tests "
        "(nominal 5%)",
        f"  family size m: mean {res.mean_m:.1f} (values {', '.join(map(str, ms))})",
    ]
    if synthetic is not None and synthetic.null_runs:
        raw = (synthetic.null_raw_significant / synthetic.null_tests if synthetic.null_tests
               else math.nan)
        slo, shi = wilson_interval(synthetic.null_any_significant, synthetic.null_runs)
        lines.append(
            f"  beside it, synthetic items of this design (reports.simulation, agent = control "
            f"= ablation): {synthetic.null_any_significant}/{synthetic.null_runs} = "
            f"{_pct(synthetic.fwer)} (MC 95% {_pct(slo)}–{_pct(shi)}), per test "
            f"{_pct(raw)} of {synthetic.null_tests}, mean m "
            f"{np.mean(synthetic.null_m):.1f}")
    if res.mean_m == 0:
        lines.append("  no contrast was testable in any seed: every one is not estimable at "
                     "this suite's size, so the criterion holds vacuously")
    by_metric = res.raw_by_metric()
    if by_metric:
        lines.append("  per test before correction, by metric: " + ", ".join(
            f"{m} {k}/{n}" for m, (k, n) in by_metric.items()))
    sig = res.significant_metrics()
    if sig:
        lines.append("  significant after Holm: " + ", ".join(
            f"{m} ({k}x)" for m, k in sig.most_common()))
        for o in res.outcomes:
            if o.holm_significant:
                lines.append(f"    seed {o.seed}: {', '.join(o.holm_significant)}")
    zero = sum(1 for o in res.outcomes if o.zero_width)
    if zero:
        first = next(o for o in res.outcomes if o.zero_width)
        lines.append(f"  zero-width contrast intervals in {zero} seeds (e.g. seed {first.seed}: "
                     f"{first.zero_width[0]})")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100, 40],
                    help="development seeds per suite (one value, or one per suite)")
    ap.add_argument("--boot", type=int, default=500, help="bootstrap replicates per profile")
    ap.add_argument("--suites", nargs="+", default=["quick", "baseline"])
    ap.add_argument("--no-synthetic", action="store_true",
                    help="skip the synthetic null runs printed beside the real ones")
    args = ap.parse_args()
    counts = args.seeds if len(args.seeds) == len(args.suites) else [args.seeds[0]] * len(
        args.suites)
    out = []
    for suite, n in zip(args.suites, counts, strict=True):
        t0 = time.perf_counter()

        def progress(k: int, res: StudyResult, suite: str = suite, n: int = n,
                     t0: float = t0) -> None:
            if k % max(1, n // 10) == 0 or k == n:
                rate = (time.perf_counter() - t0) / k
                print(f"  {suite}: {k}/{n} seeds ({rate:.2f} s/seed), {res.any_significant} "
                      "with a Holm-significant contrast so far", file=sys.stderr, flush=True)

        seeds = development_seeds(n)
        res = null_study(suite, seeds, args.boot, progress=progress)
        wall = time.perf_counter() - t0
        synthetic = None
        if not args.no_synthetic:
            from reports.simulation import run_study

            print(f"  {suite}: the synthetic design over the same seeds ...", file=sys.stderr,
                  flush=True)
            synthetic = run_study(suite, seeds, n_boot=args.boot)
        out.append(report(res, wall, synthetic))
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
