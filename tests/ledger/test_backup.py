"""``mindledger db backup`` / ``db restore`` while another process writes runs and ledger
entries, and the refusals that keep a restore from losing what it should not."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.backup import users_of
from ledger.keys import KEY_FILE
from tests.cli import run_main

TRIALS_PER_RUN = 3

WRITER = r"""
import sys
from pathlib import Path

from ledger.db import open_engine
from ledger.predictions import open_ledger
from ledger.protocol import provenance
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.items import Item

home, url, stop = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
store = Store(open_engine(url))
client = open_ledger(home, url).client("piper")
agents = [RunAgent("a", "agent", {"adapter": "reference", "policy": "oracle"})]
n = 0
while not stop.exists() and n < 500:
    run = f"r{n:04d}"
    items = [
        Item(family="t", generator="g", version="1", seed=n * 10 + i, params={},
             prompt=f"q{n}.{i}", answer={"kind": "yesno"}, truth={"answer": "yes"})
        for i in range(3)
    ]
    store.create_run(run, suite="s", seed=n, held_out=False, params={}, agents=agents,
                     items=items)
    for it in items:  # one transaction each, as the runner's trial writer
        store.record_trial(TrialRecord(run_id=run, agent="a", item_id=it.id, status="ok",
                                       transcript=[{"role": "user", "content": it.prompt}],
                                       answer="yes", correct=True))
    store.set_run_status(run, "complete", finished=True)
    with client.predict("dusk", f"question {n}", {"yes": 0.7, "no": 0.3}) as p:
        p.record("yes", provenance("operator", f"writer-{n}"))
    n += 1
    print(n, flush=True)
"""


class Writer:
    """A process writing runs (each: created, three trials, marked complete) and ledger
    predictions (commit, observe, reveal) into one database until told to stop."""

    def __init__(self, home: Path, url: str):
        self.stop_file = home.parent / "stop-writer"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), url, str(self.stop_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.written = 0

    def wait_for(self, runs: int) -> None:
        """Block until the writer has finished ``runs`` runs (in all)."""
        assert self.proc.stdout is not None
        while self.written < runs:
            line = self.proc.stdout.readline()
            assert line, f"the writer stopped after {self.written} runs ({self.proc.wait()})"
            self.written = int(line)

    def stop(self) -> None:
        self.stop_file.touch()
        assert self.proc.wait(timeout=120) == 0


@pytest.fixture
def live(isolated_home: Path) -> Iterator[tuple[Path, Path, Writer]]:
    """A data directory whose database a writer process is writing to."""
    db = isolated_home / "mindledger.db"
    writer = Writer(isolated_home, f"sqlite:///{db}")
    try:
        yield isolated_home, db, writer
    finally:
        if writer.proc.poll() is None:
            writer.stop_file.touch()
            writer.proc.wait(timeout=120)


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _fresh_home(tmp_path: Path, source_home: Path, name: str) -> Path:
    """A new data directory holding only a copy of ``source_home``'s service key."""
    home = tmp_path / name
    (home / KEY_FILE).parent.mkdir(parents=True, mode=0o700)
    home.chmod(0o700)
    shutil.copy2(source_home / KEY_FILE, home / KEY_FILE)
    return home


