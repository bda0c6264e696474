"""A seeded SQLite database for the dashboard tests: a synthetic run (an agent under test, its
control, one ablation, and a reference whose profile is invalid), an empty running run, and a
prediction ledger holding one prediction in each state, all on a frozen clock; held-out nightly
runs for the snapshots; and a quick run whose trials are whole (transcripts, wrong, unparsed
and failed trials) for the trials and transcript screens."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.db import open_engine
from ledger.predictions import Ledger
from ledger.protocol import provenance
from ledger.store import RunAgent, Store
from reports.synthetic import SyntheticAgent, logistic_accuracy, synthetic_run
from tui.source import DashboardSource

OP = provenance("operator", "test-request")
"""An operator's provenance for answers the tests record by hand."""

KEY = Ed25519PrivateKey.from_private_bytes(b"\x07" * 32)
N_BOOT = 200


class FakeClock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.t = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)

    def __call__(self) -> str:
        return self.t.isoformat(timespec="microseconds")

    def advance(self, seconds: float) -> None:
        self.t += dt.timedelta(seconds=seconds)


def synthetic_agents() -> list[SyntheticAgent]:
    return [
        SyntheticAgent("piper", logistic_accuracy(2.7, -1.2, 0.25), spec={"adapter": "openai"},
                       api_error_rate=0.05),
        SyntheticAgent("piper-control", logistic_accuracy(1.6, -1.2, 0.25), role="control",
                       base_agent="piper"),
        SyntheticAgent("piper-no-perspective", logistic_accuracy(1.9, -1.2, 0.25),
                       role="ablation", base_agent="piper",
                       spec={"ablated": "perspective-filtering"}),
        SyntheticAgent("not-reality", lambda d: 0.9, tb_accuracy=0.04, role="reference",
                       spec={"policy": "not-reality"}, confidence_noise=None),
    ]  # fmt: skip


@dataclass
class Seeded:
    store: Store
    clock: FakeClock
    home: Path
    predictions: dict[str, str]
    """state → prediction id"""

    def ledger(self) -> Ledger:
        return Ledger(
            self.store.engine,
            KEY,
            clock=self.clock,
            reveal_timeout=60,
            witness_dir=self.home / "witness",
        )

    def source(self, *, with_ledger: bool = True) -> DashboardSource:
        return DashboardSource(
            self.store,
            self.ledger if with_ledger else None,
            n_boot=N_BOOT,
            seed=1,
            clock=self.clock,
        )


def _seed_ledger(led: Ledger, clock: FakeClock) -> dict[str, str]:
    c = led.client("piper")
    expired = c.commit("dusk", "What will you pick, 1 to 10?", {"7": 1.0})
    clock.advance(61)
    assert led.expire_overdue() == [expired.id]
    scored = c.commit("dusk", "Pick a number from 1 to 10", {"7": 0.6, "3": 0.4})
    scored.record("7", OP)
    scored.reveal()
    rejected = c.commit("wren", "Heads or tails?", {"heads": 0.9, "tails": 0.1})
    rejected.record("tails", OP)
    led.reveal(rejected.id, {**rejected.body, "distribution": {"tails": 1.0}}, rejected.salt)
    observed = c.commit("wren", "Red or blue?", {"red": 0.5, "blue": 0.5})
    observed.record("blue", OP)
    committed = c.commit("dusk", "Which door?", {"left": 0.7, "right": 0.3})
    assert led.verify() == []
    return {
        "expired": expired.id,
        "scored": scored.id,
        "rejected": rejected.id,
        "observed": observed.id,
        "committed": committed.id,
    }


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Seeded]:
    clock = FakeClock()
    store = Store(open_engine(f"sqlite:///{tmp_path / 'dash.db'}", clock=clock), clock=clock)
    store.create_run(
        "run-empty", suite="quick", seed=3, held_out=True, params={},
        agents=[RunAgent("piper", "agent", {"adapter": "openai"})], items=[],
    )  # fmt: skip
    clock.advance(60)
    run = synthetic_run(np.random.default_rng(7), synthetic_agents(), stories=4, games=0)
    run.write(store, "run-a", seed=11)
    seeded = Seeded(store, clock, tmp_path, {})
    led = seeded.ledger()
    try:
        seeded.predictions = _seed_ledger(led, clock)
    finally:
        led.close()
    yield seeded
    store.engine.dispose()


# -- the snapshot database: a deterministic history of nightly runs ------------------------------

SNAP_SIZE = (160, 48)
NIGHTLY_STORIES = 8
"""The terminal every snapshot is taken at (columns, lines)."""


