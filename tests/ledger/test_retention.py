"""Retention of old trials' transcripts (``mindledger db prune``, :mod:`ledger.retention`):
only transcripts go, each leaving a dated marker; the ledger still verifies and every other
field of a trial stays as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.db import open_engine
from ledger.predictions import open_ledger
from ledger.protocol import provenance
from ledger.retention import cutoff_before, prune_transcripts, pruned_transcript
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.errors import UserError
from mindledger.items import Item
from tests.cli import run_main

OLD = "2026-01-10T12:00:00.000000+00:00"
NEW = "2026-12-01T12:00:00.000000+00:00"
NOW = "2026-12-03T08:00:00.000000+00:00"
AGENTS = [RunAgent("a", "agent", {"adapter": "reference", "policy": "oracle"})]


def _item(n: int) -> Item:
    return Item(
        family="t",
        generator="g",
        version="1",
        seed=n,
        params={},
        prompt=f"q{n}",
        answer={"kind": "yesno"},
        truth={"answer": "yes"},
    )


def _run(url: str, run_id: str, at: str, *, status: str = "complete", n: int = 2) -> list[str]:
    """A run whose trials were stored at ``at``, each with a long transcript."""
    store = Store(open_engine(url), clock=lambda: at)
    items = [_item(sum(map(ord, run_id)) * 10 + i) for i in range(n)]
    store.create_run(
        run_id, suite="s", seed=1, held_out=False, params={}, agents=AGENTS, items=items
    )
    for it in items:
        store.record_trial(
            TrialRecord(
                run_id=run_id,
                agent="a",
                item_id=it.id,
                status="ok",
                answer="yes",
                correct=True,
                raw_text="yes",
                transcript=[
                    {"role": "user", "content": it.prompt + " " + "x" * 400},
                    {"role": "assistant", "content": "yes"},
                ],
            )
        )
    store.set_run_status(run_id, status, finished=status == "complete")
    return [it.id for it in items]


def _fields(store: Store, run_id: str) -> list[tuple[object, ...]]:
    return [
        (
            t.item_id,
            t.status,
            t.answer_json,
            t.raw_text,
            t.correct,
            t.score_json,
            t.score_value,
            t.turns,
            t.created_at,
        )
        for t in store.trials(run_id)
    ]


def test_prune_replaces_only_old_finished_transcripts_with_a_dated_marker(db_url: str) -> None:
    url = db_url  # SQLite, then PostgreSQL (its byte count and prefix match differ in SQL)
    _run(url, "old", OLD)
    _run(url, "busy", OLD, status="running")
    _run(url, "new", NEW)
    store = Store(open_engine(url), clock=lambda: NOW)
    before = {r: _fields(store, r) for r in ("old", "busy", "new")}
    kept = {r: [t.transcript_json for t in store.trials(r)] for r in ("busy", "new")}
    cutoff = cutoff_before(30, NOW)
    assert cutoff == "2026-11-03T08:00:00.000000+00:00"

    dry = prune_transcripts(store.engine, before=cutoff, dry_run=True, clock=store.clock)
    assert (dry.trials, dry.runs, dry.dry_run) == (2, 1, True)
    assert dry.bytes > 2 * 400
    assert all(pruned_transcript(t.transcript_json) is None for t in store.trials("old"))

    done = prune_transcripts(store.engine, before=cutoff, clock=store.clock)
    assert (done.trials, done.runs, done.bytes) == (dry.trials, dry.runs, dry.bytes)
    for t in store.trials("old"):
        assert pruned_transcript(t.transcript_json) == "2026-12-03"
        assert json.loads(t.transcript_json)["bytes"] > 400
    assert {r: _fields(store, r) for r in ("old", "busy", "new")} == before
    assert {r: [t.transcript_json for t in store.trials(r)] for r in ("busy", "new")} == kept

    again = prune_transcripts(store.engine, before=cutoff, clock=store.clock)
    assert (again.trials, again.bytes) == (0, 0)


def test_a_real_transcript_is_never_read_as_a_marker() -> None:
    assert pruned_transcript('[{"role":"user","content":"{\\"bytes\\":1}"}]') is None
    assert pruned_transcript([{"pruned_on": "2026-01-01"}]) is None
    assert pruned_transcript({"bytes": 3, "pruned_on": "2026-01-01"}) == "2026-01-01"
    with pytest.raises(UserError, match="positive"):
        cutoff_before(0, NOW)


def test_db_prune_leaves_the_ledger_verifying_and_reports_say_pruned(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{isolated_home / 'mindledger.db'}"
    ids = _run(url, "r-old", OLD)
    client = open_ledger(isolated_home, url).client("piper")
    with client.predict("dusk", "question", {"yes": 0.7, "no": 0.3}) as p:
        p.record("yes", provenance("operator", "test"))

    code, out, err = run_main(
        capsys, "db", "prune", "--transcripts-older-than", "30", "--dry-run", "--format", "json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert (report["trials"], report["runs"], report["dry_run"]) == (2, 1, True)

    code, out, err = run_main(capsys, "db", "prune")
    assert code != 0 and "--transcripts-older-than" in err  # no period given, none set

    code, out, err = run_main(capsys, "db", "prune", "--transcripts-older-than", "30")
    assert code == 0, err
    assert "pruned the transcripts of 2 trials of 1 run" in out

    code, out, err = run_main(capsys, "ledger", "verify")
    assert code == 0, out + err
    code, out, err = run_main(capsys, "trials", "r-old", "--item", ids[0])
    assert code == 0, err
    assert "transcript pruned on " in out
    code, out, err = run_main(capsys, "trials", "r-old", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    rows = rows if isinstance(rows, list) else rows["trials"]
    assert all(r["transcript_pruned"] and r["transcript"] == [] for r in rows)
    assert all(r["correct"] is True and r["raw_text"] == "yes" for r in rows)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[retention]\ntranscripts_days = 90\n", 90),
        ("", None),
        ("[retention]\ntranscripts_days = 0\n", "at least 1"),
        ('[retention]\ntranscripts_days = "90"\n', "at least 1"),
        ("[retention]\nledger_days = 9\n", "retention.ledger_days: unknown key"),
    ],
)
def test_the_retention_setting(tmp_path: Path, text: str, expected: int | str | None) -> None:
    from harness.config.settings import load_settings
    from mindledger.errors import ConfigError

    path = tmp_path / "mindledger.toml"
    path.write_text(text)
    if isinstance(expected, str):
        with pytest.raises(ConfigError, match=expected):
            load_settings(path, env={})
        return
    assert load_settings(path, env={}).retention_transcripts_days == expected
    env = {"MINDLEDGER_RETENTION_TRANSCRIPTS_DAYS": "7"}
    assert load_settings(path, env=env).retention_transcripts_days == 7
