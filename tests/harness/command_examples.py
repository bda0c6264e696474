"""The generated parts of ``docs/command-agent.md`` and its two schema files, made by the code
they describe.

Every request in the document is what a real :class:`~harness.agent.agents.ChatAgent` over the real
:class:`~harness.agent.agents.CommandBackend` wrote on a program's stdin, from real items; every
outcome in its table of bad replies is what the trial recorded when a program wrote that reply.
The program is :data:`SCRIPTED`: it logs each request and writes the next of the replies it was
given. ``tests/harness/agent/test_command_protocol.py`` fails while the document or the schema files
differ from what this module makes; to rewrite them::

    python -m tests.harness.command_examples
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import games
from games.repeated import make_episode_item
from harness.agent.agents import Attempt, ChatAgent, CommandBackend
from harness.agent.answers import ANSWER_KINDS, answer_tool
from harness.agent.command_protocol import REPLY_SCHEMA, REQUEST_SCHEMA
from harness.run.episodes import play_episode
from harness.run.suites import get_suite
from mindledger import family as registry
from mindledger.items import Item

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "command-agent.md"
SCHEMAS = {
    ROOT / "docs" / "command-agent.request.schema.json": REQUEST_SCHEMA,
    ROOT / "docs" / "command-agent.reply.schema.json": REPLY_SCHEMA,
}
PROGRAM = "python3"
"""How the scripted program is run (its name appears in the errors the document shows)."""
SYSTEM = "You are a careful reasoner."

SCRIPTED = r"""
import json, os, sys
request = sys.stdin.buffer.read()
with open(os.environ["SCRIPT_LOG"], "ab") as f:
    f.write(request + b"\n")
with open(os.environ["SCRIPT_LOG"], "rb") as f:
    n = sum(1 for _ in f)
with open(os.environ["SCRIPT_REPLIES"]) as f:
    replies = json.load(f)
reply = replies[min(n, len(replies)) - 1]
sys.stderr.write(reply.get("stderr", ""))
sys.stdout.write(reply.get("stdout", ""))
sys.exit(reply.get("exit", 0))
"""


def schema_text(schema: Mapping[str, Any]) -> str:
    """A schema as its file holds it."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


# -- the items ---------------------------------------------------------------------------------


def nesttom_item() -> Item:
    """The quick suite's R1 false-belief question (seed 1)."""
    return next(
        it
        for it in get_suite("quick").build(1)
        if it.family == "nesttom"
        and (it.meta["depth"], it.meta["belief"], it.meta["question"]) == ("R1", "false", "belief")
    )


def game_item() -> Item:
    """The quick suite's shortest level-k game (seed 1): ``submit_action``, an integer."""
    return min(
        (it for it in get_suite("quick").build(1) if it.family == "games"),
        key=lambda it: len(it.prompt),
    )


def inductive_item() -> Item:
    """A level-k game in the inductive condition: its own tool, ``query_opponent_history``."""
    return games.generate_items(4, 5, games=("all-pay",), conditions=("inductive",))[0]


def episode_item() -> Item:
    """A two-round repeated Prisoner's Dilemma."""
    return make_episode_item(1, {"game": "pd", "opponent": "always-cooperate", "rounds": 2})


def sample_items() -> list[Item]:
    """One item of every kind the built-in suites hold (for the table of families)."""
    quick = get_suite("quick").build(1)
    return [
        *quick,
        inductive_item(),
        *games.generate_abc_items(1, 3),
        episode_item(),
    ]


# -- replies -----------------------------------------------------------------------------------