@pytest.fixture
def fixed_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded stand-ins for :mod:`secrets` (the ledger's genesis nonce and commitment salts),
    so that prediction ids and the ledger's head hash are the same on every machine."""
    import secrets

    rng = np.random.default_rng(2026)
    monkeypatch.setattr(secrets, "token_bytes", lambda n=32: rng.bytes(n))
    monkeypatch.setattr(secrets, "token_hex", lambda n=32: rng.bytes(n).hex())


def nightly_agents(night: int) -> list[SyntheticAgent]:
    """The agents of nightly run ``night`` (1-4): piper's false-belief accuracy drops on
    night 4; night 4 also has a reference whose accuracy does not decline with depth (its D50
    is not estimable, with a long reason)."""
    piper_d50 = 0.2 if night == 4 else 2.7
    agents = [
        SyntheticAgent("piper", logistic_accuracy(piper_d50, -1.2, 0.25),
                       spec={"adapter": "openai"}, tb_accuracy=0.99),
        SyntheticAgent("piper-control", logistic_accuracy(1.6, -1.2, 0.25), role="control",
                       base_agent="piper", tb_accuracy=0.99),
    ]  # fmt: skip
    if night == 4:
        agents.append(SyntheticAgent("flat", lambda d: 0.5, role="reference",
                                     spec={"policy": "flat"}, tb_accuracy=0.99))
    return agents


@pytest.fixture
def nightly(fixed_secrets: None, seeded: Seeded) -> Seeded:
    """:func:`seeded` plus four held-out nightly runs of piper, a day apart (``night-1`` …
    ``night-4``; piper regresses on the last), all on the frozen clock."""
    for night in range(1, 5):
        seeded.clock.t = dt.datetime(2026, 3, 1 + night, 3, tzinfo=dt.UTC)
        run = synthetic_run(np.random.default_rng(100 + night), nightly_agents(night),
                            stories=NIGHTLY_STORIES, games=0)
        run.write(seeded.store, f"night-{night}", held_out=True, seed=1000 + night)
    seeded.clock.t = dt.datetime(2026, 3, 5, 12, tzinfo=dt.UTC)
    return seeded


# -- a run whose trials are read: real items, answered through the chat agent -------------------

TRIALS_RUN = "quick-1"
TRIALS_ITEMS = 16
"""The first items of the quick suite (seed 5): NestToM stories R0–R5, false and true belief."""


class ScriptedBackend:
    """A chat backend that answers each request with the next reply of its script (an
    exception is raised instead)."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)

    async def chat(self, messages: list[dict[str, Any]], **_: Any) -> Any:
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def aclose(self) -> None:
        return None


def _reply(content: str | None = None, answer: str | None = None, conf: float = 0.9) -> Any:
    from harness.agent.agents import ChatReply

    if answer is None:
        return ChatReply({"role": "assistant", "content": content}, "stop", "scripted-1", 410,
                         12, 0.6)  # fmt: skip
    call = {"id": "call_1", "type": "function", "function": {
        "name": "submit_answer", "arguments": json.dumps({"answer": answer, "confidence": conf})}}
    return ChatReply({"role": "assistant", "content": content, "tool_calls": [call]},
                     "tool_calls", "scripted-1", 420, 24, 0.8)  # fmt: skip


def _script(n: int, truth: Mapping[str, Any], choices: list[str]) -> list[Any]:
    """piper's replies to item ``n``: mostly right; item 2 wrong (it answers where the object
    really is), 3 unreadable twice, 4 a program that wrote no JSON, 5 right after a nudge,
    6 wrong (another container), 11 a timeout."""
    from mindledger.errors import AgentError

    right, reality = truth["answer"], truth["reality"]
    if n == 2:
        return [_reply(f"It was moved last to the {reality}.", reality, 0.7)]
    if n == 3:
        return [_reply("Hmm, hard to say."), _reply("I cannot tell from the story.")]
    if n == 4:
        return [AgentError("python3 wrote no JSON reply", kind="malformed")]
    if n == 5:
        return [_reply("Let me think about who saw what."), _reply(None, right, 0.6)]
    if n == 6:
        return [_reply(None, next(c for c in choices if c not in (right, reality)), 0.55)]
    if n == 11:
        return [AgentError("request timed out after 120 s", kind="timeout")]
    return [_reply(None, right)]


def write_trials_run(store: Store, clock: FakeClock, run_id: str = TRIALS_RUN, *,
                     held_out: bool = False) -> None:
    """A quick run of piper (scripted) and its control (always right) on real items: each
    trial goes through :class:`harness.agent.agents.ChatAgent` and the runner's scoring, so its
    transcript, answer, score and costs are what a real run stores. Item 2 (position) is
    wrong, 3 unparsed, 4 an error, and so on (:func:`_script`)."""
    import asyncio

    from harness.agent.agents import ChatAgent
    from harness.run.runner import score_attempt
    from harness.run.suites import get_suite

    clock.t = dt.datetime(2026, 3, 5, 9, tzinfo=dt.UTC)
    items = get_suite("quick").build(5)[:TRIALS_ITEMS]
    store.create_run(run_id, suite="quick", seed=5, held_out=held_out, params={}, agents=[
        RunAgent("piper", "agent", {"adapter": "openai"}),
        RunAgent("piper-control", "control", {"adapter": "openai"}, "piper"),
    ], items=items)  # fmt: skip
    for n, item in enumerate(items, 1):
        choices = list(item.answer["choices"])
        for name, replies in (("piper", _script(n, item.truth, choices)),
                              ("piper-control", [_reply(None, item.truth["answer"])])):
            agent = ChatAgent(name, ScriptedBackend(replies),
                              system_prompt=f"You are {name}. Read each story carefully.")
            attempt = asyncio.run(agent.attempt(item))
            assert store.record_trial(score_attempt(run_id, name, item, attempt))
    store.set_run_status(run_id, "complete", finished=True)


@pytest.fixture
def with_trials(seeded: Seeded) -> Seeded:
    """:func:`seeded` plus :func:`write_trials_run`'s run (``quick-1``)."""
    write_trials_run(seeded.store, seeded.clock)
    return seeded


@pytest.fixture
def nightly_with_trials(nightly: Seeded) -> Seeded:
    """:func:`nightly` plus :func:`write_trials_run`'s run (``quick-1``), on the same frozen
    clock."""
    write_trials_run(nightly.store, nightly.clock)
    nightly.clock.t = dt.datetime(2026, 3, 5, 12, tzinfo=dt.UTC)
    return nightly


@pytest.fixture
def with_held_trials(with_trials: Seeded) -> Seeded:
    """:func:`with_trials` plus the same run again as a held-out run, ``quick-held``."""
    write_trials_run(with_trials.store, with_trials.clock, "quick-held", held_out=True)
    return with_trials
