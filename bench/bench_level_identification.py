"""Benchmark: does K_B identify a level only where there is one, on the real ``baseline``?

Issue 24's acceptance for the depth signals (item 6): *``random`` on ``baseline``: K_B not
identifiable (or an interval covering every level) in 10 of 10 seeds; ``level:2`` on
``baseline``: K_B = 2 with an interval that excludes 0 and 4*. This runs exactly what a user
runs, as separate processes, in a scratch ``MINDLEDGER_HOME``:

    mindledger run --suite baseline --reference random --reference level:2 --seed S
    mindledger report latest --format json

for the first ``--seeds`` development seeds (held-out seeds are skipped), and prints per seed
random's K_B (identifiable or not, its level-k fit with the fit's interval, the exact p-value
against a uniformly random player, matched share beside chance) and level:2's K_B with its
interval, then the two acceptance counts. Beside them, for scale, it prints how many of the
seeds the gate that was tried first — the fit's 95% bootstrap interval above 0 — would have
let random through, and the run's and the report's wall times.

Usage: ``python bench/bench_level_identification.py [--seeds 10] [--keep DIR]``
(about 45 s a seed on a 2-CPU machine; reference agents need no model).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.config.seeds import is_held_out


def _cli(home: Path, *args: str) -> str:
    env = dict(os.environ, MINDLEDGER_HOME=str(home))
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"mindledger {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def measure(seed: int, home: Path) -> dict[str, Any]:
    """Run baseline with the two references at ``seed`` and read their K_B from the profile."""
    t0 = time.perf_counter()
    _cli(
        home,
        "run",
        "--suite",
        "baseline",
        "--reference",
        "random",
        "--reference",
        "level:2",
        "--seed",
        str(seed),
        "--progress",
        "none",
    )
    t1 = time.perf_counter()
    profile = json.loads(_cli(home, "report", "latest", "--format", "json"))
    t2 = time.perf_counter()
    agents = profile["agents"]
    return {
        "seed": seed,
        "run_s": t1 - t0,
        "report_s": t2 - t1,
        "random": agents["ref:random"]["depth_signals"]["K_B"],
        "level2": agents["ref:level:2"]["depth_signals"]["K_B"],
    }


def _ci(ci: Any) -> str:
    return "—" if not ci else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="development seeds to run")
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs in this home")
    args = ap.parse_args(argv)
    seeds = [s for s in range(10 * args.seeds + 10) if not is_held_out(s)][: args.seeds]
    home = args.keep or Path(tempfile.mkdtemp(prefix="mindledger-levels-"))
    home.mkdir(parents=True, exist_ok=True)
    print(f"baseline, references random and level:2; seeds {seeds}; home {home}")
    print(
        f"{'seed':>5} | {'random K_B':<17} | {'fit [95%]':<22} | {'p chance':>8} | "
        f"{'matched/chance':<14} | {'level:2 K_B':<22} | run s | report s"
    )
    rows = []
    for seed in seeds:
        m = measure(seed, home)
        rows.append(m)
        r, lv = m["random"], m["level2"]
        fit = r.get("fit") or {}
        state = {True: "IDENTIFIED", False: "not identifiable", None: "untested"}[
            r.get("identifiable")
        ]
        level = f"{lv.get('value')} {_ci(lv.get('ci'))} ({'id' if lv.get('identifiable') else '?'})"
        share = f"{fit.get('matched_share', 0):.2f}/{fit.get('chance', 0):.2f}"
        print(
            f"{seed:>5} | {state:<17} | {fit.get('value', 0):+.2f} {_ci(fit.get('ci')):<16} | "
            f"{fit.get('p_chance', 1):>8.3f} | {share:<14} | {level:<22} | "
            f"{m['run_s']:5.1f} | {m['report_s']:5.1f}"
        )
    n = len(rows)
    not_id = sum(1 for m in rows if m["random"].get("identifiable") is not True)
    boot_gate = sum(1 for m in rows if ((m["random"].get("fit") or {}).get("ci") or [0.0])[0] > 0.0)

    def level2_ok(k: dict[str, Any]) -> bool:
        ci = k.get("ci") or []
        return (
            k.get("value") == 2
            and k.get("identifiable") is True
            and len(ci) == 2
            and not ci[0] <= 0 <= ci[1]
            and not ci[0] <= 4 <= ci[1]
        )

    ok2 = sum(1 for m in rows if level2_ok(m["level2"]))
    print(
        f"random K_B not identifiable in {not_id} of {n} seeds (goal {n} of {n}); "
        f"the 95%-bootstrap gate would have identified it in {boot_gate} of {n}"
    )
    print(f"level:2 K_B = 2 with an interval excluding 0 and 4 in {ok2} of {n} seeds")
    return 0 if not_id == n and ok2 == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
