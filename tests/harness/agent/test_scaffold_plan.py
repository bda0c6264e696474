"""The scaffold as a plan of steps: the requests a chat agent sends and the transcripts it keeps,
with every module on, are byte for byte what they were before the scaffold became a plan.

``golden/scaffold_requests.json`` was recorded from the callback scaffold (before the plan) by
running :func:`collect` against the FakeOpenAI server: every request body as the server parsed it,
in order, and every attempt's transcript, answer and counters, with each case's item (drawn by
:func:`generated_cases`) and answer mode.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import games
from games.repeated import make_episode_item
from harness.adapters import OpenAIBackend
from harness.adapters.openai import ChatPolicy, OpenAIChat
from harness.agent.agents import ChatAgent
from harness.agent.scaffold import Preliminary, Scaffold, WitnessLog
from harness.config.settings import MODULES
from harness.run.episodes import play_episode
from harness.testing import FakeOpenAI
from mindledger.items import Item
from nesttom import _suites as suites

GOLDEN = Path(__file__).parents[1] / "golden" / "scaffold_requests.json"
SYSTEM = "You are a careful reasoner."


def answer(body: dict[str, Any]) -> str:
    """A reply that depends only on the request, so a changed request changes what follows."""
    n = len(body["messages"])
    if body.get("tools") or body.get("response_format"):
        return "2"  # an integer for the games, unparseable for a choice (so a nudge follows)
    return f"notes after {n} messages"


def generated_cases() -> list[tuple[str, str, Item]]:
    """The cases as they were drawn for the recording (kept in the golden file with its items,
    so that a change to a generator cannot change what this test compares)."""
    b1 = suites.baseline_items(1)["B1"][0]
    no_story = dataclasses.replace(
        b1, id="", truth={k: v for k, v in b1.truth.items() if k != "story"}
    )
    recursive = games.generate_items(4, 5, games=("all-pay",), conditions=("recursive",))[0]
    inductive = games.generate_items(4, 5, games=("all-pay",), conditions=("inductive",))[0]
    episode = make_episode_item(1, {"game": "pd", "opponent": "always-cooperate", "rounds": 2})
    return [
        ("story-tools", "tools", b1),
        ("story-json", "json", b1),
        ("no-story-tools", "tools", no_story),
        ("no-story-text", "text", no_story),
        ("recursive-tools", "tools", recursive),
        ("inductive-tools", "tools", inductive),
        ("inductive-text", "text", inductive),
        ("episode-tools", "tools", episode),
    ]


def cases() -> list[tuple[str, str, Item]]:
    """Each case's name, answer mode and item, from the golden file."""
    golden = json.loads(GOLDEN.read_text())
    order = [name for name, _, _ in generated_cases()]
    return [(n, golden[n]["mode"], Item.from_dict(golden[n]["item"])) for n in order]


def _attempt_record(att: Any) -> dict[str, Any]:
    return {
        "answer": att.answer,
        "raw_text": att.raw_text,
        "parse_problem": att.parse_problem,
        "error": att.error,
        "turns": att.turns,
        "tokens_in": att.tokens_in,
        "tokens_out": att.tokens_out,
        "transcript": att.transcript,
    }


async def collect() -> dict[str, Any]:
    """Every case's requests (as the server read them) and attempt."""
    out: dict[str, Any] = {}
    async with FakeOpenAI(answer=answer) as server:
        for name, mode, item in cases():
            server.reset()
            backend = OpenAIBackend(
                OpenAIChat(server.base_url, "m", policy=ChatPolicy(max_retries=0))
            )
            agent = ChatAgent(
                name, backend, spec={}, system_prompt=SYSTEM, modules=MODULES, answer_mode=mode
            )
            try:
                if item.family == "repeated":
                    att = await play_episode(agent, item)
                else:
                    att = await agent.attempt(item)
            finally:
                await agent.aclose()
            out[name] = {
                "mode": mode,
                "item": item.to_dict(),
                "requests": [entry.body for entry in server.log],
                "attempt": _attempt_record(att),
            }
    return json.loads(json.dumps(out))  # as JSON would hold it (tuples as lists)


async def test_requests_and_transcripts_are_unchanged_with_every_module_on() -> None:
    expected = json.loads(GOLDEN.read_text())
    got = await collect()
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name]["requests"] == expected[name]["requests"], name
        assert got[name]["attempt"] == expected[name]["attempt"], name
    # the items have what the cases are for
    items = {name: item for name, _, item in cases()}
    assert items["inductive-tools"].tools and items["inductive-tools"].meta.get("system_prompt")
    assert "story" in items["story-tools"].truth and "story" not in items["no-story-tools"].truth
    # the cases exercise every kind of step: a witness log put in the prompt, and each module's
    # preliminary model turn (the witness step only where the item has no structured story)
    steps = {name: [m["content"] for m in got[name]["requests"][0]["messages"]] for name in got}
    assert "Event log (who witnessed each event):" in steps["story-tools"][-1]
    assert "numbered event log" in steps["no-story-tools"][-1]
    assert "simulate your opponent" in steps["recursive-tools"][-1]


def test_the_plan_lists_the_steps_of_the_acting_modules() -> None:
    b1, _, no_story, _, recursive, *_ = (item for _, _, item in cases())
    full = Scaffold(MODULES)
    story_plan = full.plan(b1)
    assert [type(s) for s in story_plan] == [WitnessLog, Preliminary]
    assert [type(s) for s in full.plan(no_story)] == [Preliminary, Preliminary]
    assert [type(s) for s in full.plan(recursive)] == [Preliminary]
    # a module acts only on the families that declare it
    assert Scaffold(("opponent_sim",)).plan(b1) == ()
    assert Scaffold(("perspective", "witness_log")).plan(recursive) == ()
    assert Scaffold(()).plan(b1) == ()