def assistant_call(name: str, args: Any, call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message calling ``name`` (``args`` as a JSON string unless it is one)."""
    arguments = args if isinstance(args, str) else json.dumps(args)
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def call(name: str, args: Any, call_id: str = "call_1") -> dict[str, Any]:
    """A reply calling ``name``."""
    return {"message": assistant_call(name, args, call_id)}


def out(reply: Any) -> dict[str, Any]:
    """A scripted run that writes ``reply`` (JSON-encoded unless it is text) and exits 0."""
    return {"stdout": reply if isinstance(reply, str) else json.dumps(reply)}


NOTE = out({"content": "Hana left before the apple moved; she saw it in the bag."})


@dataclass(frozen=True)
class Case:
    """An agent on an item with scripted replies."""

    item: Item
    replies: Sequence[Mapping[str, Any]]
    modules: tuple[str, ...] = ()
    mode: str = "tools"


@dataclass(frozen=True)
class Outcome:
    """What a case sent and what its trial recorded."""

    requests: list[dict[str, Any]]
    attempt: Attempt


async def run_case(case: Case, work: Path, timeout: float = 60.0) -> Outcome:
    """Run ``case`` through the real agent and backend; every request the program read."""
    work.mkdir(parents=True)
    script = work / "scripted.py"
    script.write_text(SCRIPTED)
    log = work / "requests.jsonl"
    (work / "replies.json").write_text(json.dumps(list(case.replies)))
    env = {"SCRIPT_LOG": str(log), "SCRIPT_REPLIES": str(work / "replies.json")}
    backend = CommandBackend([PROGRAM, str(script)], timeout=timeout, env=env)
    agent = ChatAgent(
        "example", backend, system_prompt=SYSTEM, modules=case.modules, answer_mode=case.mode
    )
    if case.item.family == "repeated":
        att = await play_episode(agent, case.item)
    else:
        att = await agent.attempt(case.item)
    lines = log.read_bytes().splitlines() if log.exists() else []
    return Outcome([json.loads(line) for line in lines], att)


# -- the examples of requests ------------------------------------------------------------------


def request_cases() -> dict[str, Case]:
    """The cases whose requests the document shows."""
    nt, game, ind, ep = nesttom_item(), game_item(), inductive_item(), episode_item()
    answer_nt = out(call("submit_answer", {"answer": "bag", "confidence": 0.8}))
    answer_game = out(call("submit_action", {"action": 30, "confidence": 0.6}))
    history = out(call("query_opponent_history", {}))
    wrong = out(call("submit_action", {"action": "30", "confidence": 0.6}))
    json_answer = out({"content": '{"answer": "bag", "confidence": 0.8}'})
    move = out(call("submit_answer", {"answer": "cooperation", "confidence": 0.7}))
    return {
        "nesttom": Case(nt, [answer_nt]),
        "game": Case(game, [answer_game]),
        "perspective": Case(nt, [NOTE, answer_nt], modules=("perspective",)),
        "opponent-sim": Case(game, [NOTE, answer_game], modules=("opponent_sim",)),
        "item-tools": Case(ind, [history, answer_game]),
        "nudge": Case(game, [wrong, answer_game]),
        "json": Case(nt, [json_answer], mode="json"),
        "repeated": Case(ep, [move]),
    }


REQUEST_EXAMPLES = {
    "request-nesttom": ("nesttom", 0),
    "request-game": ("game", 0),
    "request-perspective": ("perspective", 0),
    "request-perspective-answer": ("perspective", 1),
    "request-opponent-sim": ("opponent-sim", 0),
    "request-item-tools": ("item-tools", 0),
    "request-item-tools-result": ("item-tools", 1),
    "request-nudge": ("nudge", 1),
    "request-json": ("json", 0),
    "request-repeated": ("repeated", 0),
}
"""Each request example of the document: its case and which of the case's requests."""


# -- replies that go wrong ---------------------------------------------------------------------

BAD_REPLIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("text that is not JSON", "nesttom", out("hello, not json")),
    ("an empty stdout", "nesttom", out("")),
    (
        "a log line before the reply",
        "nesttom",
        out('{"log": "thinking"}\n{"content": "ANSWER: bag\\nCONFIDENCE: 0.8"}'),
    ),
    ("none of message, choices, content", "nesttom", out({"answer": "bag", "confidence": 0.8})),
    (
        "arguments as an object, not a string",
        "nesttom",
        out(
            {
                "message": {
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "function": {
                                "name": "submit_answer",
                                "arguments": {"answer": "bag", "confidence": 0.8},
                            },
                        }
                    ]
                }
            }
        ),
    ),
    (
        "usage tokens as strings",
        "nesttom",
        out({"content": "ANSWER: bag", "usage": {"prompt_tokens": "812"}}),
    ),
    (
        "a non-zero exit",
        "nesttom",
        {
            "stdout": "",
            "stderr": "Traceback (most recent call last):\nKeyError: 'tools'\n",
            "exit": 1,
        },
    ),
    (
        "an integer as a string",
        "game",
        out(call("submit_action", {"action": "30", "confidence": 0.6})),
    ),
    (
        "a number for a choice",
        "nesttom",
        out(call("submit_answer", {"answer": 0, "confidence": 0.8})),
    ),
    (
        "a choice that is not one",
        "nesttom",
        out(call("submit_answer", {"answer": "attic", "confidence": 0.8})),
    ),
    (
        "a confidence in percent",
        "nesttom",
        out(call("submit_answer", {"answer": "bag", "confidence": 80})),
    ),
    ("no confidence", "nesttom", out(call("submit_answer", {"answer": "bag"}))),
    (
        "the wrong key for submit_action",
        "game",
        out(call("submit_action", {"answer": 30, "confidence": 0.6})),
    ),
    (
        "arguments that are not JSON",
        "nesttom",
        out(call("submit_answer", "{answer: bag}")),
    ),
    (
        "a JSON answer with a string number",
        "game",
        out({"content": '{"action": "30", "confidence": 0.6}'}),
    ),
    ("the answer tool never called", "nesttom", out({"content": "I am not sure."})),
    (
        "free text with an ANSWER line",
        "nesttom",
        out({"content": "She left.\nANSWER: the bag\nCONFIDENCE: 80%"}),
    ),
    (
        "a JSON answer object in the content",
        "game",
        out({"content": '{"action": 30, "confidence": 0.6}'}),
    ),
)
"""Replies (each sent on every turn of its trial) and the item they answer: the table of what
each becomes."""


