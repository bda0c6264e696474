"""Benchmark: how long the commands users run most take, each timed as a whole process beside
``python -c pass`` (issue 23, "fast where users live").

It makes a temporary data directory holding a baseline run (the oracle and random reference
agents: 6,972 trials, about a minute to make) and then a quick run (the example command agent
of ``examples/command_agent.py`` under test with its control, and the two references: 104
trials), and times in fresh interpreters:

- ``mindledger --version``, ``--help``, ``runs``, ``config show``, ``doctor`` (no agent is
  declared in the data directory, so it sends none an item), ``trials latest``;
- ``report RUN --format json|md|html`` for the quick run and for the baseline run;
- the dashboard's run screen: a headless ``DashboardApp.run_test()`` built as ``mindledger
  dashboard`` builds it, from the interpreter's start until the run screen's table of agents
  has rows (the runs screen shown first, the run then opened).

Every measurement is the minimum of ``--repeat`` runs (5) after one warm-up, taken in turn with
``python -c pass`` so that the ratio compares the two under the same load. The interpreters
cache their bytecode (under the temporary directory, whatever PYTHONDONTWRITEBYTECODE says), as
an installed package does. The goals are those of the issue; the machine's load average is
printed before and after, since every absolute time moves with it.

Usage::

    python bench/bench_cli_latency.py                  # about four minutes
    python bench/bench_cli_latency.py --home /tmp/ml   # keep (or reuse) the data directory
    git archive 349d05c | tar -x -C /tmp/then          # an earlier commit's source tree, ...
    python bench/bench_cli_latency.py --against /tmp/then   # ... timed in turn with this one
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = "1528201528"
"""A development seed (outside the held-out share), so both runs are the same every time."""

AGENT = f"""\
[agents.example]
adapter = "command"
command = [{json.dumps(sys.executable)}, {json.dumps(str(ROOT / "examples" / "command_agent.py"))}]
"""
"""The quick run's agent under test (its control is derived from it)."""

DASHBOARD = """
import asyncio, sys
from pathlib import Path

from textual.widgets import DataTable

from harness.config.settings import load_settings
from tui import DashboardApp
from tui.screens import RunScreen, RunsScreen


async def filled(app: DashboardApp, screen: type, table: str) -> None:
    # Until the app shows a `screen` whose DataTable `table` has rows, polled every 2 ms and
    # cheaply: the table is looked up once, and no poll queries the DOM or waits for every
    # widget's messages (pilot.pause): that took the UI thread a fifth of a core from the
    # worker being timed (through the GIL), which no user's dashboard does.
    while not (isinstance(app.screen, screen) and app.screen.is_mounted):
        await asyncio.sleep(0.002)
    rows = app.screen.query_one(table, DataTable)
    while not rows.row_count:
        await asyncio.sleep(0.002)


async def main(run_id: str) -> None:
    settings = load_settings(None)
    try:
        from harness.cli.dashboard_cmd import dashboard_source
    except ImportError:  # an older tree (--against), before dashboard_source
        from harness.cli.dashboard_cmd import ledger_opener, queue_reader, schedule_reader
        from harness.config.workspace import Workspace
        from tui import DashboardSource

        workspace = Workspace.open(settings)
        source = DashboardSource(
            workspace.store, ledger_opener(workspace), n_boot=2000, seed=0,
            schedule=schedule_reader(workspace.settings, workspace.store),
            queue=queue_reader(workspace.store),
        )
    else:
        def open_workspace():  # as `mindledger dashboard`: when a screen first needs it
            from harness.config.workspace import Workspace

            return Workspace.open(settings)

        source = dashboard_source(settings, open_workspace, n_boot=2000, seed=0)
    app = DashboardApp(source, export_dir=Path.cwd())
    async with app.run_test(size=(160, 50)):
        await filled(app, RunsScreen, "#runs")
        app.open_run(run_id)
        await filled(app, RunScreen, "#agents")
        print("filled", flush=True)


asyncio.run(main(sys.argv[1]))
"""
"""The dashboard, headless: prints ``filled`` once the run screen lists the run's agents."""


@dataclass(frozen=True)
class Case:
    name: str
    argv: tuple[str, ...]
    goal: float | None
    until_line: bool = False
    """Time until the process prints a line (the dashboard), not until it exits."""
    env: tuple[tuple[str, str], ...] = ()
    """Set for this command (``TTY_COMPATIBLE=1``: rich takes stdout for a terminal)."""


def cases(quick: str, baseline: str) -> list[Case]:
    cli = (sys.executable, "-m", "harness.cli")
    out = [
        Case("--version", (*cli, "--version"), 0.3),
        Case("--help", (*cli, "--help"), None),
        Case("runs", (*cli, "runs"), 0.8),
        Case("config show", (*cli, "config", "show"), 0.8),
        Case("doctor (no agents)", (*cli, "doctor"), None),
        Case("trials latest", (*cli, "trials", "latest"), None),
        Case("trials baseline, piped", (*cli, "trials", baseline), None),
        Case("trials baseline, on a terminal", (*cli, "trials", baseline), None,
             env=(("TTY_COMPATIBLE", "1"), ("COLUMNS", "80"))),
    ]
    for label, run, goal in (("quick", quick, 1.5), ("baseline", baseline, 4.0)):
        out += [Case(f"report {label} --format {fmt}", (*cli, "report", run, "--format", fmt),
                     goal) for fmt in ("json", "md", "html")]
    for label, run, goal in (("quick", quick, 1.5), ("baseline", baseline, None)):
        out.append(Case(f"dashboard run screen, {label}",
                        (sys.executable, "-c", DASHBOARD, run), goal, until_line=True))
    return out


