"""``mindledger serve`` and ``mindledger serve token`` through real subprocesses."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from harness.daemon import agent_for_token, hash_token
from ledger.db import open_engine


def env_for(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    return env


def mindledger(*args: str) -> list[str]:
    return [sys.executable, "-m", "harness.cli.main", *args]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_token_prints_a_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    r = subprocess.run(
        mindledger("serve", "token", "piper"),
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    assert token.startswith("mlt_") and "not shown again" in r.stderr
    engine = open_engine(f"sqlite:///{tmp_path / 'home' / 'mindledger.db'}")
    assert agent_for_token(engine, token) == "piper"
    assert agent_for_token(engine, token + "x") is None
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT token_hash FROM api_tokens").scalar_one()
    assert stored == hash_token(token) != token
    engine.dispose()
    bad = subprocess.run(
        mindledger("serve", "token", "no spaces"),
        cwd=tmp_path,
        env=env_for(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "agent" in bad.stderr


def test_serve_answers_health_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        mindledger("serve", "--port", str(port)),
        cwd=tmp_path,
        env=env_for(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert health == {"status": "ok", "scheduler": "running"}
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    # a clean shutdown, then the CLI's exit code for Ctrl-C
    assert proc.returncode == 130, err
    assert "Application shutdown complete" in err and "Traceback" not in err