def reply_text(reply: Mapping[str, Any]) -> str:
    """A scripted run as the table shows it: its stdout, or the call it makes, or its exit."""
    if reply.get("exit"):
        last = reply.get("stderr", "").strip().splitlines()[-1:]
        return f"exit code {reply['exit']}, stderr ending {_code(last[0] if last else '')}"
    stdout = reply.get("stdout") or ""
    try:
        calls = json.loads(stdout)["message"]["tool_calls"]
        fn = calls[0]["function"]
    except (ValueError, KeyError, TypeError, IndexError):
        return _code(stdout.replace("\n", "⏎")) if stdout else "nothing"
    args = fn["arguments"]
    if isinstance(args, str):
        return f"a call of `{fn['name']}` with arguments {_code(args)}"
    return f"a call of `{fn['name']}` with arguments as an object {_code(json.dumps(args))}"


def outcome_text(att: Attempt) -> str:
    """What the trial recorded, as the document shows it."""
    if att.error:
        return f"error: {att.error}"
    if att.answer is None:
        return f"unparsed: {att.parse_problem}"
    return f"answer {json.dumps(att.answer)}, confidence {att.confidence}"


# -- the document ------------------------------------------------------------------------------


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _json_block(value: Any) -> str:
    return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```"


def families_table(items: Sequence[Item]) -> str:
    """Each kind of item: family, generator, answer kind, answer tool, own tools, scaffold steps."""
    from harness.agent.agents import answer_tool_name

    rows: dict[tuple[str, ...], None] = {}
    for it in items:
        fam = registry.get(it.family)
        own = ", ".join(t["function"]["name"] for t in it.tools) or "—"
        steps = ", ".join(fam.scaffold_modules) or "—"
        played = "one chat" if fam.plays == "single" else "a fresh chat per round"
        rows[
            (
                it.family,
                it.generator,
                str(it.answer["kind"]),
                answer_tool_name(it),
                own,
                steps,
                played,
            )
        ] = None
    head = "| family | generator | answer kind | answer tool | item's own tools | modules with a step | played as |"
    lines = [head, "|" + " --- |" * 7]
    lines += [
        "| " + " | ".join(_code(c) if c != "—" and i < 5 else c for i, c in enumerate(r)) + " |"
        for r in rows
    ]
    return "\n".join(lines)


SPECS: dict[str, dict[str, Any]] = {
    "choice": {"kind": "choice", "choices": ["bag", "tin"]},
    "yesno": {"kind": "yesno"},
    "integer": {"kind": "integer", "min": 0, "max": 65},
    "open": {"kind": "open"},
    "distribution": {"kind": "distribution", "choices": ["0-7", "8-15"]},
}
assert tuple(SPECS) == ANSWER_KINDS


def kinds_table() -> str:
    """The answer's schema for each answer kind, from :func:`harness.agent.answers.answer_tool`."""
    lines = [
        "| answer kind | the answer's schema (`parameters.properties.answer`) |",
        "| --- | --- |",
    ]
    for kind, spec in SPECS.items():
        schema = answer_tool(spec)["function"]["parameters"]["properties"]["answer"]
        lines.append(f"| `{kind}` | `{json.dumps(schema, ensure_ascii=False)}` |")
    return "\n".join(lines)


async def build_blocks() -> dict[str, str]:
    """Every generated block of the document, by name."""
    blocks: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        slots = asyncio.Semaphore(4)  # programs at once, whatever the number of cases

        async def run(case: Case, name: str) -> Outcome:
            async with slots:
                return await run_case(case, work / name)

        cases = request_cases()
        ran = dict(
            zip(cases, await asyncio.gather(*(run(c, n) for n, c in cases.items())), strict=True)
        )
        for name, (case, index) in REQUEST_EXAMPLES.items():
            blocks[name] = _json_block(ran[case].requests[index])
        items = {"nesttom": nesttom_item(), "game": game_item()}
        bad = await asyncio.gather(
            *(
                run(Case(items[which], [reply]), f"bad-{i}")
                for i, (_, which, reply) in enumerate(BAD_REPLIES)
            )
        )
    rows = ["| the program wrote | the trial recorded |", "| --- | --- |"]
    for (what, _, reply), outcome in zip(BAD_REPLIES, bad, strict=True):
        recorded = _code(outcome_text(outcome.attempt)).replace("|", "&#124;")
        rows.append(f"| {what}: {reply_text(reply)} | {recorded} |")
    blocks["bad-replies"] = "\n".join(rows)
    blocks["families"] = families_table(sample_items())
    blocks["kinds"] = kinds_table()
    return blocks


_BLOCK = re.compile(
    r"(<!-- generated: ([a-z-]+) -->\n)((?:(?!<!-- generated:).)*?)(<!-- end -->)", re.DOTALL
)


def render(doc: str, blocks: Mapping[str, str]) -> str:
    """``doc`` with each generated block's content replaced by ``blocks[name]``; KeyError for
    a block this module does not make."""
    return _BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)] + "\n" + m.group(4), doc)


def block_names(doc: str) -> list[str]:
    """The names of the generated blocks in ``doc``, in order."""
    return [m.group(2) for m in _BLOCK.finditer(doc)]


def main() -> None:
    blocks = asyncio.run(build_blocks())
    DOC.write_text(render(DOC.read_text(), blocks))
    for path, schema in SCHEMAS.items():
        path.write_text(schema_text(schema))
    missing = sorted(set(blocks) - set(block_names(DOC.read_text())))
    if missing:
        sys.exit(f"blocks not placed in {DOC}: {', '.join(missing)}")


if __name__ == "__main__":
    main()
