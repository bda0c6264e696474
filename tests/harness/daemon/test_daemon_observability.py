"""Issue 27 item 3, the daemon observable like a service, through real sockets on 127.0.0.1:
``/metrics`` in the Prometheus text format after a run and some proxy calls, ``/health``
with a stopped scheduler and a locked database, and JSON log lines naming their run."""

from __future__ import annotations

import io
import json
import logging
import re
import signal
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness.config.settings import AgentConfig, load_settings
from harness.daemon import PREDICTION_HEADER, BackgroundServer, Daemon, build_daemon, create_token
from harness.daemon.logs import JsonFormatter, RunIdFilter, log_config
from harness.testing import FakeOpenAI
from ledger import commitment, new_salt, prediction_body
from mindledger.errors import ConfigError
from tests.harness.daemon.test_daemon_cli import free_port, serve

SAMPLED, PASSED = 0.0, 0.99
"""Dice values that sample an unpredicted call and that let it pass."""


@dataclass
class Live:
    daemon: Daemon
    url: str
    agent: str
    operator: str
    dice: list[float]
    db: Path

    def get(self, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        return httpx.get(self.url + path, headers=headers, timeout=30, **kw)

    def post(self, path: str, token: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}", **kw.pop("headers", {})}
        return httpx.post(self.url + path, headers=headers, timeout=30, **kw)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    db = tmp_path / "o.db"
    with FakeOpenAI() as fake:
        settings = load_settings(
            None, env={}, flags={"db_url": f"sqlite:///{db}", "home": str(tmp_path)}
        )
        settings = replace(
            settings,
            agents={
                "dusk": AgentConfig("dusk", adapter="openai", endpoint=fake.base_url, model="m")
            },
            head_interval=0,
            api_rate_limit=100_000.0,
            prediction_share=0.5,
            schedule="0 0 1 1 *",  # no nightly job fires while the test runs
        )
        dice: list[float] = []
        daemon = build_daemon(
            settings,
            draw=lambda: dice.pop(0) if dice else PASSED,
            scheduler_options={"expire_every": None},
        )
        assert daemon.scheduler is not None
        daemon.scheduler.start()
        agent = create_token(daemon.engine, "piper")
        operator = create_token(daemon.engine, None, scope="operator")
        try:
            with BackgroundServer(daemon.app) as server:
                yield Live(daemon, server.url, agent, operator, dice, db)
        finally:
            daemon.close()


def scrape(live: Live) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """``/metrics`` as the Prometheus parser reads it: family → (sample name, labels, value)."""
    r = live.get("/metrics", live.operator)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        family.name: [(s.name, dict(s.labels), s.value) for s in family.samples]
        for family in text_string_to_metric_families(r.text)
    }


def value(families: dict[str, Any], name: str, sample: str | None = None, **labels: str) -> float:
    """The one sample of ``name`` (``sample``: e.g. its ``_count``) whose labels include
    ``labels``."""
    found = [
        v
        for n, ls, v in families[name]
        if n == (sample or name) and all(ls.get(k) == x for k, x in labels.items())
    ]
    assert len(found) == 1, (name, labels, families[name])
    return found[0]


def wait_for(check: Any, what: str, seconds: float = 60) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out = check()
        if out:
            return out
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s: {what}")


def ask(n: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"n {n} [[answer: 7]]"}]}