def once(argv: Sequence[str], env: dict[str, str], cwd: Path, until_line: bool) -> float:
    """Seconds from starting ``argv`` until it exits (or prints its first line)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if until_line:
        line = proc.stdout.readline() if proc.stdout else ""
        elapsed = time.perf_counter() - start
        _, err = proc.communicate()
        if line.strip() != "filled":
            raise SystemExit(f"{argv[:3]} did not fill the screen:\n{err}")
        return elapsed
    _, err = proc.communicate()
    elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv[2:])} exited {proc.returncode}:\n{err}")
    return elapsed


def make_runs(home: Path, env: dict[str, str]) -> tuple[str, str]:
    """The quick and baseline runs in ``home`` (made unless it holds both already)."""
    cli = (sys.executable, "-m", "harness.cli")

    def stored() -> dict[str, str]:
        out = subprocess.run([*cli, "runs", "--format", "json"], env=env, cwd=home,
                             capture_output=True, text=True, check=True).stdout
        return {r["suite"]: r["id"] for r in reversed(json.loads(out))}  # the newest wins

    runs = stored()
    if "quick" not in runs or "baseline" not in runs:
        agents = home / "bench-agents.toml"  # outside the home's own settings: doctor sees none
        agents.write_text(AGENT, encoding="utf-8")
        started = time.perf_counter()
        for suite, who in (("baseline", ()), ("quick", ("--agent", "example"))):
            made = subprocess.run(
                [*cli, "--config", str(agents), "run", "--suite", suite, *who, "--seed", SEED,
                 "--reference", "oracle", "--reference", "random"],
                env=env, cwd=home, capture_output=True, text=True,
            )
            if made.returncode:
                raise SystemExit(f"the {suite} run failed:\n{made.stderr}")
        print(f"made a baseline and a quick run in {time.perf_counter() - started:.0f} s")
        runs = stored()
    return runs["quick"], runs["baseline"]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per command (min taken)")
    ap.add_argument("--home", type=Path, default=None,
                    help="data directory to use (and keep); default: a temporary one")
    ap.add_argument("--only", default="", help="time only the commands whose name has this")
    ap.add_argument("--against", type=Path, default=None, metavar="DIR",
                    help="also time the source tree in DIR (e.g. `git archive REV | tar -x -C "
                    "DIR`), in turn with this one, and print both")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mindledger-latency-") as tmp:
        home = (args.home or Path(tmp) / "home").resolve()
        home.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")
                and not k.startswith("MINDLEDGER_")}
        base |= {"MINDLEDGER_HOME": str(home), "PYTHONPYCACHEPREFIX": str(Path(tmp) / "pyc")}
        trees = {"now": {**base, "PYTHONPATH": str(ROOT)}}
        if args.against:
            trees["then"] = {**base, "PYTHONPATH": str(args.against.resolve())}
        quick, baseline = make_runs(home, trees["now"])
        load = os.getloadavg()
        print(f"quick run {quick}, baseline run {baseline}; load average {load[0]:.2f} "
              f"{load[1]:.2f} {load[2]:.2f}; min of {args.repeat} after a warm-up"
              + (f"; then: {args.against}" if args.against else ""))
        pass_argv = (sys.executable, "-c", "pass")
        rows: list[tuple[Case, dict[str, float]]] = []
        floor = float("inf")
        for case in cases(quick, baseline):
            if args.only not in case.name:
                continue
            once(pass_argv, base, home, False)
            best = {}
            envs = {tree: {**env, **dict(case.env)} for tree, env in trees.items()}
            for tree, env in envs.items():
                once(case.argv, env, home, case.until_line)
                best[tree] = float("inf")
            for _ in range(args.repeat):  # in turn with `python -c pass`, under the same load
                floor = min(floor, once(pass_argv, base, home, False))
                for tree, env in envs.items():
                    best[tree] = min(best[tree], once(case.argv, env, home, case.until_line))
            rows.append((case, best))
        then = "then s  then÷now" if args.against else ""
        print(f"{'command':<34} {'min s':>6} {'÷ pass':>7} {'goal s':>7}  met?  {then}")
        print(f"{'python -c pass':<34} {floor:6.3f} {1:7.1f}")
        for case, best in rows:
            goal = "—" if case.goal is None else f"{case.goal:.1f}"
            met = "" if case.goal is None else ("yes" if best["now"] <= case.goal else "NO")
            old = (f"{best['then']:6.3f} {best['then'] / best['now']:9.1f}"
                   if "then" in best else "")
            print(f"{case.name:<34} {best['now']:6.3f} {best['now'] / floor:7.1f} {goal:>7}  "
                  f"{met:<4}  {old}")
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")

if __name__ == "__main__":
    main()
