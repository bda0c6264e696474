"""``mindledger runs`` prints the same bytes whether ledger.catalog reads the list (a database at
the current schema) or the store does (any other), as a table and as JSON, on SQLite and real
PostgreSQL; a missing database is created and listed empty, as before."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import harness.cli.runs_cmd as runs_cmd
from harness.run.progress import duration
from ledger.catalog import ListedRun
from tests.cli import run_main
from tests.ledger.test_catalog import store_sample_runs

VARIANTS = [
    ("runs",),
    ("runs", "--reveal-held-out"),
    ("runs", "--limit", "2"),
    ("runs", "--format", "json"),
    ("runs", "--format", "json", "--reveal-held-out"),
]


def test_both_readers_print_the_same_bytes(
    db_url: str,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store_sample_runs(db_url)
    # how long ago a running run's last trial was is counted from a fixed time: the two
    # readers print the same bytes whatever the clock does between them
    monkeypatch.setattr(runs_cmd, "_now", lambda: dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC))
    answered: list[bool] = []
    real = runs_cmd.read_run_listing

    def spy(url: str, limit: int) -> list[ListedRun] | None:
        listing = real(url, limit)
        answered.append(listing is not None)
        return listing

    printed: dict[str, dict[tuple[str, ...], str]] = {}
    for reader in ("catalog", "store"):
        monkeypatch.setattr(
            runs_cmd, "read_run_listing", spy if reader == "catalog" else lambda url, limit: None
        )
        printed[reader] = {}
        for columns in ("80", "200"):
            monkeypatch.setenv("COLUMNS", columns)
            for args in VARIANTS:
                code, out, err = run_main(capsys, "--db", db_url, *args)
                assert code == 0, err
                printed[reader][(columns, *args)] = out
    assert answered == [True] * 2 * len(VARIANTS)  # the catalog did read, every time
    assert printed["catalog"] == printed["store"]

    wide = printed["catalog"][("200", "runs")]
    assert "2/3 zeta +1" in wide or "2/3 zeta-control +1" in wide  # the two that tie
    assert "withheld" in wide and "9000000123" not in wide and "1/1 zeta" in wide
    assert "9000000123" in printed["catalog"][("200", "runs", "--reveal-held-out")]
    listed = json.loads(printed["catalog"][("80", "runs", "--format", "json")])
    assert [r["id"] for r in listed] == ["fresh", "sealed", "mixed"]
    agents = {a["name"]: a for a in listed[2]["agents"]}
    assert agents["alpha"]["trials"] == 0 and agents["alpha"]["failure_share"] is None
    assert (agents["zeta"]["errors"], agents["zeta"]["unparsed"]) == (1, 1)
    assert agents["ref:oracle"]["failure_share"] == 0.0 and listed[2]["scored"] == 5
    # a run marked running that has stored no trial for a while says so, and a line under the
    # table what that may mean: one whose process was killed stays marked running
    assert [r["status"] for r in listed] == ["running", "running", "complete"]
    assert listed[0]["last_trial_at"] is None
    last = listed[1]["last_trial_at"]
    assert last is not None and last.startswith("2026-12-03T10:")
    noon = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)
    idle = duration((noon - dt.datetime.fromisoformat(last)).total_seconds())
    fresh_idle = duration((noon - dt.datetime.fromisoformat(listed[0]["created_at"])).total_seconds())
    table = " ".join(wide.split())
    assert f"running · idle {idle}" in table and f"running · idle {fresh_idle}" in table
    assert (f"sealed is marked running but has stored no trial for {idle}: if its process "
            "stopped (killed, the machine restarted), `mindledger run --resume sealed` "
            "finishes it.") in table
    assert table.count("is marked running but") == 2  # fresh and sealed, not the complete one


def test_a_missing_database_is_listed_empty_and_not_created(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(capsys, "runs", "--format", "json")
    assert (code, out, err) == (0, "[]\n", "")
    assert list(isolated_home.iterdir()) == []  # `runs` only reads: it creates no database
    code, out, _ = run_main(capsys, "runs")
    assert code == 0 and out.startswith("No runs stored yet.") and "mindledger quickstart" in out