def test_metrics_parse_and_count_a_run_and_proxy_calls(live: Live) -> None:
    r = live.post("/runs", live.agent, json={"suite": "quick", "references": ["oracle"]})
    assert r.status_code == 202, r.text
    run_id = r.json()["run"]["id"]
    run = wait_for(
        lambda: (x := live.get(f"/runs/{run_id}", live.agent).json())["status"] == "complete" and x,
        "the run completes",
    )
    proxy = "/proxy/dusk/v1/chat/completions"
    live.dice.extend([PASSED, SAMPLED])
    assert live.post(proxy, live.agent, json=ask(1)).status_code == 200
    assert live.post(proxy, live.agent, json=ask(2)).status_code == 428  # an obligation opens
    families = scrape(live)
    assert value(families, "mindledger_proxy_obligations", caller="piper", state="opened") == 1
    assert value(families, "mindledger_proxy_obligations", caller="piper", state="pending") == 1
    # the prediction of the sampled query meets it (the next scrape folds only the new entries)
    body = prediction_body(
        predictor="piper",
        target="dusk",
        query=ask(2)["messages"][0]["content"],
        distribution={"7": 1.0},
    )
    salt = new_salt()
    committed = live.post(
        "/predictions",
        live.agent,
        json={"target": "dusk", "request": ask(2), "commitment": commitment(body, salt)},
    )
    assert committed.status_code == 201, committed.text
    answered = live.post(
        proxy, live.agent, json=ask(2), headers={PREDICTION_HEADER: committed.json()["id"]}
    )
    assert answered.status_code == 200, answered.text
    families = wait_for(
        lambda: (f := scrape(live))["mindledger_queue_depth"][0][2] == 0 and f,
        "the run-now job is off the scheduler's queue",
    )

    assert value(families, "mindledger_runs", status="complete") == 1
    trials = sum(v for _, ls, v in families["mindledger_trials"] if ls["agent"] == "ref:oracle")
    counts = run["trial_counts"]["ref:oracle"]
    assert trials == sum(counts[k] for k in ("ok", "not_applicable", "error") if k in counts) > 0
    obligations = {ls["state"]: v for _, ls, v in families["mindledger_proxy_obligations"]}
    assert obligations == {"opened": 1, "met": 1, "pending": 0, "abandoned": 0}
    assert value(families, "mindledger_proxy_calls", caller="piper", target="dusk") == 2
    assert value(families, "mindledger_proxy_refusals", reason="sampled") == 1
    latency = "mindledger_http_request_duration_seconds"
    route = {"route": "/proxy/{target}/v1/chat/completions", "agent": "piper"}
    assert value(families, latency, latency + "_count", code="200", **route) == 2
    assert value(families, latency, latency + "_count", code="428", **route) == 1
    assert (
        value(
            families,
            latency,
            latency + "_count",
            route="/runs",
            method="POST",
            agent="piper",
            code="202",
        )
        == 1
    )
    upstream = "mindledger_proxy_upstream_duration_seconds"
    assert value(families, upstream, upstream + "_count", target="dusk", code="200") == 2
    head = live.daemon.ledger.head()
    assert head is not None
    assert value(families, "mindledger_ledger_entries") == head.seq
    assert value(families, "mindledger_ledger_entries_by_kind", kind="commit") == 1
    assert value(families, "mindledger_scheduler_running") == 1
    assert value(families, "mindledger_scheduler_last_fire_timestamp_seconds", job="run-now") > 0
    nightly = live.daemon.scheduler.scheduler.get_job("nightly:dusk")  # type: ignore[union-attr]
    assert (
        value(families, "mindledger_scheduler_next_fire_timestamp_seconds", job="nightly:dusk")
        == nightly.next_run_time.timestamp()
    )
    # the daemon verified the ledger when it started
    assert value(families, "mindledger_ledger_last_verify_ok") == 1
    # where its memory is: the process's resident set, SQLite's, the C heap's, Python's
    rss = value(families, "process_resident_memory_bytes")
    sqlite = value(families, "mindledger_sqlite_memory_bytes")
    in_use = value(families, "mindledger_c_heap_bytes", state="in_use")
    assert 0 < sqlite < rss and 0 < in_use < rss, (sqlite, in_use, rss)
    assert value(families, "mindledger_c_heap_bytes", state="free") >= 0
    assert value(families, "mindledger_python_allocated_blocks") > 10_000
    # the earlier JSON is still there
    old = live.get("/metrics?format=json", live.operator).json()
    assert (old["runs"], old["predictions"], old["ledger"]["entries"]) == (1, 1, head.seq)
    assert live.get("/metrics?format=xml", live.operator).status_code == 400


def test_health_reports_a_stopped_scheduler(live: Live) -> None:
    r = live.get("/health")
    assert (r.status_code, r.json()) == (200, {"status": "ok", "scheduler": "running"})
    detail = live.get("/health", live.operator).json()
    assert {k: c["ok"] for k, c in detail["checks"].items()} == {
        "scheduler": True,
        "database": True,
        "ledger": True,
    }
    assert detail["checks"]["scheduler"]["next_fire"] is not None
    assert detail["last_nightly"] is None  # none since the daemon started
    assert "checks" not in live.get("/health", live.agent).json()  # an operator's to read
    live.daemon.scheduler.shutdown()  # type: ignore[union-attr]
    r = live.get("/health")
    assert (r.status_code, r.json()) == (503, {"status": "unavailable", "scheduler": "stopped"})
    detail = live.get("/health", live.operator).json()
    assert detail["checks"]["scheduler"] == {"ok": False, "state": "stopped", "next_fire": None}
    assert detail["checks"]["database"]["ok"] and detail["checks"]["ledger"]["ok"]
    families = scrape(live)
    assert value(families, "mindledger_scheduler_running") == 0


def test_health_reports_a_locked_database_and_does_not_hang(live: Live) -> None:
    assert live.get("/health").status_code == 200
    other = sqlite3.connect(live.db, isolation_level=None)
    try:
        other.execute("BEGIN EXCLUSIVE")  # another connection holds the write lock
        r = live.get("/health")
        assert (r.status_code, r.json()["status"]) == (503, "unavailable")
        database = live.get("/health", live.operator).json()["checks"]["database"]
        assert database["ok"] is False and "locked" in database["error"], database
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert live.get("/health").status_code == 200


