"""SIGKILL the runner mid-run, resume, and find exactly one trial per (agent, item)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ledger.db import open_engine
from ledger.store import Store

SLOW = Path(__file__).parents[1] / "scripts" / "slow_agent.py"


def test_sigkill_then_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "mindledger.toml").write_text(
        f"""
[agents.slow]
adapter = "command"
command = ["{sys.executable}", "{SLOW}"]
concurrency = 2
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(home)
    cmd = [sys.executable, "-m", "harness.cli.main"]
    proc = subprocess.Popen(
        [
            *cmd,
            "run",
            "--suite",
            "quick",
            "--seed",
            "12",
            "--agent",
            "slow",
            "--reference",
            "oracle",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    store = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # wait until some, not all, trials are stored
            time.sleep(0.3)
            if not (home / "mindledger.db").exists():
                continue
            store = store or Store(open_engine(f"sqlite:///{home / 'mindledger.db'}"))
            runs = store.list_runs()
            if runs and len(store.trials(runs[0].id)) >= 6 and proc.poll() is None:
                break
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert store is not None
    run = store.list_runs()[0]
    n_items = len(store.run_items(run.id))
    n_agents = len(store.run_agents(run.id))
    before = len(store.trials(run.id))
    assert 0 < before < n_items * n_agents
    r = subprocess.run(
        [*cmd, "run", "--resume", run.id],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    trials = store.trials(run.id)
    pairs = [(t.agent, t.item_id) for t in trials]
    assert len(pairs) == len(set(pairs)) == n_items * n_agents
    assert store.get_run(run.id).status == "complete"
