"""The cross-model prediction matrix against FakeOpenAI agents whose behaviour is known: the
numbers against hand-computed scores, every commit before the target's first query, the ledger
verifying afterwards, and an exact predictor scoring best."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.adapters import ChatPolicy, OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent, ReferenceAgent
from harness.matrix.runs import (
    NO_ANSWER,
    MatrixOptions,
    make_item,
    make_items,
    prediction_item,
    run_matrix,
)
from harness.testing import FakeOpenAI
from ledger import open_ledger
from ledger.scoring import EPSILON
from mindledger.errors import UserError
from mindledger.items import Item

CHOICES = ["w", "x", "y", "z"]
# what each agent answers, always
ANSWERS = {"first": "w", "last": "z", "oracle": "y"}
# "first" predicts by projection-ish habit; "last" and "oracle" predict exactly
HABIT = {"w": 0.7, "x": 0.1, "y": 0.1, "z": 0.1}


def _db(tmp_path: Path) -> str:
    """The database the CLI uses for the data directory ``tmp_path / "home"``."""
    return f"sqlite:///{tmp_path / 'home' / 'mindledger.db'}"


def items(n: int = 3) -> list[Item]:
    return [
        Item(
            family="matrix",
            generator="test",
            version="1",
            seed=i,
            params={},
            prompt=f"Question {i}: pick one of w, x, y, z.",
            answer={"kind": "choice", "choices": CHOICES},
            truth={},
        )
        for i in range(n)
    ]


class Tick:
    """A shared clock: the ledger's entry times and the fake servers' query times."""

    def __init__(self) -> None:
        self.n = itertools.count(1)
        self.base = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)

    def __call__(self) -> str:
        return (self.base + dt.timedelta(microseconds=next(self.n))).isoformat(
            timespec="microseconds"
        )


def answer_schema(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("tools"):
        params = body["tools"][0]["function"]["parameters"]
    else:
        params = body["response_format"]["json_schema"]["schema"]
    schema: dict[str, Any] = params["properties"]["answer"]
    return schema


def make_answer(name: str, tick: Tick, queries: list[tuple[str, str, str]]) -> Any:
    def answer(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        schema = answer_schema(body)
        if schema["type"] == "object":  # a prediction
            choices = list(schema["properties"])
            if "fresh copy of yourself" in prompt:
                target = name
            else:
                target = re.search(r"another AI model called (\S+)", prompt).group(1)  # type: ignore[union-attr]
            if name == "first":
                dist = HABIT
            else:  # an exact predictor
                dist = {c: float(c == ANSWERS.get(target, "w")) for c in choices}
            return json.dumps({"answer": dist, "confidence": 0.9})
        # a question: the own answer or a target sample (both are the same request)
        queries.append((name, prompt.split("\n")[0], tick()))
        return ANSWERS[name]

    return answer


async def run_three(tmp_path: Path, n_items: int = 3, samples: int = 3) -> tuple[Any, ...]:
    tick = Tick()
    queries: list[tuple[str, str, str]] = []
    led = open_ledger(tmp_path / "home", _db(tmp_path), clock=tick)
    servers = {n: FakeOpenAI(answer=make_answer(n, tick, queries)) for n in ANSWERS}
    agents: dict[str, ChatAgent] = {}
    try:
        for name, server in servers.items():
            await server.start()
            policy = ChatPolicy(timeout=5.0, max_retries=0)
            backend = OpenAIBackend(OpenAIChat(server.base_url, "m", policy=policy))
            mode = "json" if name == "oracle" else "tools"
            agents[name] = ChatAgent(name, backend, spec={}, answer_mode=mode)
        result = await run_matrix(
            agents, items(n_items), led, options=MatrixOptions(samples=samples)
        )
    finally:
        for a in agents.values():
            await a.aclose()
        for server in servers.values():
            await server.stop()
    return result, led, queries


def cell(result: dict[str, Any], p: str, t: str) -> dict[str, Any]:
    return next(c for c in result["cells"] if c["predictor"] == p and c["target"] == t)


async def test_matrix_numbers_match_hand_computation(tmp_path: Path) -> None:
    result, led, _ = await run_three(tmp_path)
    assert result["agents"] == ["first", "last", "oracle"]
    assert len(result["cells"]) == 9
    for c in result["cells"]:
        assert c["n"] == 3 and c["penalised"] == 0
        assert c["predictor_errors"] == c["unparsed"] == c["unscored"] == c["rejected"] == 0
    # "first" predicts HABIT for everyone: q(w)=0.7, q(x)=q(y)=q(z)=0.1
    sum_sq = 0.7**2 + 3 * 0.1**2
    ff = cell(result, "first", "first")
    assert ff["log_score"]["value"] == pytest.approx(math.log(0.7))
    assert ff["brier"]["value"] == pytest.approx(sum_sq - 2 * 0.7 + 1)
    assert ff["top1_accuracy"]["value"] == 1.0
    # its own answer w is the projection baseline, a resample of itself: S of a self cell is
    # not estimable (and here the ceiling is not above the base either)
    assert ff["skill"]["value"] is None
    assert ff["skill"]["reason"].startswith("not estimable in a self cell")
    assert ff["unreadable"] == {"target_answers": 0, "target_samples": 9, "predictions": 0,
                                "predictions_asked": 3}
    fl = cell(result, "first", "last")
    assert fl["log_score"]["value"] == pytest.approx(math.log(0.1))
    assert fl["brier"]["value"] == pytest.approx(sum_sq - 2 * 0.1 + 1)
    assert fl["top1_accuracy"]["value"] == 0.0
    # acc 0, base 0 (own answer w ≠ z; population modal of first+oracle is w or y ≠ z), ceiling 1
    assert fl["skill"]["value"] == pytest.approx(0.0)
    # an exact predictor puts 1 on the answer and 0 elsewhere: the ε-floor costs ln(1 + 3ε)
    exact_log = -math.log(1 + 3 * EPSILON)
    for p, t in (("oracle", "last"), ("oracle", "first"), ("last", "oracle"), ("last", "last")):
        c = cell(result, p, t)
        assert c["log_score"]["value"] == pytest.approx(exact_log)
        assert c["brier"]["value"] == pytest.approx(0.0)
        assert c["top1_accuracy"]["value"] == 1.0
    # oracle → last: acc 1, projection y ≠ z and population mode (w/y tie → w) ≠ z, ceiling 1
    ol = cell(result, "oracle", "last")
    assert ol["skill"]["value"] == pytest.approx(1.0)
    assert ol["skill"]["ceiling"]["value"] == 1.0
    assert ol["skill"]["population_baseline"]["value"] == 0.0
    # self-advantage for "last": own exact vs mean of first (ln .1) and oracle (exact)
    adv = result["self_advantage"]["last"]["log_score"]
    assert adv["value"] == pytest.approx(exact_log - (math.log(0.1) + exact_log) / 2)
    assert result["self_advantage"]["last"]["brier"]["value"] == pytest.approx(
        0.0 - (sum_sq - 0.2 + 1) / 2
    )
    # self-advantage for "first": first predicting itself (ln .7) vs two exact predictors
    assert result["self_advantage"]["first"]["log_score"]["value"] == pytest.approx(
        math.log(0.7) - exact_log
    )
    # skill undefined for first → first, so its self-advantage in S says why
    assert result["self_advantage"]["first"]["skill"]["value"] is None
    assert result["self_advantage"]["first"]["skill"]["reason"].startswith("not estimable in a self cell")
    # the ledger's own summary agrees with the matrix
    summary = led.summary(predictor="first", target="last")
    assert summary["log_score"]["value"] == pytest.approx(math.log(0.1))
    assert result["items"][0]["answers"] == {
        "first": ["w"] * 3,
        "last": ["z"] * 3,
        "oracle": ["y"] * 3,
    }
    assert result["items"][0]["distinct_modes"] == 3
    led.close()
    led.engine.dispose()


async def test_every_prediction_is_committed_before_the_target_is_asked(tmp_path: Path) -> None:
    result, led, queries = await run_three(tmp_path, n_items=2, samples=2)
    entries = led.entries()
    assert led.verify() == []
    commits = [e for e in entries if e.kind == "commit"]
    assert len(commits) == 2 * 9  # every pair on every item
    prompts = {it.id: it.prompt for it in items(2)}
    # each agent is asked each item 1 (own answer) + 2 (samples) times
    assert len(queries) == 3 * 2 * 3
    for e in commits:
        payload = e.payload
        first_line = prompts[payload["item"]].split("\n")[0]
        asked = [t for name, line, t in queries if name == payload["target"] and line == first_line]
        assert asked
        # a target's answers to an item all come after every commit on that item (the own
        # answers are asked of the predictors first, before any commit, which is allowed)
        samples_after = sorted(asked)[-2:]
        assert e.time < samples_after[0], (payload["predictor"], payload["target"])
    # every observe entry follows the commit of its prediction, and reveals come last
    seq_of_commit = {e.subject: e.seq for e in commits}
    for e in entries:
        if e.kind in ("observe", "reveal"):
            assert e.seq > seq_of_commit[e.subject]
    reveals = [e for e in entries if e.kind == "reveal"]
    assert len(reveals) == 18
    assert all(
        len([o for o in entries if o.kind == "observe" and o.subject == r.subject]) == 2
        for r in reveals
    )
    assert result["cells"][0]["n"] == 2
    led.close()
    led.engine.dispose()


async def test_the_exact_predictor_scores_best_in_every_column(tmp_path: Path) -> None:
    result, led, _ = await run_three(tmp_path, n_items=2, samples=2)
    for t in ANSWERS:
        col = [cell(result, p, t) for p in ANSWERS]
        best_log = max(c["log_score"]["value"] for c in col)
        best_brier = min(c["brier"]["value"] for c in col)
        best_top1 = max(c["top1_accuracy"]["value"] for c in col)
        o = cell(result, "oracle", t)
        assert o["log_score"]["value"] == best_log
        assert o["brier"]["value"] == best_brier
        assert o["top1_accuracy"]["value"] == best_top1 == 1.0
        assert (
            o["log_score"]["value"] > cell(result, "first", t)["log_score"]["value"] or t == "first"
        )
    led.close()
    led.engine.dispose()


async def test_failures_are_counted_not_hidden(tmp_path: Path) -> None:
    """A predictor whose prediction does not parse gets the penalty; a target whose reply does
    not parse is recorded as giving no answer; an erroring target leaves predictions unscored."""
    tick = Tick()
    led = open_ledger(tmp_path / "home", _db(tmp_path), clock=tick)

    def garbled(body: dict[str, Any]) -> str:
        return "I would rather not say."

    good = FakeOpenAI(answer=make_answer("oracle", tick, []))
    bad = FakeOpenAI(answer=garbled)
    await good.start()
    await bad.start()
    dead = ChatAgent(
        "dead",
        OpenAIBackend(
            OpenAIChat("http://127.0.0.1:1/v1", "m", policy=ChatPolicy(timeout=1.0, max_retries=0))
        ),
        spec={},
        answer_mode="tools",
    )
    agents = {
        "oracle": ChatAgent(
            "oracle",
            OpenAIBackend(OpenAIChat(good.base_url, "m", policy=ChatPolicy(max_retries=0))),
            answer_mode="json",
        ),
        "mute": ChatAgent(
            "mute",
            OpenAIBackend(OpenAIChat(bad.base_url, "m", policy=ChatPolicy(max_retries=0))),
            answer_mode="tools",
        ),
        "dead": dead,
    }
    try:
        result = await run_matrix(agents, items(1), led, options=MatrixOptions(samples=2))
    finally:
        for a in agents.values():
            await a.aclose()
        await good.stop()
        await bad.stop()
    mm = cell(result, "mute", "oracle")
    assert mm["unparsed"] == 1 and mm["n"] == 1 and mm["penalised"] == 1
    # its one prediction is unreadable: the cell measures the parser, not a model of oracle
    why = "1 of 1 predictions of mute unreadable"
    assert mm["unreadable"]["reason"] == why and mm["unreadable"]["predictions"] == 1
    assert all(mm[m]["value"] is None and mm[m]["status"] == "not_estimable"
               and mm[m]["reason"] == why for m in ("log_score", "brier", "top1_accuracy", "skill"))
    # mute's answers are all unreadable: its column is not estimable
    assert cell(result, "oracle", "mute")["unreadable"]["reason"] == "2 of 2 answers of mute unreadable"
    assert result["items"][0]["answers"]["mute"] == [NO_ANSWER, NO_ANSWER]
    assert result["target_errors"]["dead"] == 2
    assert cell(result, "oracle", "dead")["unscored"] == 1
    assert cell(result, "dead", "oracle")["predictor_errors"] == 1
    assert cell(result, "dead", "oracle")["n"] == 0
    assert led.verify() == []
    led.close()
    led.engine.dispose()


async def test_reference_random_and_items(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    bank = make_items(3, 6)
    assert len({i.id for i in bank}) == 6
    assert all(i.family == "matrix" and 3 <= len(i.answer["choices"]) <= 5 for i in bank)
    assert make_item(3, bank[2].params).to_dict() == bank[2].to_dict()  # regenerable
    pi = prediction_item(bank[0], "a", "b", 3)
    assert "another AI model called b" in pi.prompt and pi.answer["kind"] == "distribution"
    assert "fresh copy of yourself" in prediction_item(bank[0], "a", "a", 3).prompt
    result = await run_matrix(
        {"r": ReferenceAgent("r", "random", seed=1)}, bank, led, options=MatrixOptions(samples=4)
    )
    c = result["cells"][0]
    k = [len(i.answer["choices"]) for i in bank]
    # a uniform prediction: log score −ln k, Brier 1 − 1/k on every item
    assert c["log_score"]["value"] == pytest.approx(sum(-math.log(n) for n in k) / 6)
    assert c["brier"]["value"] == pytest.approx(sum(1 - 1 / n for n in k) / 6)
    assert (
        result["self_advantage"]["r"]["log_score"]["reason"] == "no other predictor of this target"
    )
    assert led.verify() == []
    with pytest.raises(UserError, match="only 'random', 'habit'"):
        await run_matrix({"o": ReferenceAgent("o", "oracle")}, bank, led)
    led.close()
    led.engine.dispose()


def test_cli_matrix_json(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    def answer(body: dict[str, Any]) -> str:
        schema = answer_schema(body)
        if schema["type"] == "object":
            choices = list(schema["properties"])
            # an answer object carries the confidence its schema requires
            dist = {c: 1 / len(choices) for c in choices}
            return json.dumps({"answer": dist, "confidence": 0.5})
        return str(schema["enum"][0])

    with FakeOpenAI(answer=answer) as server:
        (tmp_path / "mindledger.toml").write_text(
            f"[agents.a]\nadapter = 'openai'\nendpoint = '{server.base_url}'\nmodel = 'm'\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
        env["MINDLEDGER_HOME"] = str(tmp_path / "home")
        args = [
            "matrix",
            "--agent",
            "a",
            "--reference",
            "random",
            "--items",
            "2",
            "--samples",
            "2",
            "--seed",
            "11",
            "--no-pilot",
        ]
        r = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", *args, "--json"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        first = len(server.log)
        table = subprocess.run(
            [sys.executable, "-m", "harness.cli.main", *args, "--temperature", "0.9"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert out["seed"] == 11 and out["agents"] == ["a", "ref:random"]
    assert len(out["cells"]) == 4 and all(c["n"] == 2 for c in out["cells"])
    assert all(c["unparsed"] == c["predictor_errors"] == 0 for c in out["cells"]), out["cells"]
    assert out["ledger_problems"] == []
    # the agent always answers its first choice: test-retest agreement is 1
    aa = next(c for c in out["cells"] if c["predictor"] == "a" and c["target"] == "a")
    assert aa["skill"]["ceiling"]["value"] == 1.0
    assert table.returncode == 0 and "ledger verifies" in table.stdout
    # --temperature is the built agent's own: every request of the second run carries it
    temperatures = [(entry.body or {}).get("temperature") for entry in server.log]
    assert set(temperatures[:first]) == {0.0} and set(temperatures[first:]) == {0.9}
    assert "a → ref:random" in table.stdout
    # a cell's reason for S is a numbered note under the table, not a column wrapped to
    # a dozen lines
    marks = re.findall(r"S: see (\d+)", table.stdout)
    notes = re.findall(r"^ +(\d+)\. S: \S", table.stdout, re.MULTILINE)
    assert marks and sorted(set(marks)) == sorted(notes), table.stdout
    led = open_ledger(tmp_path / "home", _db(tmp_path))
    assert len([e for e in led.entries() if e.kind == "commit"]) == 2 * 4 * 2  # two runs
    assert led.verify() == []
    led.close()
    led.engine.dispose()


def test_cli_matrix_refuses_a_held_out_seed(tmp_path: Path) -> None:
    """A held-out seed regenerates items reserved for scheduled runs: the development command
    refuses it, as `mindledger run` does, before anything is written."""
    from harness.config.seeds import is_held_out

    assert is_held_out(7)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
    env["MINDLEDGER_HOME"] = str(tmp_path / "home")
    r = subprocess.run(
        [sys.executable, "-m", "harness.cli.main", "matrix", "--reference", "random",
         "--seed", "7"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "--seed" in r.stderr and "held-out" in r.stderr
    assert not (tmp_path / "home" / "mindledger.db").exists()


def test_a_target_that_never_answers_readably_is_not_estimable_everywhere(
    tmp_path: Path,
) -> None:
    """Issue 24: the matrix HTML coloured `ref:random → cmdbot: 1.00` where every one of
    cmdbot's answers was unreadable. Now the column of a target that never answers readably
    is "not estimable: N of M answers of T unreadable" in the terminal, JSON and HTML (hatched,
    never coloured), and every cell carries its unreadable counts."""

    def good(body: dict[str, Any]) -> str:
        schema = answer_schema(body)
        if schema["type"] == "object":  # a prediction: an answer object with its confidence
            choices = list(schema["properties"])
            dist = {c: (0.7 if i == 0 else 0.3 / (len(choices) - 1)) for i, c in
                    enumerate(choices)}
            return json.dumps({"answer": dist, "confidence": 0.7})
        return str(schema["enum"][0])

    def mute(body: dict[str, Any]) -> str:
        return "I would rather not say."

    with FakeOpenAI(answer=good) as g, FakeOpenAI(answer=mute) as m:
        (tmp_path / "mindledger.toml").write_text(
            f"[agents.good]\nadapter = 'openai'\nendpoint = '{g.base_url}'\nmodel = 'm'\n"
            f"[agents.mute]\nadapter = 'openai'\nendpoint = '{m.base_url}'\nmodel = 'm'\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("MINDLEDGER_")}
        env["MINDLEDGER_HOME"] = str(tmp_path / "home")

        def cli(*args: str) -> str:
            r = subprocess.run([sys.executable, "-m", "harness.cli.main", *args], cwd=tmp_path,
                               env={**env, "COLUMNS": "200"}, capture_output=True, text=True,
                               timeout=180)
            assert r.returncode == 0, r.stderr
            return r.stdout

        table = cli("matrix", "--agent", "good", "--agent", "mute", "--reference", "random",
                    "--items", "10", "--samples", "3", "--seed", "11", "--no-pilot")
    why = "30 of 30 answers of mute unreadable"
    # the terminal: the column says why, and every cell has its counts
    assert why in table and "not estimable" in table, table
    assert "30/30 · " in table and table.count("0/30 · 0/10") >= 1, table
    # JSON
    out = json.loads(cli("report", "latest", "--format", "json"))
    for c in out["cells"]:
        u = c["unreadable"]
        assert u["target_samples"] == 30 and u["predictions_asked"] == 10, c
        if c["target"] == "mute":
            assert u["target_answers"] == 30 and why in u["reason"]
            assert c["skill"]["status"] == "not_estimable" and c["skill"]["value"] is None
            assert why in c["skill"]["reason"] and c["skill"]["p_holm"] is None
        if c["predictor"] == "mute":
            assert u["predictions"] == 10 and "10 of 10 predictions of mute unreadable" in u[
                "reason"]
        if "mute" not in (c["predictor"], c["target"]):
            assert u["target_answers"] == u["predictions"] == 0 and "reason" not in u
    # HTML: hatched (class marked), never coloured, with the reason and the counts
    page = cli("report", "latest", "--format", "html")
    for p in ("good", "mute", "ref:random"):
        td = re.search(rf"<td class='([^']*)'([^>]*)data-cell='{re.escape(p)}\|mute'[^>]*>"
                       r"(.*?)</td>", page)
        assert td is not None, p
        assert "marked" in td.group(1) and "background" not in td.group(2), td.group(0)
        assert f"not estimable: {why}" in td.group(3) and "unreadable: 30 of 30 answers" in (
            td.group(3))
    assert "unparsed" in page