def test_backup_under_load_restores_to_a_consistent_verified_prefix(
    live: tuple[Path, Path, Writer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    home, db, writer = live
    writer.wait_for(3)
    copy = tmp_path / "backup.db"
    code, out, err = run_main(capsys, "db", "backup", str(copy))
    assert code == 0, err
    assert out.startswith(f"backed up {db} to {copy}: ") and "integrity ok" in out
    writer.wait_for(writer.written + 3)  # the writer went on while and after the copy ran
    writer.stop()

    # the copy is one moment of the database: runs r0000… in order, every complete one whole,
    # at most the last one still being written
    copy_runs = _rows(copy, "SELECT id, status FROM runs ORDER BY id")
    ids = [r[0] for r in copy_runs]
    assert ids == [f"r{n:04d}" for n in range(len(ids))]
    assert len(ids) >= 3
    trials = dict(_rows(copy, "SELECT run_id, COUNT(*) FROM trials GROUP BY run_id"))
    for run_id, status in copy_runs[:-1]:
        assert (status, trials.get(run_id)) == ("complete", TRIALS_PER_RUN)
    last_id, last_status = copy_runs[-1]
    if last_status == "complete":
        assert trials[last_id] == TRIALS_PER_RUN
    else:  # caught between two of its transactions: created, then a trial at a time
        assert last_status == "running" and trials.get(last_id, 0) <= TRIALS_PER_RUN
    live_runs = _rows(db, "SELECT COUNT(*) FROM runs")[0][0]
    assert isinstance(live_runs, int) and live_runs > len(ids)  # taken mid-write

    # its ledger is a prefix of the live one: same hash at its last entry
    (copy_entries, copy_head), = _rows(
        copy, "SELECT COUNT(*), (SELECT hash FROM ledger_entries ORDER BY seq DESC LIMIT 1) "
        "FROM ledger_entries"
    )  # fmt: skip
    assert isinstance(copy_entries, int) and copy_entries > 0
    assert _rows(db, f"SELECT hash FROM ledger_entries WHERE seq = {copy_entries}") == [
        (copy_head,)
    ]
    assert _rows(db, "SELECT COUNT(*) FROM ledger_entries")[0][0] > copy_entries

    # restored into a fresh data directory (with the service key): verify passes, counts match
    fresh = _fresh_home(tmp_path, home, "fresh")
    monkeypatch.setenv("MINDLEDGER_HOME", str(fresh))
    code, out, err = run_main(capsys, "db", "restore", str(copy))
    assert code == 0, err
    assert f"{len(ids)} runs" in out and "no database to keep" in out
    code, out, err = run_main(capsys, "ledger", "verify")
    assert code == 0, err
    assert out.startswith(f"ok: {copy_entries} entries, head {copy_entries} {copy_head}")
    restored = fresh / "mindledger.db"
    assert _rows(restored, "SELECT id, status FROM runs ORDER BY id") == copy_runs
    assert _rows(restored, "SELECT COUNT(*) FROM trials") == _rows(
        copy, "SELECT COUNT(*) FROM trials"
    )


def test_restore_refuses_a_database_in_use_and_a_ledger_it_would_cut_short(
    live: tuple[Path, Path, Writer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, db, writer = live
    writer.wait_for(2)
    copy = tmp_path / "backup.db"
    assert run_main(capsys, "db", "backup", str(copy))[0] == 0
    writer.wait_for(writer.written + 2)
    assert users_of(db)  # the writer has it open
    live_runs_before = _rows(db, "SELECT COUNT(*) FROM runs")
    code, out, err = run_main(capsys, "db", "restore", str(copy))
    assert code == 2
    assert err.startswith(f"error: refusing to restore {copy} over {db}: a process has {db} open")
    assert not (home / "mindledger.db.before-restore").exists()
    writer.stop()
    assert _rows(db, "SELECT COUNT(*) FROM runs") >= live_runs_before  # untouched

    # nobody has it open now; but the data directory saw the ledger grow past the backup
    assert users_of(db) == []
    code, out, err = run_main(capsys, "db", "restore", str(copy))
    assert code == 2
    assert "this data directory saw the ledger reach entry" in err and "cuts off" in err
    entries = _rows(db, "SELECT COUNT(*) FROM ledger_entries")[0][0]

    # --force: restored, the replaced database kept whole beside it, and verify says what
    # was lost rather than passing
    code, out, err = run_main(capsys, "db", "restore", str(copy), "--force")
    assert code == 0, err
    assert "warning: restored anyway (--force): this data directory saw" in err
    before = home / "mindledger.db.before-restore"
    assert out.endswith(f"; the database it replaced is kept at {before}\n")
    assert _rows(before, "SELECT COUNT(*) FROM ledger_entries")[0][0] == entries
    assert _rows(db, "SELECT COUNT(*) FROM runs") == _rows(copy, "SELECT COUNT(*) FROM runs")
    code, _, err = run_main(capsys, "ledger", "verify")
    assert code == 1 and "cut off" in err


def test_a_backup_is_checked_before_it_is_restored(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = isolated_home / "mindledger.db"
    missing = tmp_path / "nope.db"
    code, _, err = run_main(capsys, "db", "restore", str(missing))
    assert (code, err) == (
        2,
        f"error: no such file: {missing} (expected a SQLite database written by "
        "`mindledger db backup`)\n",
    )
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    code, _, err = run_main(capsys, "db", "restore", str(text))
    assert code == 2 and f"{text} is not a SQLite database" in err
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    code, _, err = run_main(capsys, "db", "restore", str(other))
    assert code == 2 and "it has no mindledger schema (no _migrations table)" in err

    # a real backup with one page damaged fails SQLite's integrity check
    assert run_main(capsys, "db", "migrate")[0] == 0
    good = tmp_path / "good.db"
    assert run_main(capsys, "db", "backup", str(good))[0] == 0
    bad = tmp_path / "bad.db"
    data = bytearray(good.read_bytes())
    page = 4096
    data[2 * page : 3 * page] = b"\xff" * page
    bad.write_bytes(bytes(data))
    code, _, err = run_main(capsys, "db", "restore", str(bad))
    assert (
        code == 2 and f"error: {bad} cannot be restored: " in err and "nothing was changed" in err
    )
    assert not (isolated_home / "mindledger.db.before-restore").exists()

    # a backup made by a newer mindledger (a migration unknown here)
    newer = tmp_path / "newer.db"
    shutil.copyfile(good, newer)
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO _migrations VALUES ('9999_from_the_future', '2030-01-01')")
    conn.commit()
    conn.close()
    code, _, err = run_main(capsys, "db", "restore", str(newer))
    assert code == 2 and "made by a newer mindledger" in err and "9999_from_the_future" in err
    assert db.exists()


def test_backup_refuses_bad_destinations_and_keeps_an_old_file_until_the_new_one_checks(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_main(capsys, "db", "migrate")[0] == 0
    code, _, err = run_main(capsys, "db", "backup", str(tmp_path))
    assert code == 2 and f"'{tmp_path}' is a directory" in err
    code, _, err = run_main(capsys, "db", "backup", str(tmp_path / "no" / "such.db"))
    assert code == 2 and f"no directory {tmp_path / 'no'}" in err
    db = isolated_home / "mindledger.db"
    code, _, err = run_main(capsys, "db", "backup", str(db))
    assert code == 2 and "is the database itself" in err
    dest = tmp_path / "b.db"
    code, out, _ = run_main(capsys, "db", "backup", str(dest), "--format", "json")
    assert code == 0 and '"ok": true' in out
    assert oct(dest.stat().st_mode & 0o777) == "0o600"
    good = dest.read_bytes()

    # the ledger gets tampered with: the next copy fails its check and the good one stays
    code, _, err = run_main(
        capsys, "ledger", "commit", "--predictor", "piper", "--target", "dusk",
        "--query", "Pick a number", "--distribution", '{"7": 1.0}',
    )  # fmt: skip
    assert code == 0, err
    assert run_main(capsys, "db", "backup", str(dest))[0] == 0
    good = dest.read_bytes()
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER ledger_entries_no_update")
    conn.execute("UPDATE ledger_entries SET time = '2020-01-01T00:00:00+00:00' WHERE seq = 1")
    conn.commit()
    conn.close()
    code, _, err = run_main(capsys, "db", "backup", str(dest))
    assert code == 2
    failed = tmp_path / "b.db.failed"
    assert err.startswith(
        f"error: the copy of {db} does not check out, so {dest} was not written (the copy is "
        f"kept at {failed} to look into): ledger entry 1 (sha256:"
    )
    assert "content changed" in err
    assert dest.read_bytes() == good
    assert _rows(failed, "SELECT time FROM ledger_entries WHERE seq = 1") == [
        ("2020-01-01T00:00:00+00:00",)
    ]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".b.db")) == []


def test_backup_of_postgresql_prints_the_pg_dump_command_and_does_not_pretend(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://ml:s3cret@db.example:5433/mindledger?sslmode=require"
    code, out, err = run_main(capsys, "--db", url, "db", "backup", "night ly.dump")
    assert code == 2 and out == ""
    assert "s3cret" not in err
    assert (
        "  pg_dump --format=custom --file='night ly.dump' "
        "'postgresql://ml:***@db.example:5433/mindledger?sslmode=require'\n"
    ) in err
    assert "pg_restore --no-owner --dbname=" in err
    code, _, err = run_main(capsys, "--db", url, "db", "restore", "x.dump")
    assert code == 2 and "pg_restore" in err and "s3cret" not in err


def test_users_of_sees_an_idle_connection_of_another_process(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    assert users_of(db) == []
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT * FROM t').fetchall(); print('open', flush=True); "
            "sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        reasons = users_of(db)
        assert len(reasons) == 1 and f"a process has {db} open" in reasons[0]
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    deadline = time.monotonic() + 30
    while users_of(db) and time.monotonic() < deadline:  # the holder's exit releases it
        time.sleep(0.05)
    assert users_of(db) == []
    assert not os.path.exists(str(db) + "-wal") or os.path.getsize(str(db) + "-wal") == 0
