"""A run's trials as a person reads them (:mod:`reports.trials`), over a real SQLite store: each
stored trial's outcome and cause, the failures counted alike by the listing and by the store's
aggregate, a few wrong and failed trials per cause for the HTML report, and nothing of a
held-out run's items without the operator's flag. The CLI over them: ``tests/harness/
test_trials_cmd.py``."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from harness.agent.agent_types import Attempt
from harness.run.runner import score_attempt
from harness.run.suites import get_suite
from ledger.db import open_engine
from ledger.models import TrialRow
from ledger.store import RunAgent, Store
from mindledger import family as registry
from mindledger.errors import NotFoundError, UserError
from mindledger.items import Item
from reports import build_profile
from reports.render import render_html, report
from reports.trials import (
    failure_summary,
    list_trials,
    message_blocks,
    one_trial,
    outcome_of,
    printable,
    value_text,
    wrong_examples,
)

SEED = 11
SCRIPT = "<script>alert('reply')</script>"


def _right(item: Item) -> Any:
    return registry.get(item.family).design(item).truth_answer


def _wrong(item: Item) -> Any:
    """An answer the item takes that is not its truth (a false-belief story's reality when it
    differs: the scorer calls that a reality leak)."""
    truth = _right(item)
    spec = item.answer
    if spec["kind"] == "yesno":
        return "no" if truth == "yes" else "yes"
    if spec["kind"] == "integer":
        return truth + 1 if truth + 1 <= spec["max"] else truth - 1
    reality = item.truth.get("reality")
    return reality if reality in spec["choices"] and reality != truth else next(
        c for c in spec["choices"] if c != truth
    )


def _attempt(item: Item, how: str) -> Attempt:
    """What an agent did with ``item``: answered it right or wrong, replied with no answer,
    or failed (its program wrote no JSON, it timed out)."""
    sent = [{"role": "user", "content": item.prompt}]
    if how in ("right", "wrong"):
        answer = _right(item) if how == "right" else _wrong(item)
        return Attempt(answer=answer, raw_text=f"ANSWER: {answer}", turns=1,
                       transcript=[*sent, {"role": "assistant", "content": f"ANSWER: {answer}"}])
    if how == "unparsed":
        problem = f"expected {item.answer.get('kind')} answer, got {SCRIPT!r}"
        if item.answer["kind"] == "choice":
            problem = f"expected one of: {', '.join(item.answer['choices'])}, got {SCRIPT!r}"
        return Attempt(raw_text=SCRIPT, parse_problem=problem, turns=2,
                       transcript=[*sent, {"role": "assistant", "content": SCRIPT}])
    if how == "malformed":
        return Attempt(error="malformed: python3 wrote no JSON reply", transcript=sent)
    assert how == "timeout"
    return Attempt(error="timeout: python3 timed out", transcript=sent)


HOW = ("right", "wrong", "unparsed", "right", "malformed", "wrong", "timeout", "unparsed")


def _quoted(text: str) -> str:
    """``text`` as it reads inside a JSON document."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


@dataclass
class Stored:
    store: Store
    run_id: str
    held_id: str
    items: list[Item]
    how: dict[str, str]
    """Item id → what the agent under test did with it."""


def _store_run(store: Store, run_id: str, items: list[Item], *, held_out: bool) -> None:
    agents = [RunAgent("bot", "agent", {"adapter": "command"}),
              RunAgent("ref:oracle", "reference", {"policy": "oracle"})]  # fmt: skip
    store.create_run(run_id, suite="quick", seed=SEED, held_out=held_out, params={},
                     agents=agents, items=items)  # fmt: skip
    for n, item in enumerate(items):
        store.record_trial(score_attempt(run_id, "bot", item, _attempt(item, HOW[n % len(HOW)])))
        store.record_trial(score_attempt(run_id, "ref:oracle", item, _attempt(item, "right")))


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    path: Path = tmp_path_factory.mktemp("trials") / "trials.db"
    store = Store(open_engine(f"sqlite:///{path}"))
    items = list(get_suite("quick").items(SEED))
    _store_run(store, "dev-run", items, held_out=False)
    _store_run(store, "held-run", items, held_out=True)
    how = {item.id: HOW[n % len(HOW)] for n, item in enumerate(items)}
    yield Stored(store, "dev-run", "held-run", items, how)
    store.engine.dispose()


