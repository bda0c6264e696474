"""The command agent's protocol: the schemas, the document's examples, the adapter's checks of
every reply, and whole runs of command agents through ``mindledger run``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from harness.agent.agents import ChatAgent, CommandBackend
from harness.agent.answers import ANSWER_KINDS, parse_reply
from harness.agent.command_protocol import REPLY_SCHEMA, REQUEST_SCHEMA, read_reply, reply_problem
from harness.run.episodes import play_episode
from ledger.db import open_engine
from ledger.store import Store
from mindledger.errors import AgentError
from tests.cli import run_main
from tests.harness import command_examples as examples

EXAMPLE_AGENT = Path(__file__).resolve().parents[3] / "examples" / "command_agent.py"
REQUESTS = Draft202012Validator(REQUEST_SCHEMA)


def program(code: str) -> list[str]:
    """A command running ``code`` (after reading the request)."""
    return [sys.executable, "-c", "import sys; sys.stdin.read()\n" + code]


def writes(stdout: str) -> list[str]:
    """A command that writes ``stdout`` and exits 0."""
    return program(f"sys.stdout.write({stdout!r})")


# -- the schemas and the document --------------------------------------------------------------


@pytest.mark.parametrize("schema", [REQUEST_SCHEMA, REPLY_SCHEMA], ids=["request", "reply"])
def test_the_schemas_are_json_schemas(schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(schema)


def test_the_published_schemas_are_the_ones_the_adapter_uses() -> None:
    for path, schema in examples.SCHEMAS.items():
        assert path.read_text() == examples.schema_text(schema), (
            f"{path.name} differs: run python -m tests.harness.command_examples"
        )


async def test_the_documents_examples_are_what_the_code_sends_and_records() -> None:
    doc = examples.DOC.read_text()
    blocks = await examples.build_blocks()
    assert sorted(examples.block_names(doc)) == sorted(blocks)
    assert examples.render(doc, blocks) == doc, (
        "docs/command-agent.md differs from what the code sends: "
        "run python -m tests.harness.command_examples"
    )
    # every request shown fits the request schema; the nudge says what was wrong
    for name in examples.REQUEST_EXAMPLES:
        request = json.loads(blocks[name].removeprefix("```json\n").removesuffix("\n```"))
        assert REQUESTS.is_valid(request), name
    nudge = json.loads(blocks["request-nudge"].removeprefix("```json\n").removesuffix("\n```"))
    said = 'submit_action.action: expected an integer from 0 to 65, got the string "30"'
    assert nudge["messages"][-2] == {
        "role": "tool", "tool_call_id": "call_1", "content": f"not accepted: {said}"
    }  # fmt: skip
    assert nudge["messages"][-1]["role"] == "user" and said in nudge["messages"][-1]["content"]


def test_the_documents_reply_examples_are_read_as_it_says() -> None:
    doc = examples.DOC.read_text()
    section = doc[doc.index("## The reply") : doc.index("## How the answer is read")]
    replies = re.findall(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert len(replies) == 3
    spec = examples.nesttom_item().answer
    for text in replies:
        reply = read_reply(text.encode(), "mybot")
        parsed = parse_reply(reply.message, spec)
        assert (parsed.answer, parsed.confidence) == ("bag", 0.8), text
    first = read_reply(replies[0].encode(), "mybot")
    assert (first.model, first.tokens_in, first.tokens_out) == ("mybot-1", 812, 24)
    assert read_reply(replies[1].encode(), "mybot").finish_reason == "stop"


def test_the_document_states_the_codes_numbers() -> None:
    from harness.adapters.command import PROGRAMS_AT_ONCE
    from harness.agent.agents import CONTROL_SYSTEM_PROMPT, MAX_TURNS
    from harness.agent.scaffold import STEP_TOKENS
    from harness.config.settings import AgentConfig, Settings

    doc = " ".join(examples.DOC.read_text().split())
    for phrase in (
        f"at most **{MAX_TURNS} turns**",
        f"({PROGRAMS_AT_ONCE} when it declares none",
        f"`max_tokens: {STEP_TOKENS}`",
        f"The `timeout` setting ({Settings.timeout:g} s by default)",
        f"`max_tokens` ({AgentConfig.max_tokens} by default)",
        f"system prompt `{CONTROL_SYSTEM_PROMPT}`",
    ):
        assert phrase in doc, phrase


# -- requests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["tools", "json"])
async def test_every_answer_kind_is_sent_as_the_request_schema_says_and_answered_by_the_example(
    mode: str, tmp_path: Path
) -> None:
    assert tuple(examples.SPECS) == ANSWER_KINDS
    log = tmp_path / "requests.jsonl"
    backend = CommandBackend(
        [sys.executable, str(EXAMPLE_AGENT)], env={"EXAMPLE_AGENT_LOG": str(log)}
    )
    agent = ChatAgent("example", backend, modules=("perspective",), answer_mode=mode)
    base = examples.nesttom_item()
    for kind, spec in examples.SPECS.items():
        att = await agent.attempt(dataclasses.replace(base, id="", answer=spec))
        assert att.error is None and att.parse_problem is None and att.answer is not None, kind
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == 2 * len(examples.SPECS)  # the perspective step, then the answer
    for request in requests:
        assert REQUESTS.is_valid(request), next(REQUESTS.iter_errors(request)).message


async def test_the_example_agent_calls_an_items_own_tool_first_and_plays_repeated_games() -> None:
    agent = ChatAgent("example", CommandBackend([sys.executable, str(EXAMPLE_AGENT)]))
    att = await agent.attempt(examples.inductive_item())
    assert att.error is None and att.parse_problem is None and att.answer == 0
    assert [m["role"] for m in att.transcript] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert (
        att.transcript[3]["content"]
        == examples.inductive_item().tool_results["query_opponent_history"]
    )
    episode = await play_episode(agent, examples.episode_item())
    assert episode.error is None and episode.parse_problem is None
    assert episode.answer["moves"] == ["cooperation", "cooperation"]


def test_the_request_schema_refuses_what_the_code_never_sends() -> None:
    item = examples.nesttom_item()
    good = {
        "messages": [{"role": "user", "content": item.prompt}],
        "tools": None,
        "response_format": None,
        "temperature": 0.0,
        "max_tokens": 512,
    }
    assert REQUESTS.is_valid(good)
    from harness.agent.answers import answer_tool

    tool = answer_tool(item.answer)
    assert REQUESTS.is_valid({**good, "tools": [tool]})
    lax = json.loads(json.dumps(tool))
    lax["function"]["parameters"]["required"] = ["answer"]  # confidence not required
    for bad in (
        {**good, "extra": 1},
        {**good, "tools": [lax]},
        {**good, "tools": []},
        {**good, "messages": [{"role": "user"}]},
        {k: v for k, v in good.items() if k != "response_format"},
    ):
        assert not REQUESTS.is_valid(bad), bad


# -- replies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        ('{"content": "x", "usage": {"prompt_tokens": "a"}}',
         'usage.prompt_tokens: expected an integer, got the string "a"'),
        ('{"choices": "abc"}', 'choices: expected an array, got the string "abc"'),
        ('{"choices": []}', "choices: expected at least 1 item, got an empty array"),
        ('{"choices": ["x"]}', 'choices[0]: expected an object, got the string "x"'),
        ('{"message": {"tool_calls": ["x"]}}',
         'message.tool_calls[0]: expected an object, got the string "x"'),
        ('{"message": {"tool_calls": [{"function": {"name": "submit_answer"}}]}}',
         "message.tool_calls[0].function.arguments is missing: expected a string"),
        ('{"message": {"content": 5}}',
         "message.content: expected a string or null or an array, got the number 5"),
        ('{"message": {"role": "user", "content": "hi"}}',
         'message.role: expected "assistant", got the string "user"'),
        ("[1]", "the reply: expected an object, got an array [1]"),
        ('{"reply": "bag"}', 'the reply has none of the keys "message", "choices" and "content"'),
    ],
)  # fmt: skip
async def test_a_reply_that_breaks_the_protocol_is_a_malformed_error_naming_the_field(
    stdout: str, said: str
) -> None:
    """Each of these crashed the run (ValueError, AttributeError) or was read as an empty
    reply before the adapter checked replies against the schema."""
    agent = ChatAgent("bot", CommandBackend(writes(stdout)))
    att = await agent.attempt(examples.nesttom_item())
    assert att.error is not None and att.error.startswith("malformed: "), att.error
    assert said in att.error
    assert att.answer is None and att.turns == 0


@pytest.mark.parametrize(
    ("stdout", "said"),
    [
        (b"", "wrote nothing on stdout"),
        (b"  \n", "wrote nothing on stdout"),
        (b"hello, not json", "wrote no JSON reply (not valid JSON: Expecting value"),
        (b'{"content": "a"}\n{"content": "b"}', "write only the reply on stdout"),
        (b'\xff{"content": "a"}', "not valid UTF-8"),
        (b'{"content": NaN}', "NaN"),
    ],
)
def test_stdout_that_is_not_one_json_object_is_malformed(stdout: bytes, said: str) -> None:
    with pytest.raises(AgentError) as info:
        read_reply(stdout, "bot.py")
    assert info.value.kind == "malformed" and said in str(info.value)
    assert str(info.value).startswith("bot.py ")


def test_the_three_reply_forms_and_what_a_turn_records() -> None:
    message = {"role": "assistant", "content": "ANSWER: bag", "reasoning": "kept"}
    as_message = read_reply(json.dumps({"message": message, "model": "m"}).encode(), "p")
    assert as_message.message == message and as_message.model == "m"
    completion = {
        "choices": [{"message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3},
    }
    as_completion = read_reply(json.dumps(completion).encode(), "p")
    assert (as_completion.message, as_completion.finish_reason) == (message, "stop")
    assert (as_completion.tokens_in, as_completion.tokens_out) == (7, 3)
    as_content = read_reply(b'{"content": "ANSWER: bag", "usage": null}', "p")
    assert as_content.message == {"role": "assistant", "content": "ANSWER: bag"}
    assert (as_content.tokens_in, as_content.tokens_out) == (0, 0)
    # message first, then choices, then content
    both = {"message": message, "content": "ignored", "choices": completion["choices"]}
    assert read_reply(json.dumps(both).encode(), "p").message == message


def test_reply_problem_is_none_exactly_for_valid_replies() -> None:
    assert reply_problem({"content": "x"}) is None
    assert reply_problem({"message": {}}) is None  # valid, and read as an empty reply
    assert reply_problem({"content": None}) == "content: expected a string, got null"


# -- running the program -----------------------------------------------------------------------


async def test_a_failing_program_is_an_error_with_its_exit_and_last_stderr_line() -> None:
    item = examples.nesttom_item()
    failing = program("sys.stderr.write('loading\\nKeyError: tools\\n'); sys.exit(3)")
    att = await ChatAgent("bot", CommandBackend(failing)).attempt(item)
    assert att.error == (
        f"server_error: {sys.executable} exited with code 3; its last line on stderr: "
        "KeyError: tools"
    )
    killed = program("import os, signal; os.kill(os.getpid(), signal.SIGTERM)")
    att = await ChatAgent("bot", CommandBackend(killed)).attempt(item)
    assert att.error == f"server_error: {sys.executable} was killed by SIGTERM; stderr was empty"
    att = await ChatAgent("bot", CommandBackend(["/nonexistent/bot"])).attempt(item)
    assert att.error == "connection: cannot start /nonexistent/bot: No such file or directory"


async def test_a_program_over_its_time_is_stopped_and_the_trial_says_so() -> None:
    slow = program("import time; time.sleep(30)")
    att = await ChatAgent("bot", CommandBackend(slow, timeout=0.5)).attempt(examples.nesttom_item())
    assert att.error == f"timeout: {sys.executable} did not reply within 0.5 s and was stopped"


async def test_a_declared_concurrency_is_the_number_of_programs_at_once(tmp_path: Path) -> None:
    """The backend let at most 4 programs run whatever the agent declared."""
    from harness.adapters.command import COMMAND
    from harness.adapters.kinds import BuildContext
    from harness.config.settings import AgentConfig, load_settings

    # each run waits (up to 10 s) until 6 runs have started, then says how many it saw
    wait = (
        "import os, time, json\n"
        f"d = {str(tmp_path / 'started')!r}\n"
        "open(os.path.join(d, str(os.getpid())), 'w').close()\n"
        "end = time.monotonic() + 10\n"
        "while len(os.listdir(d)) < 6 and time.monotonic() < end: time.sleep(0.02)\n"
        "print(json.dumps({'content': 'ANSWER: ' + str(len(os.listdir(d)))}))\n"
    )
    settings = load_settings(None, env={}, flags={"home": str(tmp_path / "home")}, cwd=tmp_path)
    config = AgentConfig("bot", adapter="command", command=tuple(program(wait)), concurrency=6)
    agent = COMMAND.build(config, BuildContext(settings, seed=1))
    item = dataclasses.replace(
        examples.nesttom_item(), id="", answer={"kind": "integer", "min": 0, "max": 99}
    )
    (tmp_path / "home").mkdir()
    (tmp_path / "started").mkdir()
    seen = await asyncio.gather(*(agent.attempt(item) for _ in range(6)))
    assert [a.answer for a in seen] == [6] * 6


# -- whole runs through `mindledger run` -------------------------------------------------------


def _run(
    capsys: pytest.CaptureFixture[str],
    home: Path,
    command: list[str],
    *flags: str,
    modules: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> list[Any]:
    """``mindledger run --suite quick`` with a command agent ``bot``: its trials. (Whether a
    run with failed trials exits 0 is the run command's business, not checked here.)"""
    (home.parent / "work" / "mindledger.toml").write_text(
        '[agents.bot]\nadapter = "command"\n'
        f"command = {json.dumps(command)}\nmodules = {json.dumps(list(modules))}\n"
        + "".join(f"env.{k} = {json.dumps(v)}\n" for k, v in (env or {}).items())
    )
    _, _, err = run_main(capsys, "run", "--suite", "quick", "--agent", "bot", "--seed", "11",
                         *flags)  # fmt: skip
    assert "Traceback" not in err, err
    store = Store(open_engine(f"sqlite:///{home / 'mindledger.db'}"))
    try:
        (run,) = store.list_runs()
        assert store.get_run(run.id).status == "complete"
        return list(store.trials(run.id))
    finally:
        store.engine.dispose()


def _outcome(trial: Any) -> str:
    if trial.status != "ok":
        return trial.status
    return "unparsed" if json.loads(trial.answer_json or "null") is None else "answered"


@pytest.mark.slow
def test_the_example_agent_runs_the_quick_suite_with_no_error_and_nothing_unparsed(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = isolated_home.parent / "requests.jsonl"
    trials = _run(
        capsys, isolated_home, [sys.executable, str(EXAMPLE_AGENT)],
        modules=("perspective", "opponent_sim"), env={"EXAMPLE_AGENT_LOG": str(log)},
    )  # fmt: skip
    assert {t.agent for t in trials} == {"bot", "bot-control"}
    assert len(trials) == 2 * 26
    problems = [(t.agent, t.item_id, t.error, t.score_json) for t in trials
                if _outcome(t) != "answered"]  # fmt: skip
    assert problems == []
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(r["tools"] is None for r in requests)  # the modules' steps were taken
    assert {r["tools"][0]["function"]["name"] for r in requests if r["tools"]} == {
        "submit_answer", "submit_action"
    }  # fmt: skip
    invalid = [r for r in requests if not REQUESTS.is_valid(r)]
    assert invalid == []


@pytest.mark.slow
def test_a_garbage_printing_agent_has_every_trial_a_malformed_error(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trials = _run(capsys, isolated_home, program("print('hello, not json')"), "--no-control")
    assert len(trials) == 26 and {t.status for t in trials} == {"api_error"}
    assert {t.error for t in trials} == {
        f"malformed: {sys.executable} wrote no JSON reply (not valid JSON: Expecting value: "
        "line 1 column 1 (char 0)); its stdout began 'hello, not json'"
    }
    assert all(t.correct is None for t in trials)


ZEROS = """
import json, sys
request = json.load(sys.stdin)
fn = request["tools"][0]["function"]
key = [k for k in fn["parameters"]["required"] if k != "confidence"][0]
args = json.dumps({key: "0", "confidence": 0.5})
print(json.dumps({"message": {"tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": fn["name"], "arguments": args}}]}}))
"""


@pytest.mark.slow
def test_an_agent_sending_strings_for_integers_is_unparsed_with_the_reason(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A string "0" for the games' integer action was scored as the action 0."""
    trials = _run(capsys, isolated_home, [sys.executable, "-c", ZEROS], "--no-control")
    assert len(trials) == 26 and {_outcome(t) for t in trials} == {"unparsed"}
    problems = {}
    for t in trials:
        details = json.loads(t.score_json)["details"]
        problems[details["parse_problem"]] = t.turns
        assert t.correct is False and t.turns == 2  # the answer turn and the nudge
    games = {p for p in problems if p.startswith("submit_action.")}
    assert games and all(
        re.fullmatch(r'submit_action\.action: expected an integer from \d+ to \d+, '
                     r'got the string "0"', p) for p in games
    )  # fmt: skip
    assert 'submit_answer.answer: expected the string "yes" or "no", got the string "0"' in problems
