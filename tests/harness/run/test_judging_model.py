"""The judge stage with the embedded model as the judge: SmolLM2-135M reads the games paper's
worked example. Its reading is not checked (a 135M model is a weak annotator, and its reply is
capped at a few tokens here to keep the test short); what is checked is that its reply, read or
not, is stored as a judgement, counted, and cached."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from harness.config.settings import load_settings
from harness.model.local_model import model_status
from harness.run.judging import judge_stored_run
from ledger.db import open_engine
from ledger.store import Store
from tests.harness.run.test_judging import _figure_5_item, _stored_trial

pytestmark = pytest.mark.model

if not model_status()[0]:
    if os.environ.get("CI"):
        raise RuntimeError("the embedded model must be installed under CI: " + model_status()[1])
    pytest.skip("embedded model not installed", allow_module_level=True)


def test_the_embedded_judge_is_stored_counted_and_cached(tmp_path: Path) -> None:
    config = tmp_path / "mindledger.toml"
    config.write_text('judge_agent = "small"\n[agents.small]\nadapter = "local"\nmax_tokens = 24\n')
    settings = load_settings(config, env={}, flags={
        "db_url": f"sqlite:///{tmp_path / 't.db'}", "home": str(tmp_path), "timeout": "600"})
    store = Store(open_engine(settings.database_url))
    item = _figure_5_item()
    first = _stored_trial(store, "run-1", item)
    counts = asyncio.run(judge_stored_run(store, settings, first))
    assert (counts.judge, counts.judged, counts.calls, counts.api_errors) == ("small", 1, 1, 0)
    (j,) = store.judgements(first)
    assert j.judge == "small" and j.status in ("ok", "parse_error") and j.reply_text
    assert j.tokens_out <= 24
    assert counts.parse_failures == int(j.status == "parse_error")
    if j.status == "ok":
        assert j.score is not None and j.score["details"]["K_B"] == 6
    # the same trial in another run: answered from the cache, no model call
    second = _stored_trial(store, "run-2", item)
    again = asyncio.run(judge_stored_run(store, settings, second))
    assert (again.judged, again.calls, again.cache_hits) == (1, 0, 1)