def test_every_trial_has_the_outcome_and_cause_of_what_the_agent_did(stored: Stored) -> None:
    views = list_trials(stored.store, stored.run_id, agent="bot")
    assert [v.item_id for v in views] == [it.id for it in stored.items]
    expected_outcome = {"right": "ok", "wrong": "wrong", "unparsed": "unparsed",
                        "malformed": "error", "timeout": "error"}  # fmt: skip
    for v in views:
        how = stored.how[v.item_id]
        assert v.outcome == expected_outcome[how], (how, v)
        item = next(it for it in stored.items if it.id == v.item_id)
        assert v.expected == _right(item) and v.prompt == item.prompt
        if how == "right":
            assert v.answer == v.expected and v.correct is True and v.cause is None
        elif how == "wrong":
            assert v.answer == _wrong(item) and v.correct is False and v.cause
        elif how == "unparsed":
            assert v.answer is None and v.cause == "unparsed" and SCRIPT in (v.detail or "")
        else:
            assert v.cause == how and v.detail and v.detail.startswith(f"{how}: ")
        assert v.to_json()["error"] == (v.cause if v.outcome in ("error", "unparsed") else None)
    assert outcome_of("ok", "null", None) == "unparsed"  # an answer stored as JSON null


def test_the_store_counts_failures_as_the_listing_does(stored: Stored) -> None:
    """``runs`` counts failures in SQL; ``trials`` by outcome_of: the same trials, even one
    whose answer was stored as the JSON text null."""
    table = TrialRow.__table__  # type: ignore[attr-defined]
    first_right = next(it.id for it in stored.items if stored.how[it.id] == "right")
    with stored.store.engine.begin() as conn:
        conn.execute(sa.update(table).where(table.c.run_id == stored.held_id,
                                            table.c.item_id == first_right,
                                            table.c.agent == "bot").values(answer_json="null"))
    for run_id in (stored.run_id, stored.held_id):
        listed = Counter((v.agent, v.outcome) for v in
                         list_trials(stored.store, run_id, reveal_held_out=True))  # fmt: skip
        counts = stored.store.failure_counts([run_id, "no-such-run"])
        assert set(counts) == {run_id}
        for agent, c in counts[run_id].items():
            assert c.errors == listed[(agent, "error")]
            assert c.unparsed == listed[(agent, "unparsed")]
            assert c.trials == sum(n for (a, _), n in listed.items() if a == agent)
        summary = {a.agent: a for a in failure_summary(stored.store, run_id).agents}
        assert {a: c.failed for a, c in counts[run_id].items()} == {
            a: s.failed for a, s in summary.items()}  # fmt: skip
    held = stored.store.failure_counts([stored.held_id])[stored.held_id]["bot"]
    dev = stored.store.failure_counts([stored.run_id])[stored.run_id]["bot"]
    assert held.unparsed == dev.unparsed + 1 and dev.failed > 0


def test_failure_counts_on_every_database(db_url: str) -> None:
    """The aggregate is plain SQL: SQLite and PostgreSQL count alike."""
    store = Store(open_engine(db_url))
    _store_run(store, "r", list(get_suite("quick").items(SEED))[:8], held_out=False)
    counts = store.failure_counts(["r"])["r"]
    listed = Counter((v.agent, v.outcome) for v in list_trials(store, "r"))
    assert counts["bot"].errors == listed[("bot", "error")] == 2
    assert counts["bot"].unparsed == listed[("bot", "unparsed")] == 2
    assert (counts["bot"].trials, counts["bot"].attempted, counts["bot"].failed) == (8, 8, 4)
    assert counts["ref:oracle"].failed == 0
    store.engine.dispose()


