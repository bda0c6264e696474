"""The embedded model, for real: SmolLM2-135M served by llama.cpp (xllamacpp) on 127.0.0.1,
and `mindledger quickstart` end to end against it.

Skipped only where the model is not installed and CI is unset; `.ci/run` installs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harness.model.local_model import model_status, running_local_model

pytestmark = pytest.mark.model

if not model_status()[0]:
    if os.environ.get("CI"):
        raise RuntimeError("the embedded model must be installed under CI: " + model_status()[1])
    pytest.skip("embedded model not installed", allow_module_level=True)


def test_servers_answer_over_http_and_stop() -> None:
    with running_local_model(servers=2, threads=1) as pool:
        assert len(set(pool.base_urls)) == 2
        for url in pool.base_urls:
            assert httpx.get(url.removesuffix("/v1") + "/health", timeout=30).status_code == 200
        r = httpx.post(
            pool.base_urls[-1] + "/chat/completions",
            json={
                "messages": [{"role": "user", "content": "Is the sky blue? Reply yes or no."}],
                "max_tokens": 16,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "a", "schema": {
                        "type": "object",
                        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                        "required": ["answer"]}},
                },
            },
            timeout=120,
        )
        assert r.status_code == 200
        content = r.json()["choices"][0]["message"]["content"]
        assert '"answer"' in content  # constrained decoding honoured
        procs = [s.process for s in pool.servers]
    assert all(p.poll() is not None for p in procs)  # every one stopped on exit


def test_quickstart_end_to_end(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "quickstart", "--seed", "12"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    for agent in ("local ", "local-control", "ref:oracle", "ref:depth-capped:2", "ref:not-reality"):
        assert agent in out
    # every agent got every item, and the model's answers were real trials (not API errors)
    from ledger.db import open_engine
    from ledger.store import Store

    store = Store(open_engine(f"sqlite:///{tmp_path / 'home' / 'mindledger.db'}"))
    run = store.list_runs()[0]
    counts = store.trial_counts(run.id)
    n_items = len(store.run_items(run.id))
    assert counts["local"]["ok"] == counts["local-control"]["ok"] == n_items
    assert run.status == "complete"
    assert any(p.suffix == ".html" for p in (tmp_path / "home" / "reports").iterdir())
    # it ends with lines worded from this run's own profile (tests/harness/
    # test_quickstart_explain.py checks the wording on constructed profiles)
    from harness.cli.quickstart_cmd import explain_run
    from reports import build_profile

    profile = build_profile(store, run.id)
    doc = profile.to_json()
    assert out.rstrip().endswith("\n".join(explain_run(profile)))
    local = doc["agents"]["local"]
    assert ("marked INVALID" in out) == (local["valid"] is False)
    assert "mindledger dashboard" in out and "Connecting a real agent" in out
    # stderr is not a terminal here: progress came as plain lines, the last saying it is done
    lines = [line for line in r.stderr.splitlines() if line.startswith("progress ")]
    assert len(lines) >= 3, r.stderr[-3000:]
    assert lines[-1].startswith(f"progress {8 * n_items}/{8 * n_items} trials (100%)")
    assert "done after" in lines[-1]
