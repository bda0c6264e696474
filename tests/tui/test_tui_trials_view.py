"""The trials and transcript screens' view-model, pure: rows, counts and filters over a run's
trials, the failed cell of the run screen, and one trial whole (its messages are
:func:`reports.trials.message_blocks`', tested with the reports)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reports.trials import TrialView, failure_summary
from tui.state import COUNTING, MISSING, AgentView, agent_row, failed_cell
from tui.trials_view import (
    CELL_WIDTH,
    TRIAL_COLUMNS,
    TRIAL_FILTERS,
    AgentTrials,
    item_positions,
    transcript_view,
    trial_lines,
    trials_header,
)

from .conftest import TRIALS_RUN, Seeded

FILTER = {f.key: f for f in TRIAL_FILTERS}


def _view(**kw: Any) -> TrialView:
    base: dict[str, Any] = {
        "run_id": "r", "agent": "piper", "item_id": "sha256:ab", "family": "nesttom",
        "label": "R1 false", "outcome": "ok", "answer": "box", "expected": "box",
        "correct": True, "cause": None, "detail": None,
    }  # fmt: skip
    return TrialView(**{**base, **kw})


def test_the_rows_and_counts_of_a_run_say_what_failure_summary_says(with_trials: Seeded) -> None:
    """The header's counts come from the listed trials; failure_summary counts the same run
    its own way: they must agree, and each filter keeps exactly its outcome."""
    trials = with_trials.source().trials(TRIALS_RUN, "piper")
    (piper,) = [a for a in failure_summary(with_trials.store, TRIALS_RUN).agents
                if a.agent == "piper"]  # fmt: skip
    header = trials_header(trials, FILTER["a"])
    assert header.title == "piper in run quick-1: 16 trials"
    assert header.counts == (
        f"{piper.counts['ok']} ok · {piper.counts['wrong']} wrong · 1 unparsed · 2 error — "
        f"failed {piper.failed}/{piper.attempted} (19%)"
    )
    assert header.showing == "Showing all 16 · enter: the highlighted trial whole"
    assert header.notice == ""
    everything = trial_lines(trials, FILTER["a"])
    assert [line.position for line in everything] == list(range(1, 17))
    for f in TRIAL_FILTERS[1:]:
        (outcome,) = f.outcomes
        kept = trial_lines(trials, f)
        assert [line.outcome for line in kept] == [outcome] * piper.counts[outcome]
        assert trials_header(trials, f).showing.startswith(
            f"Showing {f.name}: {piper.counts[outcome]} of 16")
    assert [f.outcomes for f in TRIAL_FILTERS] == [(), ("error",), ("unparsed",), ("wrong",)]
    wrong, unparsed, error = (everything[1], everything[2], everything[3])
    assert dict(zip(TRIAL_COLUMNS, wrong.cells, strict=True)) == {
        "#": "2", "Family": "nesttom", "Label": "R1 false", "Outcome": "wrong",
        "Answer": "envelope", "Expected": "cupboard", "Cause": "reality_leak",
    }  # fmt: skip
    assert unparsed.cells[3:] == ("unparsed", MISSING, "bag", "unparsed")
    assert error.cells[3:] == ("error", MISSING, "cupboard", "malformed")
    assert wrong.key == with_trials.store.run_item_ids(TRIALS_RUN)[1]


def test_a_held_out_runs_rows_show_no_item(with_held_trials: Seeded) -> None:
    trials = with_held_trials.source().trials("quick-held", "piper")
    lines = trial_lines(trials, FILTER["a"])
    assert all(line.withheld for line in lines)
    assert [line.position for line in lines] == list(range(1, 17))
    assert [line.key for line in lines][:2] == ["item 1", "item 2"]
    # the outcome and cause stay; the answers and the item's label go
    assert lines[1].cells == ("2", "nesttom", MISSING, "wrong", "", "", "reality_leak")
    header = trials_header(trials, FILTER["e"])
    assert header.notice.startswith("Run quick-held is held out: its items, answers and "
                                    "transcripts are withheld")  # fmt: skip
    assert header.showing == "Showing errors: 2 of 16"  # and none opens


def test_an_empty_filter_and_an_empty_agent() -> None:
    trials = AgentTrials("r", "piper", False, (_view(),), (1,))
    assert trials_header(trials, FILTER["e"]).showing == "No errors"
    assert trial_lines(trials, FILTER["e"]) == ()
    none = AgentTrials("r", "piper", False, (), ())
    header = trials_header(none, FILTER["a"])
    assert (header.title, header.counts) == ("piper in run r: 0 trials", "no trials stored yet")


def test_cells_are_cut_and_structured_answers_are_json() -> None:
    long = "a very long answer that goes on and on and on"
    trials = AgentTrials("r", "piper", False, (
        _view(outcome="wrong", answer=long, expected={"move": 3}, cause="x" * 40),
    ), (None,))  # fmt: skip
    (line,) = trial_lines(trials, FILTER["a"])
    assert line.cells[0] == MISSING  # no known position
    answer, expected, cause = line.cells[4:]
    assert len(answer) == CELL_WIDTH and answer.endswith("…") and long.startswith(answer[:-1])
    assert expected == '{"move": 3}'
    assert len(cause) == CELL_WIDTH


def test_item_positions() -> None:
    views = [_view(item_id="b"), _view(item_id="item 7", withheld=True), _view(item_id="zz")]
    assert item_positions(views, ["a", "b", "c"]) == (2, 7, None)


def test_failed_cell_and_the_run_screens_row() -> None:
    from ledger.store import FailureCounts

    assert failed_cell(3, 26) == "3/26"
    assert failed_cell(0, 0) == MISSING
    view = AgentView("piper", "agent", True, "VALID", "d", "l", "t", "f", "n",
                     summary=("yes", "piper", "agent", "1", "2", "3", "4", "26"))  # fmt: skip
    assert agent_row(view, None)[-1] == COUNTING
    assert agent_row(view, {})[-1] == MISSING
    counts = {"piper": FailureCounts(trials=28, errors=2, unparsed=1, not_applicable=2)}
    assert agent_row(view, counts) == (*view.summary, "3/26")


def test_one_trial_whole(with_trials: Seeded) -> None:
    source = with_trials.source()
    ids = with_trials.store.run_item_ids(TRIALS_RUN)
    wrong = transcript_view(source.trial(TRIALS_RUN, "piper", ids[1]), 2)
    assert wrong.title == "piper · item 2 of run quick-1 · nesttom R1 false"
    assert (wrong.outcome, wrong.answer, wrong.expected) == (
        "wrong", "envelope\nconfidence 0.70", "cupboard")
    assert wrong.facts[:3] == (
        "Outcome  wrong: reality_leak",
        "Score    value 0.0 · codes reality_leak",
        "Costs    1 turn · 420 tokens in, 24 out · 0.80 s · 1 request sent · model scripted-1 "
        "· finish tool_calls",
    )
    assert wrong.facts[3] == "CLI      mindledger trials quick-1 --item 2 --agent piper"
    assert [m.title for m in wrong.messages] == ["1 · system", "2 · user", "3 · assistant"]
    sent = json.loads(with_trials.store.trials(TRIALS_RUN, "piper")[1].transcript_json)
    assert wrong.messages[1].body == sent[1]["content"]  # the prompt exactly as sent
    error = transcript_view(source.trial(TRIALS_RUN, "piper", ids[3]), 4)
    assert error.facts[0] == "Outcome  error: malformed — python3 wrote no JSON reply"
    assert (error.answer, error.expected) == (MISSING, "cupboard")
    trial = source.trial(TRIALS_RUN, "piper", ids[2])
    unparsed = transcript_view(trial, 3)
    problem = trial.score["details"]["parse_problem"]  # the parser's words, whatever they are
    assert problem and unparsed.facts[0] == f"Outcome  unparsed — {problem}"
    assert [m.role for m in unparsed.messages] == ["system", "user", "assistant", "user",
                                                   "assistant"]  # fmt: skip


@pytest.mark.parametrize(("raw", "title"), [("the reply", "raw reply"), (None, "no messages")])
def test_a_trial_without_messages(raw: str | None, title: str) -> None:
    view = transcript_view(_view(outcome="error", raw_text=raw, transcript=(), agent="my bot"))
    assert [m.title for m in view.messages] == [title]
    assert view.title == "my bot · sha256:ab of run r · nesttom R1 false"
    assert view.facts[-1] == "CLI      mindledger trials r --item sha256:ab --agent 'my bot'"


@pytest.mark.parametrize(("raw", "titles"), [
    ("the reply", ["transcript pruned", "raw reply"]),
    (None, ["transcript pruned"]),
])
def test_a_pruned_transcript_says_when_it_was_pruned(raw: str | None, titles: list[str]) -> None:
    view = transcript_view(_view(raw_text=raw, transcript=(), transcript_pruned="2026-11-30"))
    assert [m.title for m in view.messages] == titles
    assert "pruned on 2026-11-30" in view.messages[0].body
