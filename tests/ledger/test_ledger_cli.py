"""``mindledger ledger``: the CLI contract — output, exit codes (0 ok, 1 verify failure or
reveal mismatch, 2 bad input) and messages naming the field or id."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.keys import PUBLIC_KEY_FILE
from tests.cli import run_main as run

DIST = '{"7": 0.6, "3": 0.4}'


def commit(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, str]:
    code, out, err = run(
        capsys,
        *extra,
        "ledger",
        "commit",
        "--predictor",
        "piper",
        "--target",
        "dusk",
        "--query",
        "Pick a number from 1 to 10",
        "--distribution",
        DIST,
    )
    assert code == 0, err
    data = json.loads(out)
    assert {"id", "commitment", "salt"} <= set(data)
    assert data["commitment"].startswith("sha256:") and len(bytes.fromhex(data["salt"])) == 32
    return data


def test_commit_observe_reveal_show(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = commit(capsys)
    pid = c["id"]
    assert run(capsys, "ledger", "observe", pid, "--answer", "7")[0] == 0
    assert run(capsys, "ledger", "observe", pid, "--answer", "3", "--answer", "7")[0] == 0
    code, out, err = run(
        capsys, "ledger", "reveal", pid, "--distribution", DIST, "--salt", c["salt"]
    )
    assert code == 0, err
    scores = json.loads(out)
    assert scores["status"] == "scored" and scores["scores"]["top1_match"] == 1.0
    # after the reveal: observations and a second reveal are refused, naming the state
    code, _, err = run(capsys, "ledger", "observe", pid, "--answer", "7")
    assert code == 2 and "refused after the reveal" in err and "Traceback" not in err
    code, _, err = run(capsys, "ledger", "reveal", pid, "--distribution", DIST, "--salt", c["salt"])
    assert code == 2 and "already scored" in err
    code, out, _ = run(capsys, "ledger", "show", "--predictor", "piper", "--format", "json")
    shown = json.loads(out)
    assert [p["state"] for p in shown["predictions"]] == ["scored"]
    assert shown["predictions"][0]["observed"] == ["7", "3", "7"]
    assert shown["summary"]["n"] == 1
    code, out, _ = run(capsys, "ledger", "show", "--target", "nobody", "--format", "json")
    assert json.loads(out)["predictions"] == []
    code, out, err = run(capsys, "ledger", "verify")
    assert code == 0 and len(out.strip().splitlines()) == 1 and out.startswith("ok: 6 entries")


def test_mismatched_reveal_exits_1_and_is_recorded(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = commit(capsys)
    run(capsys, "ledger", "observe", c["id"], "--answer", "7")
    code, out, err = run(
        capsys, "ledger", "reveal", c["id"], "--distribution", '{"7": 1.0}', "--salt", c["salt"]
    )
    assert code == 1 and "does not match" in err
    assert json.loads(out)["status"] == "rejected"
    code, out, _ = run(capsys, "ledger", "show", "--id", c["id"], "--format", "json")
    assert json.loads(out)["state"] == "rejected"
    assert run(capsys, "ledger", "verify")[0] == 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["commit", "--predictor", "p", "--target", "t", "--query", "q", "--distribution", "{"],
            "--distribution",
        ),
        (
            [
                "commit",
                "--predictor",
                "p",
                "--target",
                "t",
                "--query",
                "q",
                "--distribution",
                "[1]",
            ],
            "--distribution",
        ),
        (
            [
                "commit",
                "--predictor",
                "p",
                "--target",
                "t",
                "--query",
                "q",
                "--distribution",
                '{"a": 0.3}',
            ],
            "--distribution: probabilities sum",
        ),
        (
            [
                "commit",
                "--predictor",
                "p",
                "--target",
                "t",
                "--query",
                "q",
                "--distribution",
                '{"a": 1}',
                "--condition",
                "{x",
            ],
            "--condition",
        ),
        (["observe", "pdoesnotexist", "--answer", "x"], "pdoesnotexist"),
        (
            ["reveal", "pdoesnotexist", "--distribution", '{"a": 1}', "--salt", "00"],
            "pdoesnotexist",
        ),
        (["verify", "--file", "missing.jsonl", "--public-key", "00"], "missing.jsonl"),
    ],
)
def test_bad_input_exits_2_naming_the_field(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    code, _, err = run(capsys, "ledger", *args)
    assert code == 2, err
    assert needle in err and "Traceback" not in err


def test_verify_names_the_first_bad_entry_and_export_verifies_offline(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = commit(capsys)
    run(capsys, "ledger", "observe", c["id"], "--answer", "3")
    run(capsys, "ledger", "reveal", c["id"], "--distribution", DIST, "--salt", c["salt"])
    out_file = isolated_home / "ledger.jsonl"
    code, out, _ = run(capsys, "ledger", "export", "--out", str(out_file))
    assert code == 0 and json.loads(out)["entries"] == 4
    pub = isolated_home / PUBLIC_KEY_FILE
    code, out, err = run(
        capsys, "ledger", "verify", "--file", str(out_file), "--public-key", str(pub)
    )
    assert code == 0 and out.startswith("ok: 4 entries"), err
    with sqlite3.connect(isolated_home / "mindledger.db") as db:
        db.execute("DROP TRIGGER ledger_entries_no_update")
        db.execute('UPDATE ledger_entries SET payload_json = \'{"answer":"7"}\' WHERE seq = 3')
    code, out, err = run(capsys, "ledger", "verify")
    assert code == 1
    assert "first bad entry is 3" in err and "content changed" in err
    code, out, _ = run(capsys, "ledger", "verify", "--json")
    assert code == 1 and json.loads(out)["failures"][0]["seq"] == 3
    # the export made before the change still verifies, with only the public key
    code, _, _ = run(
        capsys, "ledger", "verify", "--file", str(out_file), "--public-key", pub.read_text()
    )
    assert code == 0
    lines = out_file.read_text().splitlines()
    out_file.write_text("\n".join(lines[:2]) + "\n")  # cut short, trailer gone
    code, _, err = run(
        capsys, "ledger", "verify", "--file", str(out_file), "--public-key", str(pub)
    )
    assert code == 1 and "entry missing" in err


def test_verify_with_db_option(
    db_url: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = commit(capsys, "--db", db_url)
    assert c["id"].startswith("p")
    code, out, err = run(capsys, "ledger", "verify", "--db", db_url)
    assert code == 0 and out.startswith("ok: 2 entries"), err


def test_verify_does_not_migrate_a_foreign_database(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = isolated_home / "other.db"
    sqlite3.connect(other).close()
    code, _, err = run(capsys, "ledger", "verify", "--db", f"sqlite:///{other}")
    assert code == 2 and "no prediction ledger" in err
    with sqlite3.connect(other) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []


def test_ledger_group_is_listed_and_has_help(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "ledger", "--help"],
        capture_output=True,
        text=True,
        env={"MINDLEDGER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert r.returncode == 0
    for name in ("commit", "observe", "reveal", "verify", "export", "show"):
        assert name in r.stdout


def test_heads_proofs_and_verify_against_a_saved_head(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    c = commit(capsys)
    run(capsys, "ledger", "observe", c["id"], "--answer", "7")
    code, out, err = run(capsys, "ledger", "head")
    assert code == 0, err
    head = json.loads(out)
    assert head["tree_head"]["size"] == 3 and head["signature"]
    saved = tmp_path / "head.json"
    saved.write_text(out)
    # the heads file got it too
    lines = (isolated_home / "ledger-heads.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [head]
    run(capsys, "ledger", "reveal", c["id"], "--distribution", DIST, "--salt", c["salt"])
    code, out, err = run(capsys, "ledger", "verify", "--head", str(saved))
    assert code == 0, err
    assert "consistency proof" in err and "verifies" in err
    # an inclusion proof of the prediction's entries, checked offline with the key
    code, out, err = run(capsys, "ledger", "prove", c["id"])
    assert code == 0, err
    bundle = tmp_path / "proof.json"
    bundle.write_text(out)
    assert len(json.loads(out)["proofs"]) == 3  # commit, observe, reveal
    pub = str(isolated_home / PUBLIC_KEY_FILE)
    code, out, err = run(capsys, "ledger", "verify", "--proof", str(bundle), "--public-key", pub)
    assert code == 0 and out.startswith("ok: 3 entries"), err
    forged = json.loads(bundle.read_text())
    forged["proofs"][1]["entry"]["payload"]["answer"] = "3"
    bundle.write_text(json.dumps(forged))
    code, out, err = run(capsys, "ledger", "verify", "--proof", str(bundle), "--public-key", pub)
    assert code == 1 and "does not hash" in err
    # history rewritten behind the saved head, with the real key: the head says so
    with sqlite3.connect(isolated_home / "mindledger.db") as db:
        db.execute("DROP TRIGGER ledger_entries_no_delete")
        db.execute("DROP TRIGGER ledger_tree_no_delete")
        db.execute("DELETE FROM ledger_entries")
        db.execute("DELETE FROM ledger_tree")
    for path in (isolated_home / "ledger-witness").glob("*.json"):
        path.unlink()
    (isolated_home / "ledger-heads.jsonl").unlink()
    commit(capsys)
    assert run(capsys, "ledger", "verify")[0] == 0  # the new ledger alone looks fine
    code, out, err = run(capsys, "ledger", "verify", "--head", str(saved))
    assert code == 1 and "ledger replaced" in err, err


def test_rotate_key_records_the_change_and_verify_follows_it(
    isolated_home: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    c = commit(capsys)
    run(capsys, "ledger", "observe", c["id"], "--answer", "7")
    old = (isolated_home / PUBLIC_KEY_FILE).read_text().strip()
    code, out, err = run(capsys, "ledger", "rotate-key")
    assert code == 0, err
    rotated = json.loads(out)
    assert rotated["previous"] == old and rotated["public_key"] != old
    assert (isolated_home / PUBLIC_KEY_FILE).read_text().strip() == rotated["public_key"]
    assert run(capsys, "ledger", "reveal", c["id"], "--distribution", DIST, "--salt",
               c["salt"])[0] == 0
    code, out, err = run(capsys, "ledger", "verify", "--full", "--json")
    assert code == 0, err
    assert json.loads(out)["keys"] == [old, rotated["public_key"]]
    # the key file replaced without a key entry: verify fails loudly
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key_file = isolated_home / "keys" / "ledger-ed25519.pem"
    key_file.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    code, out, err = run(capsys, "ledger", "verify")
    assert code == 1 and "never" in err and "key entry" in err
