"""Upgrades without loss: a database made by each earlier schema version's own code
(``tests/fixtures/schema/``, see its README) migrates to the newest schema with its runs,
trials and ledger entries all there, ``ledger verify`` passing, and a backup taken first."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ledger.backup import MIGRATION_BACKUPS_KEPT, backup_before_migration
from ledger.keys import KEY_FILE
from ledger.migrations import MIGRATIONS
from tests.cli import run_main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "schema"
VERSIONS = sorted(p.name for p in FIXTURES.iterdir() if (p / "manifest.json").is_file())


SAME_COMMIT = {"0004_token_scopes", "0006_notifications"}
"""Migrations added in one commit with the next: no version of mindledger left a database at
them, so there is no fixture of them to make."""


def test_there_is_a_fixture_for_every_earlier_schema_version() -> None:
    expected = [name for name, _ in MIGRATIONS[:-1] if name not in SAME_COMMIT]
    assert expected == VERSIONS, (
        "a migration was added: make the fixture of the schema before it with "
        "tests/fixtures/schema/make_fixture.py (see the README there)"
    )


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("version", VERSIONS)
def test_an_earlier_schema_migrates_to_the_newest_without_loss(
    version: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = FIXTURES / version
    manifest = json.loads((fixture / "manifest.json").read_text())
    db = isolated_home / "mindledger.db"
    with gzip.open(fixture / "mindledger.db.gz") as src, db.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    if (fixture / "ledger-ed25519.pem").exists():
        (isolated_home / KEY_FILE).parent.mkdir(mode=0o700)
        shutil.copyfile(fixture / "ledger-ed25519.pem", isolated_home / KEY_FILE)
        (isolated_home / KEY_FILE).chmod(0o600)
    before = _rows(db, "SELECT name FROM _migrations ORDER BY name")
    assert [r[0] for r in before] == manifest["migrations"]

    code, out, err = run_main(capsys, "db", "migrate")
    assert code == 0, err
    pending = [name for name, _ in MIGRATIONS if name not in manifest["migrations"]]
    assert json.loads(out)["applied"] == pending
    bak = isolated_home / f"mindledger.db.before-{pending[0]}.bak"
    assert err == (
        f"backed up {db} to {bak} ({bak.stat().st_size:,} bytes) before migrating it to "
        f"{pending[0]} (the last {MIGRATION_BACKUPS_KEPT} such copies are kept)\n"
    )
    # the copy is the database as the migration found it
    assert _rows(bak, "SELECT name FROM _migrations ORDER BY name") == before
    assert _rows(bak, "SELECT COUNT(*) FROM trials") == [(manifest["trials"],)]

    # everything that version wrote is there
    assert [r[0] for r in _rows(db, "SELECT id FROM runs ORDER BY id")] == manifest["runs"]
    assert _rows(db, "SELECT COUNT(*) FROM trials") == [(manifest["trials"],)]
    assert _rows(db, "SELECT COUNT(*) FROM items") == [(manifest["items"],)]
    entries = manifest["ledger_entries"]
    assert _rows(db, "SELECT COUNT(*) FROM ledger_entries") == [(entries,)]
    code, out, err = run_main(capsys, "ledger", "verify", "--full")
    assert code == 0, err
    if entries:
        assert out.startswith(f"ok: {entries} entries, head {entries} {manifest['ledger_head']}")
    # today's code reads the old run and its trials
    (run,) = manifest["runs"]
    code, out, err = run_main(capsys, "trials", run, "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)) == manifest["trials"]


def test_an_empty_database_is_not_backed_up_and_old_copies_are_pruned(tmp_path: Path) -> None:
    db = tmp_path / "mindledger.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE _migrations (name TEXT, applied_at TEXT)")
    conn.execute("INSERT INTO _migrations VALUES ('0001_runs_items_trials', 'then')")
    conn.execute("CREATE TABLE runs (id TEXT)")
    conn.commit()
    assert backup_before_migration(db, "0002_predictions") == (None, [])
    assert list(tmp_path.glob("*.bak")) == []
    conn.execute("INSERT INTO runs VALUES ('r1')")
    conn.commit()
    conn.close()
    made = []
    for n in range(2, 7):
        copy, removed = backup_before_migration(db, f"{n:04d}_m")
        made.append(copy)
        assert copy is not None and _rows(copy, "SELECT id FROM runs") == [("r1",)]
        assert removed == ([] if n < 5 else [made[n - 5]])
    kept = sorted(p.name for p in tmp_path.glob("*.bak"))
    assert kept == [f"mindledger.db.before-{n:04d}_m.bak" for n in (4, 5, 6)]
