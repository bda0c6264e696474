"""API tokens: scopes, expiry, revocation, listing, the per-token cap on open runs, the
migration of tokens made before scopes, and ``mindledger serve token``."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from harness.cli.main import main
from harness.daemon import (
    Principal,
    agent_for_token,
    authenticate,
    claim_run_request,
    create_token,
    hash_token,
    list_tokens,
    open_run_requests,
    record_run_request,
    release_run_request,
    revoke_token,
    token_id_of,
)
from harness.daemon.tokens import parse_expiry
from ledger import migrations
from ledger.db import open_engine, utc_now
from mindledger.errors import InputError, NotFoundError

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def at(**delta: float) -> str:
    """T0 plus ``delta`` (timedelta keywords), as the clock writes it."""
    return (T0 + dt.timedelta(**delta)).isoformat(timespec="microseconds")


def clock_at(**delta: float) -> Callable[[], str]:
    return lambda: at(**delta)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    engine = open_engine(db_url)
    yield engine
    engine.dispose()


def add_run(engine: Engine, run_id: str, status: str) -> None:
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "INSERT INTO runs (id, suite, seed, held_out, params_json, status, created_at) "
                "VALUES (:id, 'quick', 1, false, '{}', :status, :t)"
            ),
            {"id": run_id, "status": status, "t": at()},
        )


# -- scopes ------------------------------------------------------------------------------------


def test_an_agent_token_acts_as_its_agent_only(engine: Engine) -> None:
    token = create_token(engine, "piper", clock=clock_at())
    p = authenticate(engine, token, now=at(days=400))
    assert p == Principal(token_id_of(token), "agent", "piper", None, None)
    assert token_id_of(token).startswith("tok_") and len(token_id_of(token)) == 12
    assert p.name == "piper"
    assert p.may_predict_as("piper") and not p.may_predict_as("mallory")
    assert p.may_request_runs_of("piper") and not p.may_request_runs_of("dusk")
    assert not p.sees_held_out and not p.may_observe and not p.is_operator
    assert p.run_cap(2) == 2
    capped = create_token(engine, "piper", max_queued_runs=1, clock=clock_at())
    capped_p = authenticate(engine, capped, now=at())
    assert capped_p is not None and capped_p.run_cap(2) == 1
    assert capped_p.token_id != p.token_id


def test_an_operator_token_names_no_agent_and_lapses_after_30_days(engine: Engine) -> None:
    token = create_token(engine, scope="operator", label="alice", clock=clock_at())
    p = authenticate(engine, token, now=at(days=29))
    assert p is not None and p.scope == "operator" and p.agent is None and p.label == "alice"
    assert p.name == "operator:alice"
    assert p.sees_held_out and p.may_observe
    assert p.may_request_runs_of("piper") and p.may_request_runs_of("dusk")
    assert not p.may_predict_as("piper") and not p.may_predict_as("operator:alice")
    assert authenticate(engine, token, now=at(days=30)) is None
    # the old, agent-only door lets no operator in as an agent
    unlabelled = create_token(engine, scope="operator", expires_at=None, clock=clock_at())
    q = authenticate(engine, unlabelled, now=at(days=4000))
    assert q is not None and q.name == "operator:" + token_id_of(unlabelled)
    assert agent_for_token(engine, unlabelled) is None
    assert agent_for_token(engine, create_token(engine, "piper")) == "piper"


@pytest.mark.parametrize(
    "bad",
    ["", "mlt_", "mlt_forged", "Bearer mlt_x", "tok_1234abcd", "mlt_é", "mlt_a b", "mlt_" * 100],
)
def test_malformed_and_unknown_tokens_authenticate_nobody(engine: Engine, bad: str) -> None:
    token = create_token(engine, "piper")
    assert authenticate(engine, bad, now=utc_now()) is None
    assert authenticate(engine, token + "x", now=utc_now()) is None
    assert authenticate(engine, hash_token(token), now=utc_now()) is None
    assert authenticate(engine, token_id_of(token), now=utc_now()) is None


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"agent": None}, "agent"),
        ({"agent": "no spaces"}, "agent"),
        ({"agent": "piper", "scope": "admin"}, "scope"),
        ({"agent": "piper", "scope": "operator"}, "agent"),
        ({"agent": "piper", "label": "two\nlines"}, "label"),
        ({"agent": "piper", "max_queued_runs": -1}, "max_queued_runs"),
        ({"agent": "piper", "max_queued_runs": True}, "max_queued_runs"),
        ({"agent": "piper", "max_queued_runs": 1001}, "max_queued_runs"),
        ({"agent": "piper", "expires_at": "2026-01-01T00:00:00Z"}, "expires_at"),
        ({"agent": "piper", "expires_at": "2027-01-01T00:00:00"}, "expires_at"),
    ],
)
def test_bad_token_input_is_refused_before_anything_is_written(
    engine: Engine, kwargs: dict, where: str
) -> None:
    with pytest.raises(InputError) as err:
        create_token(engine, **kwargs, clock=clock_at())
    assert err.value.where == where
    assert list_tokens(engine) == []


# -- expiry ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", at(days=30)),
        ("12h", at(hours=12)),
        ("90m", at(minutes=90)),
        ("2w", at(weeks=2)),
        (" 1d ", at(days=1)),
        ("2027-01-01T00:00:00Z", "2027-01-01T00:00:00.000000+00:00"),
        ("2027-01-01T02:00:00+02:00", "2027-01-01T00:00:00.000000+00:00"),
        ("never", None),
        ("NEVER", None),
    ],
)
def test_parse_expiry(text: str, expected: str | None) -> None:
    assert parse_expiry(text, now=at()) == expected


@pytest.mark.parametrize(
    "text",
    ["", "0d", "30x", "-5d", "30 d", "tomorrow", "2027-01-01T00:00:00", "2026-03-01T11:59:00Z"],
)
def test_parse_expiry_refuses_what_it_cannot_read_or_what_is_past(text: str) -> None:
    with pytest.raises(InputError) as err:
        parse_expiry(text, now=at(), where="--expires")
    assert str(err.value).startswith("--expires: ") and "\n" not in str(err.value)


def test_an_expired_token_authenticates_nobody(engine: Engine) -> None:
    short = create_token(engine, "piper", expires_at="2026-03-01T18:00:00Z", clock=clock_at())
    forever = create_token(engine, "piper", clock=clock_at())
    relative = create_token(engine, "piper", expires_at="6h", clock=clock_at())
    assert authenticate(engine, relative, now=at(hours=5, minutes=59)) is not None
    assert authenticate(engine, relative, now=at(hours=6)) is None
    assert authenticate(engine, short, now=at(hours=5, minutes=59)) is not None
    assert authenticate(engine, short, now=at(hours=6)) is None
    assert authenticate(engine, forever, now=at(days=10_000)) is not None
    states = {t.token_id: t.state(at(hours=6)) for t in list_tokens(engine)}
    assert states == {
        token_id_of(short): "expired",
        token_id_of(forever): "active",
        token_id_of(relative): "expired",
    }


# -- revocation, listing, last use -------------------------------------------------------------


def test_a_revoked_token_authenticates_nobody_and_others_still_work(engine: Engine) -> None:
    a = create_token(engine, "piper", clock=clock_at())
    b = create_token(engine, "piper", clock=clock_at(seconds=1))
    info = revoke_token(engine, token_id_of(a), clock=clock_at(hours=1))
    assert info.revoked_at == at(hours=1) and info.state(at(hours=1)) == "revoked"
    assert authenticate(engine, a, now=at(hours=1)) is None
    assert authenticate(engine, b, now=at(hours=1)) is not None
    # revoking again changes nothing; an unknown id names nothing
    assert revoke_token(engine, token_id_of(a), clock=clock_at(hours=2)).revoked_at == at(hours=1)
    with pytest.raises(NotFoundError, match="tok_00000000"):
        revoke_token(engine, "tok_00000000")
    assert [t.revoked_at for t in list_tokens(engine)] == [at(hours=1), None]


def test_list_shows_ids_and_terms_never_secrets(engine: Engine) -> None:
    a = create_token(engine, "piper", max_queued_runs=3, clock=clock_at())
    b = create_token(engine, scope="operator", label="alice", clock=clock_at(minutes=1))
    listed = [t.to_dict(at(minutes=2)) for t in list_tokens(engine)]
    assert listed == [
        {
            "id": token_id_of(a),
            "scope": "agent",
            "agent": "piper",
            "label": None,
            "created_at": at(),
            "expires_at": None,
            "revoked_at": None,
            "last_used_at": None,
            "max_queued_runs": 3,
            "state": "active",
        },
        {
            "id": token_id_of(b),
            "scope": "operator",
            "agent": None,
            "label": "alice",
            "created_at": at(minutes=1),
            "expires_at": at(days=30, minutes=1),
            "revoked_at": None,
            "last_used_at": None,
            "max_queued_runs": None,
            "state": "active",
        },
    ]
    text = repr(list_tokens(engine))
    for secret in (a, b, hash_token(a), hash_token(b)):
        assert secret not in text


def test_last_use_is_recorded_at_most_once_a_minute(engine: Engine) -> None:
    token = create_token(engine, "piper", clock=clock_at())
    for now in (at(seconds=5), at(seconds=30), at(seconds=64)):
        authenticate(engine, token, now=now)
    assert list_tokens(engine)[0].last_used_at == at(seconds=5)
    authenticate(engine, token, now=at(seconds=65))
    assert list_tokens(engine)[0].last_used_at == at(seconds=65)
    authenticate(engine, token + "x", now=at(minutes=5))  # a failed attempt is no use
    assert list_tokens(engine)[0].last_used_at == at(seconds=65)


# -- open runs ---------------------------------------------------------------------------------


def test_open_runs_count_the_token_s_queued_and_running_runs(engine: Engine) -> None:
    piper = token_id_of(create_token(engine, "piper"))
    other = token_id_of(create_token(engine, "dusk"))
    for run_id, status in [
        ("r-running", "running"),
        ("r-queued", "queued"),
        ("r-complete", "complete"),
        ("r-incomplete", "incomplete"),
        ("r-interrupted", "interrupted"),
    ]:
        add_run(engine, run_id, status)
        record_run_request(engine, piper, run_id, at())
    add_run(engine, "r-other", "running")
    record_run_request(engine, other, "r-other", at())
    assert open_run_requests(engine, piper, now=at(minutes=1)) == 2
    assert open_run_requests(engine, other, now=at(minutes=1)) == 1
    # a run not stored yet holds its slot while it is planned, then lets go
    record_run_request(engine, piper, "r-planning", at(minutes=1))
    assert open_run_requests(engine, piper, now=at(minutes=10)) == 3
    assert open_run_requests(engine, piper, now=at(minutes=11)) == 2
    add_run(engine, "r-planning", "running")
    assert open_run_requests(engine, piper, now=at(days=1)) == 3
    assert open_run_requests(engine, "tok_nobody", now=at()) == 0
    assert open_run_requests(engine, piper) == 3  # the default clock: now
    with pytest.raises(NotFoundError):
        record_run_request(engine, "tok_nobody", "r-x", at())


def test_claim_refuses_at_the_cap_and_release_frees_a_slot(engine: Engine) -> None:
    tid = token_id_of(create_token(engine, "piper"))
    assert claim_run_request(engine, tid, "r1", cap=2, now=at())
    assert claim_run_request(engine, tid, "r2", cap=2, now=at())
    assert not claim_run_request(engine, tid, "r3", cap=2, now=at())
    assert open_run_requests(engine, tid, now=at()) == 2
    assert release_run_request(engine, "r2") and not release_run_request(engine, "r2")
    assert claim_run_request(engine, tid, "r3", cap=2, now=at())
    add_run(engine, "r1", "complete")
    assert claim_run_request(engine, tid, "r4", cap=2, now=at())
    assert not claim_run_request(engine, tid, "r5", cap=0, now=at())
    with pytest.raises(NotFoundError):
        claim_run_request(engine, "tok_nobody", "r6", cap=2, now=at())
    with engine.connect() as conn:
        ids = conn.execute(sa.text("SELECT run_id FROM api_run_requests ORDER BY run_id"))
        assert [r[0] for r in ids] == ["r1", "r3", "r4"]


def test_concurrent_claims_do_not_overshoot_the_cap(engine: Engine) -> None:
    tid = token_id_of(create_token(engine, "piper"))
    start = threading.Barrier(8)

    def claim(n: int) -> bool:
        start.wait()
        return claim_run_request(engine, tid, f"r{n}", cap=3, now=at())

    with ThreadPoolExecutor(8) as pool:
        granted = list(pool.map(claim, range(8)))
    assert sum(granted) == 3
    assert open_run_requests(engine, tid, now=at()) == 3


# -- migration of tokens made before scopes ----------------------------------------------------


def test_tokens_from_0003_become_agent_tokens_that_never_expire(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [name for name, _ in migrations.MIGRATIONS]
    monkeypatch.setattr(
        migrations, "MIGRATIONS", migrations.MIGRATIONS[: names.index("0003_api_tokens") + 1]
    )
    engine = open_engine(db_url)
    token = "mlt_made-before-scopes"
    twin_a = "sha256:deadbeef" + "0" * 56  # two hashes whose first 8 hex digits collide
    twin_b = "sha256:deadbeef" + "1" * 56
    with engine.begin() as conn:
        for token_hash, agent, created in [
            (hash_token(token), "piper", at()),
            (twin_a, "dusk", at(seconds=1)),
            (twin_b, "dusk", at(seconds=2)),
        ]:
            conn.execute(
                sa.text(
                    "INSERT INTO api_tokens (token_hash, agent, created_at) VALUES (:h, :a, :t)"
                ),
                {"h": token_hash, "a": agent, "t": created},
            )
    monkeypatch.undo()
    assert "0004_token_scopes" in migrations.migrate(engine, utc_now)
    p = authenticate(engine, token, now=at(days=10_000))
    assert p == Principal(token_id_of(token), "agent", "piper", None, None)
    listed = list_tokens(engine)
    assert [t.token_id for t in listed] == [token_id_of(token), "tok_deadbeef", "tok_deadbeef1"]
    assert all(t.scope == "agent" and t.expires_at is None for t in listed)
    assert all(t.revoked_at is None and t.max_queued_runs is None for t in listed)
    revoke_token(engine, "tok_deadbeef1")
    assert [t.state(at()) for t in list_tokens(engine)] == ["active", "active", "revoked"]
    engine.dispose()


# -- the CLI -----------------------------------------------------------------------------------


def cli(url: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``mindledger --db URL serve token ARGS`` in this process, through the CLI's own
    error handling; return (exit code, stdout, stderr)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["--db", url, "serve", "token", *args])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_cli_makes_lists_and_revokes_tokens(
    sqlite_url: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(sqlite_url, "piper", "--new", "--expires", "90d", "--max-runs", "1",
                         capsys=capsys)
    assert code == 0, err
    token = out.strip()
    assert out == token + "\n" and token.startswith("mlt_")
    tid = token_id_of(token)
    assert f"agent token {tid} (for 'piper', expires " in err and "at most 1 open run)" in err
    assert "not shown again" in err
    code, out, err = cli(sqlite_url, "--operator", "--label", "alice", capsys=capsys)
    assert code == 0 and "operator token tok_" in err and "label 'alice'" in err
    operator = out.strip()
    code, out, _ = cli(sqlite_url, "--scope", "operator", "--expires", "never", capsys=capsys)
    assert code == 0 and out.startswith("mlt_")

    code, out, err = cli(sqlite_url, "--list", "--format", "json", capsys=capsys)
    assert code == 0, err
    listed = json.loads(out)
    assert [(t["scope"], t["agent"], t["label"]) for t in listed] == [
        ("agent", "piper", None),
        ("operator", None, "alice"),
        ("operator", None, None),
    ]
    assert listed[0]["id"] == tid and listed[0]["max_queued_runs"] == 1
    now = dt.datetime.now(dt.UTC)
    expires = [t["expires_at"] for t in listed]
    assert dt.datetime.fromisoformat(expires[0]) - now > dt.timedelta(days=89, hours=23)
    assert dt.datetime.fromisoformat(expires[1]) - now > dt.timedelta(days=29, hours=23)
    assert expires[2] is None

    code, out, err = cli(sqlite_url, "--revoke", tid, capsys=capsys)
    assert code == 0 and out == "" and f"{tid} (agent 'piper') is revoked since" in err
    code, out, _ = cli(sqlite_url, "--list", capsys=capsys)
    assert code == 0
    rows = [line for line in out.splitlines() if "tok_" in line]
    assert len(rows) == 3 and "revoked" in rows[0] and "alice" in rows[1]
    assert token not in out and operator not in out and "sha256" not in out

    engine = open_engine(sqlite_url)
    assert authenticate(engine, token, now=utc_now()) is None
    assert authenticate(engine, operator, now=utc_now()) is not None
    engine.dispose()


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["piper", "--scope", "admin"], "--scope"),
        (["--operator", "--scope", "agent"], "--scope"),
        (["piper", "--expires", "30x"], "--expires"),
        (["piper", "--expires", "2020-01-01T00:00:00Z"], "--expires"),
        (["piper", "--expires", "2030-01-01T00:00:00"], "--expires"),
        (["piper", "--max-runs", "-1"], "--max-runs"),
        (["piper", "--max-runs", "many"], "--max-runs"),
        (["piper", "--label", "two\nlines"], "--label"),
        (["--operator", "piper"], "AGENT"),
        ([], "AGENT"),
        (["no spaces"], "AGENT"),
        (["--list", "--revoke", "tok_1234abcd"], "--revoke"),
        (["--list", "piper"], "--list"),
        (["--revoke", "tok_1234abcd", "--expires", "1d"], "--revoke"),
        (["piper", "--format", "json"], "--format"),
        (["--list", "--format", "xml"], "--format"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_option_and_writes_nothing(
    tmp_path: Path,
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    where: str,
) -> None:
    db = tmp_path / "untouched.db"
    code, out, err = cli(f"sqlite:///{db}", *args, capsys=capsys)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {where}: ") and err.count("\n") == 1, err
    assert not db.exists()


def test_cli_revoking_an_unknown_id_exits_2_and_changes_nothing(
    sqlite_url: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine = open_engine(sqlite_url)
    create_token(engine, "piper")
    before = list_tokens(engine)
    code, out, err = cli(sqlite_url, "--revoke", "tok_00000000", capsys=capsys)
    assert code == 2 and out == ""
    assert err == "error: --revoke: no token with id 'tok_00000000' " + (
        "(see `mindledger serve token --list`)\n"
    )
    assert list_tokens(engine) == before
    engine.dispose()


def test_cli_help_and_a_real_process(tmp_path: Path, isolated_home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(isolated_home)
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "harness.cli.main", "serve", "token", *a],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    shown = run("--help")
    assert shown.returncode == 0
    for needle in ("Examples:", "--operator", "--list", "--revoke tok_", "--expires", "never"):
        assert needle in shown.stdout
    bad = run("piper", "--scope", "root")
    assert bad.returncode == 2
    assert bad.stderr == "error: --scope: expected one of agent, operator, got 'root'\n"
    assert not (isolated_home / "mindledger.db").exists()
