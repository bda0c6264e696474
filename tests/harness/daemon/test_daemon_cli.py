"""``mindledger serve`` and ``mindledger serve token`` through real subprocesses."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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


def serve(tmp_path: Path, port: int, *args: str) -> subprocess.Popen[str]:
    """``mindledger serve --port PORT ARGS…`` in ``tmp_path`` (its data directory under it),
    its stdout and stderr piped as text."""
    return subprocess.Popen(
        mindledger("serve", "--port", str(port), *args),
        cwd=tmp_path,
        env=env_for(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_on_a_port_in_use_says_so_and_starts_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = serve(tmp_path, port)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert f"error: cannot listen on 127.0.0.1:{port}: the address is already in use" in err
    assert "--port" in err and "Traceback" not in err
    # it did not say it was listening, nor start the scheduler
    assert "daemon on" not in err and "Scheduler started" not in err


def test_serve_token_prints_a_token_once_and_stores_its_hash(tmp_path: Path) -> None:
    r = subprocess.run(
        mindledger("serve", "token", "piper", "--new"),
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


@pytest.mark.parametrize(
    ("sig", "code", "busy"),
    [
        (signal.SIGINT, 130, False),
        (signal.SIGINT, 130, True),
        (signal.SIGTERM, 143, False),
        (signal.SIGHUP, 129, True),  # its SSH session closed
    ],
    ids=["ctrl-c", "ctrl-c-mid-requests", "sigterm", "sighup-mid-requests"],
)
def test_serve_answers_health_and_stops_on_a_signal(
    tmp_path: Path, sig: signal.Signals, code: int, busy: bool
) -> None:
    """A clean shutdown, then the exit code of the signal (130 for Ctrl-C, 143 for SIGTERM, 129
    for SIGHUP), wherever in the server's loop the signal lands: also while requests are in
    flight."""
    port = free_port()
    proc = serve(tmp_path, port)
    stop = threading.Event()

    def hammer() -> None:
        with httpx.Client(timeout=2) as c:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    c.get(f"http://127.0.0.1:{port}/health")

    threads = [threading.Thread(target=hammer) for _ in range(4 if busy else 0)]
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts slowly
        health = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        assert health == {"status": "ok", "scheduler": "running"}
        # a token sent where it does not belong (a query string) is refused and never logged
        leaked = "mlt_" + "s3cr3tt0ken" * 3
        r = httpx.get(f"http://127.0.0.1:{port}/runs?token={leaked}", timeout=5)
        assert r.status_code in (400, 401)  # an unknown query parameter, or no token
        for t in threads:
            t.start()
        time.sleep(0.3 if busy else 0)
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        stop.set()
        for t in threads:
            t.join()
    assert proc.returncode == code, err
    assert "Application shutdown complete" in err and "Traceback" not in err
    assert "GET /runs?token=*** HTTP/1.1" in out  # uvicorn's access log is on stdout
    assert leaked not in out + err


def test_mindledger_serve_lets_no_call_dodge_its_prediction(tmp_path: Path) -> None:
    """Against the real `mindledger serve` process and its own randomness: once a call is
    sampled, no change of the call, its headers or its connection gets through without a
    prediction; a prediction unlocks only its own call, once; a caller that never predicts is
    stopped for good after its first refusal."""
    from harness.daemon.client import DaemonClient
    from harness.testing import FakeOpenAI

    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    with FakeOpenAI() as fake:
        (tmp_path / "mindledger.toml").write_text(
            f'[agents.dusk]\nadapter = "openai"\nendpoint = "{fake.base_url}"\nmodel = "m"\n',
            encoding="utf-8",
        )

        def token(*args: str) -> str:
            r = subprocess.run(
                mindledger("serve", "token", *args), cwd=tmp_path, env=env_for(tmp_path),
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
            return r.stdout.strip()

        piper, mallory = token("piper", "--new"), token("mallory", "--new")
        proc = subprocess.Popen(
            mindledger("serve", "--port", str(port), "--no-scheduler"),
            cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 120  # a loaded machine starts slowly
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    httpx.get(url + "/health", timeout=10)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)

            def call(client: httpx.Client, n: object, **kw: object) -> httpx.Response:
                body = {"messages": [{"role": "user", "content": f"q{n} [[answer: 7]]"}], **kw}
                return client.post("/proxy/dusk/v1/chat/completions", json=body)

            auth = {"Authorization": f"Bearer {piper}"}
            with httpx.Client(base_url=url, headers=auth, timeout=30) as c:
                codes = [call(c, n).status_code for n in range(200)]
                first = codes.index(428)  # 20% sampled: the chance of no refusal is 1e-19
                # (the very first call is sampled one time in five: nothing before it then)
                assert set(codes[:first]) <= {200} and set(codes[first:]) == {428}
                # the dodges: an ignored field, whitespace, the same call again
                for dodge in ({"user": "n1"}, {"temperature": 0}, {}):
                    assert call(c, first, **dodge).status_code == 428
                r = c.post(
                    "/proxy/dusk/v1/chat/completions",
                    content=f'{{"messages": [{{"role": "user", "content": "q{first} '
                    '[[answer: 7]]"}]}   ',
                    headers={"Content-Type": "application/json"},
                )
                assert r.status_code == 428
            with httpx.Client(base_url=url, headers=auth, timeout=30) as fresh:
                assert call(fresh, first).status_code == 428  # a new connection
            served = fake.stats()["ok"]
            with DaemonClient(url, piper) as ml:
                other = ml.predict("dusk", f"q{first + 1} [[answer: 7]]", {"7": 1.0}).commit()
                with httpx.Client(base_url=url, headers=auth, timeout=30) as c:
                    r = c.post(
                        "/proxy/dusk/v1/chat/completions",
                        json={"messages": [{"role": "user", "content": f"q{first} [[answer: 7]]"}]},
                        headers={"X-Mindledger-Prediction": other["id"]},
                    )
                    assert (r.status_code, r.json()["error"]["code"]) == (409, "query_mismatch")
                with ml.predict("dusk", f"q{first} [[answer: 7]]", {"7": 0.9, "3": 0.1}) as p:
                    p.ask()
                    with httpx.Client(base_url=url, headers=auth, timeout=30) as c:
                        r = c.post(
                            "/proxy/dusk/v1/chat/completions",
                            json={"messages": p.messages},
                            headers={"X-Mindledger-Prediction": p.id},
                        )
                        assert (r.status_code, r.json()["error"]["code"]) == (
                            409, "prediction_used"
                        )
                assert p.scores is not None and p.scores["top1_match"] == 1.0
            assert fake.stats()["ok"] == served + 1
            # a caller that never predicts: nothing after its first refusal
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {mallory}"}, timeout=30
            ) as m:
                codes = [call(m, f"m{n}").status_code for n in range(100)]
            first_m = codes.index(428)
            assert set(codes[first_m:]) == {428}
            assert fake.stats()["ok"] == served + 1 + first_m
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=30)
    assert proc.returncode == 130


def _rss_peak_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_a_300_mb_body_gets_413_without_the_daemon_holding_it(tmp_path: Path) -> None:
    """Declared or not (chunked), a body past the limit is refused as it streams in: the
    daemon's peak resident memory grows by far less than 100 MB."""
    token = subprocess.run(
        mindledger("serve", "token", "piper", "--new"), cwd=tmp_path, env=env_for(tmp_path),
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    auth = {"Authorization": f"Bearer {token}"}
    port = free_port()
    proc = subprocess.Popen(
        mindledger("serve", "--port", str(port), "--no-scheduler"),
        cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/predictions"
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts slowly
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=10)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        idle = _rss_peak_kb(proc.pid)
        size = 300 * 1024 * 1024
        chunk = b"x" * (1024 * 1024)

        def body() -> Iterator[bytes]:
            for _ in range(size // len(chunk)):
                yield chunk

        # declared: refused on the header, before a byte of the body is read
        with httpx.Client(timeout=60) as c:
            r = c.post(url, content=body(), headers={**auth, "Content-Length": str(size)})
            assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"
        # chunked: refused once 4 MiB have streamed in (the client may see the connection
        # close while it is still sending; then the server's answer is read from a new one)
        with httpx.Client(timeout=60) as c:
            try:
                r = c.post(url, content=body(), headers=auth)
                assert r.status_code == 413
            except httpx.HTTPError:
                pass
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200
        grown_mb = (_rss_peak_kb(proc.pid) - idle) / 1024
        assert grown_mb < 100, grown_mb
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def _wait_for_library(pid: int, name: str, seconds: float = 60) -> None:
    """Wait until process ``pid`` has mapped a shared library whose path contains ``name``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if name in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            pass
        time.sleep(0.005)
    raise AssertionError(f"{name} was never loaded")


@pytest.mark.parametrize("stage", ["imports", "database", "uvicorn"])
def test_ctrl_c_anywhere_in_start_up_exits_130(tmp_path: Path, stage: str) -> None:
    """Ctrl-C while the daemon's modules are imported (cryptography's library just mapped),
    while the database is opened (SQLite's library just mapped), or while uvicorn starts (the
    daemon's first line printed): always 130 and never a traceback. Each moment is observed,
    not guessed with a delay, so a loaded machine cannot move it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--port", str(free_port())],
        cwd=tmp_path, env=env_for(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    if stage == "imports":
        _wait_for_library(proc.pid, "_rust.abi3.so")
    elif stage == "database":
        _wait_for_library(proc.pid, "_sqlite3")
    else:
        assert proc.stderr is not None
        assert proc.stderr.readline().startswith("mindledger daemon on")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