def test_filters_choose_the_trials(stored: Stored) -> None:
    store, run_id = stored.store, stored.run_id
    wrong = list_trials(store, run_id, outcome="wrong")
    assert wrong and {v.outcome for v in wrong} == {"wrong"} and {v.agent for v in wrong} == {"bot"}
    failed = list_trials(store, run_id, agent="bot", outcome=("error", "unparsed"))
    assert len(failed) == sum(h in ("unparsed", "malformed", "timeout") for h in stored.how.values())
    games = list_trials(store, run_id, family="games")
    assert games and {v.family for v in games} == {"games"}
    assert len(list_trials(store, run_id, limit=3)) == 3
    with pytest.raises(NotFoundError, match=r"its agents: bot, ref:oracle"):
        list_trials(store, run_id, agent="nobody")
    with pytest.raises(UserError, match="unknown trial status 'bad'"):
        list_trials(store, run_id, outcome="bad")


def test_failures_that_differ_only_in_the_items_choices_are_one_cause(stored: Stored) -> None:
    """A reply with no answer to a question of five containers and to one of five others is
    the same failure: one cause with its count, not one per list of containers."""
    (bot,) = [a for a in failure_summary(stored.store, stored.run_id).agents if a.agent == "bot"]
    unparsed = [c for c in bot.causes if c.kind == "unparsed"]
    choice = [c for c in unparsed if c.example.startswith("expected one of: ")]
    choice_items = [it for it in stored.items
                    if stored.how[it.id] == "unparsed" and it.answer["kind"] == "choice"]  # fmt: skip
    assert len({tuple(it.answer["choices"]) for it in choice_items}) > 1  # lists do differ
    assert len(choice) == 1 and choice[0].count == len(choice_items)
    assert {c.kind for c in bot.causes} == {"unparsed", "malformed", "timeout"}
    assert bot.counts["ok"] + bot.counts["wrong"] + bot.failed == len(stored.items)


def test_one_trial_by_id_start_or_position(stored: Stored) -> None:
    store, run_id = stored.store, stored.run_id
    item = stored.items[4]
    whole = one_trial(store, run_id, "bot", item.id)
    assert one_trial(store, run_id, "bot", item.id.removeprefix("sha256:")[:12]) == whole
    assert one_trial(store, run_id, "bot", "5") == whole
    assert whole.transcript == ({"role": "user", "content": item.prompt},)
    assert whole.cause == "malformed" and whole.outcome == "error"
    with pytest.raises(NotFoundError, match="has no item 'zzz'"):
        one_trial(store, run_id, "bot", "zzz")


def test_a_held_out_run_shows_nothing_of_its_items(stored: Stored) -> None:
    store, held = stored.store, stored.held_id
    views = list_trials(store, held, agent="bot")
    assert views and all(v.withheld for v in views)
    text = json.dumps([v.to_json() for v in views], ensure_ascii=False)
    for item in stored.items:
        assert item.id not in text and _quoted(item.prompt) not in text
    assert _quoted(SCRIPT) not in text and "expected one of" not in text
    assert [v.item_id for v in views] == [f"item {n}" for n in range(1, len(views) + 1)]
    shown = list_trials(store, held, agent="bot", reveal_held_out=True)
    shown_text = json.dumps([v.to_json() for v in shown], ensure_ascii=False)
    assert _quoted(stored.items[0].prompt) in shown_text  # the check can fail
    # one trial is refused before its item is looked up: an id that is not the run's item is
    # refused alike, so probing ids learns nothing
    for probe in (stored.items[0].id, stored.items[0].id[:12], "sha256:0000", "2"):
        with pytest.raises(UserError, match="is held out") as refused:
            one_trial(store, held, "bot", probe)
        assert not isinstance(refused.value, NotFoundError)
    assert one_trial(store, held, "bot", "2", reveal_held_out=True).prompt == stored.items[1].prompt


