"""`mindledger run` stopped by SIGTERM (``kill``, ``systemctl stop``, a CI job's timeout) or SIGHUP
(its SSH session closed) cleans up as Ctrl-C does: the run keeps its trials and is marked
interrupted, the command says how to resume it, the agent's programs are stopped, and it exits
128 + the signal (143, 129). A real process, a real command
agent that hangs; each moment is observed (the agent's first program has started), never
guessed with a delay."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import alive

HANG = """
import os, sys, time
with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\\n")
sys.stdin.read()
time.sleep(1000)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    return env



def _wait(what: str, ready: object, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(ready) and ready():
            return
        time.sleep(0.02)
    raise AssertionError(f"never saw {what}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stopping_signal_keeps_the_run_resumable_and_stops_the_agent(
    tmp_path: Path, sig: signal.Signals
) -> None:
    agent, pids = tmp_path / "hang.py", tmp_path / "pids"
    agent.write_text(HANG)
    (tmp_path / "mindledger.toml").write_text(
        "[agents.hang]\nadapter = \"command\"\n"
        f"command = {json.dumps([sys.executable, str(agent), str(pids)])}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--suite", "quick", "--agent", "hang",
         "--no-control", "--progress", "lines"],
        cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        _wait("the agent's first program", lambda: pids.exists() and pids.read_text().strip())
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert err.rstrip().endswith(f"Stopped by {sig.name}.") and "Traceback" not in err, err
    run_id = err.split("run ", 1)[1].split(":", 1)[0]
    assert f"continue with `mindledger run --resume {run_id}`" in err
    started = [int(p) for p in pids.read_text().split()]
    _wait("every program of the agent stopped", lambda: not any(alive(p) for p in started), 30)
    listed = subprocess.run(
        [sys.executable, "-m", "harness.cli", "runs", "--format", "json"],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, check=True,
    )  # fmt: skip
    (run,) = json.loads(listed.stdout)
    assert (run["id"], run["status"]) == (run_id, "interrupted")
    assert run["trials"] == 0  # the programs it stopped are not stored as the agent's failures
