"""The composition root: one Workspace opens what the CLI, the daemon and the workers use."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from harness.cli.main import cli
from harness.config.seeds import is_held_out
from harness.config.settings import load_settings
from harness.config.workspace import SeedPolicy, Workspace
from ledger.keys import KEY_FILE, public_key_hex
from ledger.migrations import pending_migrations
from ledger.predictions import WITNESS_DIR
from ledger.tree import HEADS_FILE
from mindledger.errors import InputError


def _agent_key() -> str:
    return public_key_hex(Ed25519PrivateKey.from_private_bytes(b"\x07" * 32))


def test_open_migrates_and_the_ledger_appends_and_verifies(isolated_home: Path) -> None:
    settings = load_settings()
    with Workspace.open(settings) as ws:
        assert ws.engine.url.database == str(isolated_home / "mindledger.db")
        assert pending_migrations(ws.engine) == []
        assert ws.store.list_runs() == []
        # the ledger (and with it the service key) opens on first use only
        assert not (isolated_home / KEY_FILE).exists()
        led = ws.ledger
        assert ws.ledger is led
        assert stat.S_IMODE((isolated_home / KEY_FILE).stat().st_mode) == 0o600
        assert led.reveal_timeout == settings.reveal_timeout
        entry = led.register_agent("piper", _agent_key())
        assert entry.seq >= 1
        assert led.verify() == []
        head = led.tree_head()
        assert head is not None and head.size == entry.seq
        assert (isolated_home / HEADS_FILE).exists()
        assert (isolated_home / WITNESS_DIR).is_dir()
        pool = ws.engine.pool
        assert pool.checkedin() >= 1
    # close() disposed of the engine: its pool (and every connection in it) is gone
    assert ws.engine.pool is not pool


def test_the_seed_policy_is_the_configured_one(isolated_home: Path) -> None:
    fraction = 0.9
    settings = load_settings(flags={"held_out_fraction": fraction})
    assert settings.held_out_fraction == fraction
    with Workspace.open(settings) as ws:
        assert ws.seeds == SeedPolicy(fraction)
        # seeds held out at 0.9 but not at the default 0.3, and seeds outside both
        held = next(s for s in range(10_000) if is_held_out(s, 0.9) and not is_held_out(s))
        free = next(s for s in range(10_000) if not is_held_out(s, 0.9))
        assert ws.is_held_out(held) and not ws.is_held_out(free)
        with pytest.raises(InputError, match="held-out share"):
            ws.check_seed(held)
        ws.check_seed(held, held_out=True)
        ws.check_seed(free)
        for _ in range(20):
            assert not is_held_out(ws.draw_seed(held_out=False), fraction)
            assert is_held_out(ws.draw_seed(held_out=True), fraction)
    # the default workspace holds out 30%: that seed is a development seed there
    with Workspace.open(load_settings()) as ws:
        assert not ws.is_held_out(held)
        ws.check_seed(held)


def test_the_cli_and_the_workspace_see_the_same_ledger(isolated_home: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(cli, ["ledger", "register", "--predictor", "piper", "--public-key", _agent_key()])
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, ["ledger", "head"])
    assert r.exit_code == 0, r.output
    body = json.loads(r.output)["tree_head"]
    with Workspace.open(load_settings()) as ws:
        assert ws.ledger.ledger_id() == body["ledger"]
        entries = ws.ledger.entries()
        assert len(entries) == body["size"]
        assert entries[-1].hash == body["head"]
        assert ws.ledger.verify() == []
