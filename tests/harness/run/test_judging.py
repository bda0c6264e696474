"""The judge stage (harness/run/judging.py): a judge agent behind the fake OpenAI server reads the
chains of thought of stored game trials; the judgements are stored, re-scored, cached, counted
and reach the profile. The games paper's worked example (Figure 5) is the judged trial."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from games import judge_messages, make_trial
from harness.agent import families
from harness.config.settings import Settings, load_settings
from harness.run.judging import chain_of_thought, judge_stored_run
from harness.run.suites import get_suite
from harness.testing import FakeOpenAI
from ledger.db import open_engine
from ledger.store import RunAgent, Store, TrialRecord
from mindledger.items import Item
from reports._data import load_run
from reports.profile import analyse
from tests.cli import run_main as _cli
from tests.games.test_games_judge import COT, figure_5_extraction


def _settings(tmp_path: Path, server: FakeOpenAI, extra: str = "") -> Settings:
    config = tmp_path / "mindledger.toml"
    config.write_text(
        "[agents.judge]\n"
        'adapter = "openai"\n'
        f'endpoint = "{server.base_url}"\n'
        'model = "judge-model"\n' + extra
    )
    return load_settings(
        config, env={}, flags={"db_url": f"sqlite:///{tmp_path / 't.db'}", "home": str(tmp_path)}
    )


def _figure_5_item() -> Item:
    return make_trial(0, {"game": "11-20", "condition": "recursive", "target_depth": 6})


def _transcript(item: Item, cot: str, action: int) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "submit_action", "arguments": json.dumps({"action": action})}}
    return [{"role": "user", "content": item.prompt},
            {"role": "assistant", "content": cot, "tool_calls": [call]}]


def _stored_trial(store: Store, run_id: str, item: Item, *, agent: str = "bot") -> str:
    store.create_run(
        run_id, suite="custom", seed=1, held_out=False, params={},
        agents=[RunAgent(agent, "agent", {"adapter": "openai"})], items=[item],
    )  # fmt: skip
    score = families.score(item, 58)
    store.record_trial(
        TrialRecord(
            run_id=run_id, agent=agent, item_id=item.id, status="ok",
            transcript=_transcript(item, COT, 58), answer=58, correct=score.correct,
            score_value=score.value, score=score.to_dict(),
        )
    )  # fmt: skip
    return run_id


def test_figure_5_judged_stored_cached_and_counted(tmp_path: Path) -> None:
    item = _figure_5_item()
    with FakeOpenAI(answer=json.dumps(figure_5_extraction())) as server:
        settings = _settings(tmp_path, server)
        store = Store(open_engine(settings.database_url))
        run_a = _stored_trial(store, "run-a", item)
        # before judging, the profile cannot resolve K_L: the answer stated no belief
        before = analyse(load_run(store, run_a), n_boot=100).profile.to_json()
        assert before["agents"]["bot"]["depth_signals"]["K_L"]["n"] == 0

        counts = asyncio.run(judge_stored_run(store, settings, run_a, judge="judge"))
        assert (counts.judged, counts.calls, counts.cache_hits) == (1, 1, 0)
        assert (counts.parse_failures, counts.ungrounded, counts.dropped) == (0, 0, 0)
        assert server.stats()["requests"] == 1
        # the judge saw the paper's messages: its prompt, the rules and the chain of thought
        body = server.log[0].body
        assert body is not None and body["model"] == "judge-model"
        assert body["messages"] == judge_messages(item, COT)

        (j,) = store.judgements(run_a)
        assert (j.agent, j.item_id, j.judge, j.status, j.cached) == ("bot", item.id, "judge",
                                                                      "ok", False)
        ex = j.extraction
        assert ex is not None
        assert [e["value"] for e in ex["chain"]] == [70, 68, 66, 64, 62, 60]
        assert ex["anchor_value"] == 70 and ex["anchor_concept"] == "base_payoff_maximizer"
        assert ex["final_belief_point"] == 60 and ex["claimed_br"] == 58
        assert ex["iteration_verbalized"] == "YES" and ex["opponent_models_me"] is False
        assert j.reading is not None
        assert j.reading["stated_belief"] == {"final_belief_point": 60}
        assert j.reading["chain"] == [70, 68, 66, 64, 62, 60]
        assert j.reading["mentalizing"] is False and j.reading["dropped"] == []
        # anchor, 6 chain steps, belief, claimed BR: every quote found in the transcript
        assert len(j.reading["grounding"]) == 9 and all(j.reading["grounding"].values())
        assert j.grounded == 9 and j.ungrounded == 0
        assert j.score is not None
        d = j.score["details"]
        assert d["K_B"] == 6 and d["K_L"] == 6 and d["br_consistent"] is True
        assert d["chain_consistency"] == 1.0 and d["mentalizing"] is False

        # the profile now takes K_L and the rest from the judge, and says so
        ds = analyse(load_run(store, run_a), n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
        assert ds["K_L"]["value"] == 6 and ds["K_L"]["n"] == 1 and ds["K_L"]["source"] == "judge"
        assert ds["sources"]["K_L"] == {"source": "judge", "answer": 0, "judge": 1}
        assert ds["br_consistency"]["value"] == 1.0 and ds["chain_consistency"]["value"] == 1.0
        assert ds["mentalizing"]["n"] == 1
        assert ds["judge"] == {"judged": 1, "calls": 1, "cache_hits": 0, "parse_failures": 0,
                               "ungrounded": 0, "dropped": 0, "judges": ["judge"]}

        # resumable: a second pass judges nothing again and asks nothing
        again = asyncio.run(judge_stored_run(store, settings, run_a, judge="judge"))
        assert (again.judged, again.already, again.calls, again.cache_hits) == (0, 1, 0, 0)
        # cached: the same trial in another run is judged from the cache, no new request
        run_b = _stored_trial(store, "run-b", item)
        other = asyncio.run(judge_stored_run(store, settings, run_b, judge="judge"))
        assert (other.judged, other.calls, other.cache_hits) == (1, 0, 1)
        assert server.stats()["requests"] == 1
        (jb,) = store.judgements(run_b)
        assert jb.cached and jb.score == j.score


def test_an_ungrounded_quote_is_dropped_and_counted(tmp_path: Path) -> None:
    item = _figure_5_item()
    extraction = figure_5_extraction()
    extraction["chain"][2]["quote"] = "L2 is 66"  # not in the transcript
    extraction["final_belief_point_quote"] = "the opponent picks 60"  # a paraphrase
    with FakeOpenAI(answer=json.dumps(extraction)) as server:
        settings = _settings(tmp_path, server)
        store = Store(open_engine(settings.database_url))
        run_id = _stored_trial(store, "run-u", item)
        counts = asyncio.run(judge_stored_run(store, settings, run_id, judge="judge"))
    assert (counts.judged, counts.ungrounded, counts.dropped) == (1, 2, 2)
    (j,) = store.judgements(run_id)
    assert j.ungrounded == 2 and j.dropped == 2
    assert j.reading is not None
    assert set(j.reading["dropped"]) == {"chain[2]", "final_belief_point"}
    assert j.reading["chain"] == [70, 68, 64, 62, 60] and j.reading["stated_belief"] is None
    assert j.score is not None and j.score["details"]["K_L_status"] == "none"
    ds = analyse(load_run(store, run_id), n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    assert ds["K_L"]["n"] == 0  # the belief's quote was not grounded: nothing stated
    assert ds["sources"]["chain_consistency"]["judge"] == 1  # the rest of the chain counts
    assert ds["judge"]["ungrounded"] == 2 and ds["judge"]["dropped"] == 2


def test_a_malformed_judge_reply_is_counted_not_raised(tmp_path: Path) -> None:
    item = _figure_5_item()
    with FakeOpenAI(answer="I would rather not annotate this.") as server:
        settings = _settings(tmp_path, server)
        store = Store(open_engine(settings.database_url))
        run_id = _stored_trial(store, "run-m", item)
        counts = asyncio.run(judge_stored_run(store, settings, run_id, judge="judge"))
    assert (counts.judged, counts.parse_failures, counts.calls) == (1, 1, 1)
    (j,) = store.judgements(run_id)
    assert j.status == "parse_error" and j.score is None
    assert j.reply_text == "I would rather not annotate this."
    ds = analyse(load_run(store, run_id), n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    assert ds["K_L"]["n"] == 0 and ds["judge"]["parse_failures"] == 1


def test_a_pruned_transcript_is_counted_not_judged(tmp_path: Path) -> None:
    from harness.cli.judge_cmd import describe_counts
    from ledger.retention import prune_transcripts

    item = _figure_5_item()
    with FakeOpenAI(answer=json.dumps(figure_5_extraction())) as server:
        settings = _settings(tmp_path, server)
        store = Store(open_engine(settings.database_url))
        run_id = _stored_trial(store, "run-p", item)
        store.set_run_status(run_id, "complete", finished=True)  # a running run keeps them
        assert prune_transcripts(store.engine, before="9999").trials == 1
        counts = asyncio.run(judge_stored_run(store, settings, run_id, judge="judge"))
    assert (counts.pruned, counts.no_reasoning, counts.eligible, counts.calls) == (1, 0, 0, 0)
    assert "1 game trial whose transcript was pruned" in describe_counts(counts)
    assert store.judgements(run_id) == []


def test_an_api_error_leaves_the_trial_for_the_next_pass(tmp_path: Path) -> None:
    item = _figure_5_item()
    with FakeOpenAI(answer=json.dumps(figure_5_extraction())) as server:
        settings = _settings(tmp_path, server)
        settings = load_settings(
            tmp_path / "mindledger.toml", env={},
            flags={"db_url": settings.db_url, "home": str(tmp_path), "max_retries": "0"},
        )  # fmt: skip
        store = Store(open_engine(settings.database_url))
        run_id = _stored_trial(store, "run-e", item)
        server.configure(faults={"kinds": ["500"], "first": 1})
        failed = asyncio.run(judge_stored_run(store, settings, run_id, judge="judge"))
        assert (failed.judged, failed.api_errors) == (0, 1) and failed.errors
        assert store.judgements(run_id) == []
        retried = asyncio.run(judge_stored_run(store, settings, run_id, judge="judge"))
        assert (retried.judged, retried.api_errors) == (1, 0)


def test_chain_of_thought_reads_reasoning_not_answers() -> None:
    transcript = [
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "play"},
        {"role": "assistant", "content": "They play 60.", "reasoning_content": "Think: L5."},
        {"role": "tool", "content": "[1, 2]"},
        {"role": "assistant", "content": '{"answer": 58, "confidence": 0.9}'},
        {"role": "assistant", "content": [{"type": "text", "text": "So 58."}]},
    ]
    assert chain_of_thought(transcript) == "Think: L5.\n\nThey play 60.\n\nSo 58."
    assert chain_of_thought([{"role": "reference", "answer": 58}]) == ""


# -- end to end: `mindledger run` with a judge ------------------------------------------------

SEED = 11


def _players(items: list[Item]) -> Any:
    """The fake server's answers: the agent writes its reasoning and plays level k (belief
    a(k − 1), action a(k)); the judge copies the belief out of the reasoning with its quote."""
    games = [it for it in items if it.family == "games"]

    def answer(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        if body.get("model") == "judge-model":
            cot = messages[-1]["content"].split("Chain-of-Thought transcript:\n", 1)[1]
            belief = int(re.search(r"they will choose (\d+)", cot).group(1))  # type: ignore[union-attr]
            return json.dumps({"chain": [], "final_belief_point": belief,
                               "final_belief_point_quote": f"they will choose {belief}",
                               "belief_is_distribution": False, "opponent_models_me": False})
        user = next(m["content"] for m in messages if m["role"] == "user")
        item = next((it for it in games if user.startswith(it.prompt)), None)
        if item is None:
            return "ok"
        idr, k = item.truth["idr"], int(item.truth["target_depth"])
        cot = f"My opponent reasons at level {k - 1}, so they will choose {idr[k - 1]}."
        args = json.dumps({"action": idr[k], "confidence": 0.9})
        return {"role": "assistant", "content": cot, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "submit_action", "arguments": args}}]}

    return answer


def test_mindledger_run_with_a_judge_resolves_k_l(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = list(get_suite("quick").items(SEED))
    with FakeOpenAI(answer=_players(items)) as server:
        (isolated_home.parent / "work" / "mindledger.toml").write_text(
            'judge_agent = "judge"\njudge_after_run = true\n'
            "max_failure_share = 1.0\n"  # the fake's belief answers are not read; games are
            f'[agents.bot]\nadapter = "openai"\nendpoint = "{server.base_url}"\n'
            'model = "m"\nanswer_mode = "tools"\n'
            f'[agents.judge]\nadapter = "openai"\nendpoint = "{server.base_url}"\n'
            'model = "judge-model"\n'
        )
        code, out, err = _cli(capsys, "run", "--suite", "quick", "--agent", "bot",
                              "--no-control", "--seed", str(SEED))
        assert code == 0, err
        judge_requests = [r for r in server.log if r.body and r.body["model"] == "judge-model"]
    games = [it for it in items if it.family == "games"]
    assert len(judge_requests) == len(games)
    assert f"judge judge: {len(games)} trials judged" in " ".join(err.split())

    store = Store(open_engine(f"sqlite:///{isolated_home / 'mindledger.db'}"))
    (run,) = store.list_runs()
    data = load_run(store, run.id)
    ds = analyse(data, n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    # every scored, non-excluded level-k trial whose belief a(k − 1) names one depth resolves
    expected = [int(it.truth["target_depth"]) for it in games
                if not it.truth["excluded"]
                and it.truth["idr"].count(it.truth["idr"][int(it.truth["target_depth"]) - 1]) == 1]
    assert expected, "the quick suite has level-k trials"
    assert ds["K_L"]["n"] == len(expected) and ds["K_L"]["unresolved"] == ds["n"] - len(expected)
    assert ds["K_L"]["value"] == pytest.approx(sum(expected) / len(expected))
    assert ds["sources"]["K_L"] == {"source": "judge", "answer": 0, "judge": len(expected)}
    assert ds["br_consistency"]["value"] == 1.0 and ds["br_consistency"]["source"] == "judge"
    assert ds["judge"]["judged"] == len(games) and ds["judge"]["calls"] == len(games)
    # without the judgements, the same run reports K_L unresolved
    data.judgements = {}
    bare = analyse(data, n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    assert bare["K_L"]["n"] == 0 and bare["sources"]["K_L"]["source"] is None

    # the report words the sources and the judge's counts
    code, out, err = _cli(capsys, "report", run.id, "--format", "md", "--bootstrap", "100")
    assert code == 0, err
    assert f"K_L answer n=0, judge n={len(expected)}" in out
    assert f"{len(games)} trials judged ({len(games)} calls, 0 cache hits)" in out

    # `mindledger judge` on the judged run: nothing left, nothing asked
    code, out, err = _cli(capsys, "judge", run.id)
    assert code == 0, err
    err = " ".join(err.split())
    assert "0 trials judged" in err and f"{len(games)} already judged" in err


def test_judge_help_ends_with_an_example_and_unknown_judges_are_named(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, "judge", "--help")
    assert code == 0
    assert out.rstrip().splitlines()[-1].strip().startswith("mindledger judge ")
    code, _, err = _cli(capsys, "judge", "some-run", "--judge", "nobody")
    assert code == 2 and "no agent named 'nobody' to judge with" in err


def test_a_judge_that_cannot_start_does_not_fail_the_run(
    isolated_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated_home.parent / "work" / "mindledger.toml").write_text(
        'judge_agent = "nobody"\njudge_after_run = true\n'
    )
    code, _, err = _cli(capsys, "run", "--suite", "quick", "--reference", "level:2",
                          "--seed", str(SEED))
    assert code == 0, err
    err = " ".join(err.split())  # as one line, however the console wrapped it
    assert "the judge stage did not run" in err and "no agent named 'nobody'" in err
    assert "retry with `mindledger judge" in err


def test_a_reply_canonical_json_cannot_hold_is_a_parse_error() -> None:
    from harness.run.judging import read_judgement

    item = _figure_5_item()
    assert read_judgement(item, 58, COT, '{"final_belief_point": NaN}') == {
        "status": "parse_error"}
    assert read_judgement(item, 58, COT, "```json\n{}\n```")["status"] == "ok"