def test_wrong_examples_are_a_few_per_cause_of_the_agents_under_test(stored: Stored) -> None:
    examples = wrong_examples(stored.store, stored.run_id, per_cause=2)
    assert [a.agent for a in examples] == ["bot"]  # the oracle is right, and a reference
    (bot,) = examples
    listed = list_trials(stored.store, stored.run_id, agent="bot",
                         outcome=("wrong", "error", "unparsed"))  # fmt: skip
    by_cause = Counter(v.cause for v in listed)
    assert {c.cause: c.count for c in bot.causes} == dict(by_cause)
    assert [c.count for c in bot.causes] == sorted((c.count for c in bot.causes), reverse=True)
    for cause in bot.causes:
        firsts = [v for v in listed if v.cause == cause.cause][:2]
        assert cause.trials == tuple(firsts)  # the first ones stored, whole
        assert {t.outcome for t in cause.trials} == {cause.outcome}
    assert wrong_examples(stored.store, stored.held_id) == ()
    assert wrong_examples(stored.store, stored.held_id, reveal_held_out=True)


def test_the_html_report_shows_wrong_answers_by_cause_escaped(stored: Stored) -> None:
    html = report(stored.store, stored.run_id, "html", n_boot=100)
    start = html.index("Examples of wrong and failed answers")
    section = html[start:html.index("</details>", start)]
    assert "<details class='examples'>" in html[start - 200 : start + 200] + section
    for cause in ("unparsed", "malformed", "timeout"):
        assert f"<h3>{cause} — " in section
    wrong_item = next(it for it in stored.items if stored.how[it.id] == "wrong")
    assert wrong_item.prompt.split("\n")[0].replace('"', "&quot;") in section
    assert SCRIPT not in html and "&lt;script&gt;alert(" in section  # the reply, escaped
    assert html.index("Examples of wrong") > html.index("Headline")  # a block near the end


def test_the_html_report_of_a_held_out_run_has_no_examples(stored: Stored) -> None:
    profile = build_profile(stored.store, stored.held_id, n_boot=100)
    examples = wrong_examples(stored.store, stored.held_id, reveal_held_out=True)
    assert examples
    # handed examples anyway, the report of a held-out run leaves them out for everyone but
    # an operator
    assert "Examples of wrong" not in render_html(profile, figures=[], examples=examples)
    shown = render_html(profile, figures=[], examples=examples, reveal_held_out=True)
    assert "Examples of wrong" in shown and examples[0].causes[0].trials[0].item_id in shown


def test_a_transcript_reads_as_sent_and_cannot_drive_the_terminal() -> None:
    transcript = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where is the key?\n\nAnswer with one word."},
        {"role": "assistant", "content": "\x1b[2J\x1b]0;owned\x07cleared",
         "tool_calls": [{"id": "c1", "type": "function", "function": {
             "name": "submit_answer", "arguments": '{"answer": "jar", "confidence": 0.9}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "noted"},
        {"role": "user", "round": 2, "content": [{"type": "text", "text": "Again?"}]},
    ]  # fmt: skip
    blocks = message_blocks(transcript)
    assert [b.title for b in blocks] == ["1 · system", "2 · user", "3 · assistant",
                                         "4 · tool · result of c1", "5 · user (round 2)"]  # fmt: skip
    assert blocks[1].body == "Where is the key?\n\nAnswer with one word."  # as sent, whole
    reply = blocks[2].body
    assert "\x1b" not in reply and "\x07" not in reply
    assert reply.startswith("\\x1b[2J\\x1b]0;owned\\x07cleared\n→ calls submit_answer (c1) with")
    assert reply.endswith('with\n  {\n    "answer": "jar",\n    "confidence": 0.9\n  }')
    assert blocks[4].body == "Again?"
    assert printable("tab\tand\nline") == "tab\tand\nline" and printable("\r") == "\\x0d"
    assert value_text(None) == "—" and value_text({"b": 1, "a": "x"}) == '{"a": "x", "b": 1}'