def test_a_nightly_job_that_failed_shows_in_health(live: Live) -> None:
    """How the last nightly job ended, from the scheduler's events (a failed one here: the
    nightly suite's agent is no longer declared)."""
    sched = live.daemon.scheduler
    assert sched is not None
    sched.scheduler.add_job(
        "harness.daemon.scheduler:nightly_suite", args=("gone", "quick"), id="nightly:gone"
    )
    last = wait_for(
        lambda: live.get("/health", live.operator).json()["last_nightly"], "the nightly job ends"
    )
    assert (last["job"], last["outcome"], last["run"]) == ("nightly:gone", "failed", None)
    assert "gone" in last["error"]
    families = scrape(live)
    assert value(families, "mindledger_nightly_last_ok", job="nightly:gone") == 0
    assert (
        value(families, "mindledger_scheduler_last_fire_timestamp_seconds", job="nightly:gone") > 0
    )


def test_json_log_lines_carry_the_run_id_of_a_run(live: Live) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    handler.addFilter(RunIdFilter())
    logger = logging.getLogger("mindledger")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logging.getLogger("mindledger.daemon").info("before the run")
        r = live.post("/runs", live.agent, json={"suite": "quick", "references": ["oracle"]})
        assert r.status_code == 202, r.text
        run_id = r.json()["run"]["id"]
        wait_for(lambda: f"run {run_id}: complete" in stream.getvalue(), "the run's last line")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    before = [x for x in lines if x["message"] == "before the run"]
    assert len(before) == 1 and "run_id" not in before[0]
    ours = [x for x in lines if run_id in x["message"]]
    # its last line says how it ended: its trials, and that none failed (oracle's 26)
    assert [x["message"] for x in ours] == [
        f"run {run_id}: executing", f"run {run_id}: complete: 26 trials, none failed"]
    assert all(x.get("run_id") == run_id for x in ours)  # logged in the scheduler's thread


def test_log_config_refuses_an_unknown_format() -> None:
    assert "mindledger" in log_config("text")["loggers"]
    with pytest.raises(ValueError, match="json"):
        log_config("yaml")
    with pytest.raises(ConfigError, match="log_format"):
        load_settings(None, env={"MINDLEDGER_LOG_FORMAT": "yaml"}, flags={})


def test_serve_log_format_json_writes_json_lines(tmp_path: Path) -> None:
    port = free_port()
    err = _serve_until_it_answers(tmp_path, port, "--no-scheduler", "--log-format", "json")
    said = [line for line in err.splitlines() if line.strip()]
    assert said[-1] == "Interrupted."  # the command's own word on Ctrl-C, not a log line
    lines = [json.loads(line) for line in said[:-1]]
    assert lines and all({"time", "level", "logger", "message"} <= set(x) for x in lines)
    messages = [x["message"] for x in lines]
    assert f"mindledger daemon on http://127.0.0.1:{port}" in messages
    assert any("GET /health" in m for m in messages), messages  # uvicorn's access log too


def _serve_until_it_answers(tmp_path: Path, port: int, *args: str) -> str:
    """Start ``mindledger serve``, wait until it answers /health, stop it with Ctrl-C (it
    exits 130) and return what it wrote on stderr."""
    proc = serve(tmp_path, port, *args)
    try:
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/health"), "the daemon answers")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    return err


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize("declared", [True, False])
def test_a_text_daemon_says_what_its_nights_will_run(tmp_path: Path, declared: bool) -> None:
    """The default (text) logs: mindledger's lines appear beside uvicorn's, with their time in
    UTC (without a handler for them, Python dropped every INFO line: a text daemon said nothing
    of its runs), and the first says what the nights will run and when, or warns that nothing
    will: no agent is declared."""
    if declared:
        (tmp_path / "mindledger.toml").write_text(
            '[agents.mybot]\nadapter = "command"\ncommand = ["true"]\n\n'
            '[schedule]\ncron = "30 2 * * *"\n',
            encoding="utf-8",
        )
    err = _serve_until_it_answers(tmp_path, free_port())
    nightly = [line for line in err.splitlines() if " nightly: " in line]
    assert len(nightly) == 1, err
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
    if declared:
        assert re.fullmatch(
            rf"INFO:     {stamp} nightly: the quick suite for mybot, on schedule '30 2 \* \* \*' "
            rf"\(UTC\); next at \d{{4}}-\d\d-\d\d 02:30 UTC",
            nightly[0],
        ), nightly[0]
    else:
        assert re.fullmatch(rf"WARNING:  {stamp} nightly: nothing to run: no agent is declared .*",
                            nightly[0]), nightly[0]
    assert "INFO:     Uvicorn running on" in err  # uvicorn's own lines as they were
