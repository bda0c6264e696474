"""Benchmark: fresh distinguishable game variants generated and verified per second.

Side by side in one run, on the same machine:

1. ``variants``   — :func:`games.generate_variant` (draw parameters, enumerate the payoff matrix,
   derive the anchor, write the rules, run the distinguishability checker; redraw on failure);
2. ``canonical``  — rebuilding one of the paper's four games from its parameters and checking it
   (the fixed cost of one game with no search), for the ratio variant / canonical;
3. ``brute``      — the same generation and verification written as a plain-Python reference
   (the same parameter draws; payoffs by loops over the formula; best responses by loops;
   Definition 1 by comparing every pair of depths), for the ratio checker / brute force;
4. ``items``      — full trial items with variants (``generate_items(variants=True)``).

Run: ``python bench/bench_games.py [--seconds 2]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from games import (
    CANONICAL_PARAMS,
    VARIANT_FAMILIES,
    build_game,
    check_distinguishability,
    generate_items,
    generate_variant,
)
from games._variants import variant_params


def _rate(work: Callable[[int], int], seconds: float) -> tuple[float, int]:
    """Units of work per second, running ``work(i)`` (which returns units done) repeatedly."""
    done = 0
    i = 0
    start = time.perf_counter()
    while True:
        done += work(i)
        i += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return done / elapsed, done


def _brute_payoff(family: str, p: dict[str, int], s: int, a: int) -> float:
    if family == "11-20":
        return s + p["bonus"] * (s == a - p["gap"]) + p["small_bonus"] * (s == a - p["small_gap"])
    if family == "all-pay":
        return p["prize"] * (s > a) + p["tie"] * (s == a) - s
    if family == "nash-demand":
        if s + a <= p["prize"]:
            return float(s)
        return (s * p["rate"]) / 100 if s < a else 0.0
    return s + p["bonus"] * (s == a - p["gap"]) + p["small_bonus"] * (s == a + p["small_gap"])


def _brute_actions(family: str, p: dict[str, int]) -> list[int]:
    if family == "all-pay":
        return list(range(0, p["top"] + 1, p["step"]))
    if family == "nash-demand":
        return list(range(1, p["prize"] + 1))
    return list(range(p["lo"], p["hi"] + 1))


def _brute_variant(family: str, rng: np.random.Generator, depth: int = 10) -> list[int]:
    """Draw parameters like generate_variant, then build and verify in plain Python."""
    canonical = dict(CANONICAL_PARAMS[family])
    while True:
        p = variant_params(family, rng, depth)
        if p == canonical:
            continue
        actions = _brute_actions(family, p)
        n = len(actions)
        table = [[_brute_payoff(family, p, s, a) for a in actions] for s in actions]
        anchor = actions[0] if family == "all-pay" else actions[-1]
        seq, ok = [anchor], True
        for _ in range(depth):
            j = actions.index(seq[-1])
            best = max(table[i][j] for i in range(n))
            winners = [actions[i] for i in range(n) if table[i][j] == best]
            if len(winners) != 1:
                ok = False
                break
            seq.append(winners[0])
        if ok and all(seq[x] != seq[y] for y in range(depth + 1) for x in range(y)):
            return seq


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="Time per measurement.")
    args = parser.parse_args()
    secs = args.seconds
    families = list(VARIANT_FAMILIES)

    rng = np.random.default_rng(20261130)
    brute_rng = np.random.default_rng(20261130)

    def variants(i: int) -> int:
        _, verdict = generate_variant(families[i % len(families)], rng)
        assert verdict.strict
        return 1

    def canonical(i: int) -> int:
        family = families[i % len(families)]
        spec = build_game(family, CANONICAL_PARAMS[family])
        check_distinguishability(spec)
        return 1

    def brute(i: int) -> int:
        assert len(_brute_variant(families[i % len(families)], brute_rng)) == 11
        return 1

    def items(i: int) -> int:
        return len(generate_items(i, 16, variants=True))

    v_rate, v_n = _rate(variants, secs)
    c_rate, c_n = _rate(canonical, secs)
    b_rate, b_n = _rate(brute, secs)
    i_rate, i_n = _rate(items, secs)

    print("games benchmark (one process, measured side by side)")
    print(f"  fresh variants generated + verified : {v_rate:10.0f} /s   (n={v_n})")
    print(f"  canonical game rebuilt + checked    : {c_rate:10.0f} /s   (n={c_n})")
    print(f"  same, plain-Python brute force      : {b_rate:10.0f} /s   (n={b_n})")
    print(f"  trial items with variants           : {i_rate:10.0f} /s   (n={i_n})")
    print(f"  cost of a fresh variant vs canonical: {c_rate / v_rate:10.2f} x")
    print(f"  speed-up of the checker over brute  : {v_rate / b_rate:10.2f} x")


if __name__ == "__main__":
    main()
