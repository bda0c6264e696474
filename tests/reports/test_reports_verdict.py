"""The verdict (:mod:`reports.verdicts`): computed once from the typed profile, judged from
intervals, rendered first by Markdown, HTML, JSON and quickstart; what cannot be estimated said
once. The first test is issue 24's own setup, run for real: a command agent with two of its own
modules ablated, its control, ``oracle`` and ``reality-leak`` on the quick suite."""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.model import RunProfile
from reports.present import (
    EVERY_TRIAL_FAILED,
    commonest_cause,
    headlines,
    proportion_text,
    small_n_said_once,
)
from reports.render import render_html, render_json, render_markdown
from reports.verdicts import (
    CLEARLY_ABOVE,
    CLEARLY_BELOW,
    NO_DIFFERENCE,
    NOT_JUDGED,
    contrast_note,
    judge,
    verdict,
)

from .conftest import StoredRun

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("cmdbot-no-tom", "cmdbot-no-memory")

SETTINGS = f"""
[agents.cmdbot]
adapter = "command"
command = [{json.dumps(sys.executable)}, {json.dumps(str(ROOT / "examples" / "command_agent.py"))}]
[agents.cmdbot.own_modules.tom]
description = "theory of mind"
off.env = {{ TOM = "0" }}
[agents.cmdbot.own_modules.memory]
description = "memory"
off.env = {{ MEMORY = "0" }}
"""


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Issue 24's run through the command line: ``run --suite quick --agent cmdbot --ablate
    tom --ablate memory --reference oracle --reference reality-leak``, then its Markdown and
    JSON reports."""
    from click.testing import CliRunner

    from harness.cli.main import cli

    home = tmp_path_factory.mktemp("verdict-home")
    (home / "mindledger.toml").write_text(SETTINGS, encoding="utf-8")
    env = {"MINDLEDGER_HOME": str(home)}
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in __import__("os").environ if k.startswith("MINDLEDGER_")]:
            mp.delenv(key)
        runner = CliRunner()
        ran = runner.invoke(
            cli,
            [
                "run",
                "--suite",
                "quick",
                "--agent",
                "cmdbot",
                "--ablate",
                "tom",
                "--ablate",
                "memory",
                "--reference",
                "oracle",
                "--reference",
                "reality-leak",
                "--seed",
                "12",
                "--progress",
                "lines",
            ],
            env=env,
        )
        assert ran.exit_code in (0, 3), ran.output
        md = runner.invoke(cli, ["report", "latest", "--format", "md"], env=env)
        assert md.exit_code == 0, md.output
        js = runner.invoke(cli, ["report", "latest", "--format", "json"], env=env)
        assert js.exit_code == 0, js.output
    yield {"md": md.stdout, "json": json.loads(js.stdout)}


def test_a_quick_run_opens_with_the_agent_under_test(quick_run: dict[str, Any]) -> None:
    md = quick_run["md"]
    lines = md.splitlines()
    first = "\n".join(lines[:25])
    assert "cmdbot (agent under test) is INVALID" in first
    for figure in ("D50", "false-belief accuracy", "leakage resistance", "skill S is not measured"):
        assert figure in first, figure
    # the agent under test is named before any of its ablation variants
    agent_line = next(i for i, ln in enumerate(lines) if "cmdbot (agent under test)" in ln)
    for variant in VARIANTS:
        named = next(i for i, ln in enumerate(lines) if variant in ln)
        assert named >= agent_line
        assert md.index(variant) > md.index("cmdbot (agent under test)")
    assert lines[0].startswith("# mindledger profile") and lines[2] == "## Verdict"


def test_a_quick_run_says_what_it_cannot_estimate_once(quick_run: dict[str, Any]) -> None:
    md = quick_run["md"]
    assert md.count("no interval") <= 5, md.count("no interval")
    assert "This run has 7 false-belief items per agent; intervals need ≥ 10: run the " \
           "`baseline` suite." in md  # fmt: skip
    # no S column when no matrix accompanies the run, and one line on how to get it
    headline = md[md.index("## Headline") : md.index("## cmdbot (agent)")]
    assert "skill S" not in headline and "not measured" not in headline
    assert md.count("Agent-prediction skill S is not measured") == 1
    # the glossary of interval methods is at the end
    assert md.index("## How to read the figures") > md.index("## ref:reality-leak")
    assert "W-deff: at the design-effect-adjusted n" in md.split("## How to read the figures")[1]


def test_a_command_agents_contrasts_are_zero_by_construction_and_say_so(
    quick_run: dict[str, Any],
) -> None:
    md = quick_run["md"]
    section = md[md.index("## cmdbot (agent)") : md.index("## cmdbot-control (control)")]
    assert (
        "Base-model subtraction (cmdbot − cmdbot-control): cmdbot-control gave the same "
        "answer as cmdbot on all 26 items both answered"
    ) in section
    assert "a command agent's derived control is the same program" in section
    for module in ("tom", "memory"):
        assert f"Ablation credit of {module} (cmdbot − cmdbot-no-{module}): " in section
    assert "FB accuracy R1" not in section  # no table of zeros
    assert "### Ablation credit" not in section and "### Base-model subtraction" not in section


def test_the_json_report_carries_the_verdict_and_quickstart_prints_it(
    quick_run: dict[str, Any],
) -> None:
    from harness.cli.quickstart_cmd import explain_run

    profile = quick_run["json"]
    v = verdict(profile)
    assert profile["verdict"] == v.to_json()
    assert profile["verdict"]["agents"][0]["agent"] == "cmdbot"
    refs = {r["policy"]: r["as_expected"] for r in profile["verdict"]["references"]}
    assert refs == {"oracle": True, "reality-leak": True}
    lines = explain_run(profile)
    assert lines[1:-2] == v.paragraphs()
    assert lines[1].startswith("cmdbot (agent under test) is INVALID")
    assert "  oracle: diagnosed as expected (D50 > 5)" in lines


# -- judging from the interval ------------------------------------------------------------


@pytest.mark.parametrize(("block", "expected"), [
    ({"difference": 0.2, "ci": [0.05, 0.31], "status": "estimated"}, CLEARLY_ABOVE),
    ({"difference": -0.2, "ci": [-0.31, -0.02], "status": "estimated"}, CLEARLY_BELOW),
    ({"difference": 0.2, "ci": [-0.01, 0.4], "status": "estimated"}, NO_DIFFERENCE),
    ({"difference": -0.3, "ci": [None, -0.1]}, CLEARLY_BELOW),  # an open end
    ({"difference": 0.5, "ci": None, "status": "not_estimable",
      "reason": "n = 7 paired items: at least 10 are needed for an interval"}, NOT_JUDGED),
    # a large point estimate is not judged without its interval
    ({"difference": 0.9, "ci": [0.1, 0.2], "status": "not_estimable"}, NOT_JUDGED),
])  # fmt: skip
def test_judge_reads_the_interval_not_the_point(block: dict[str, Any], expected: str) -> None:
    assert judge(block) == expected


def test_judge_against_chance() -> None:
    block = {"value": 0.4, "ci": [0.3, 0.5], "status": "estimated"}
    assert judge(block, against=0.25) == CLEARLY_ABOVE
    assert judge(block, against=0.45) == NO_DIFFERENCE
    assert judge(block, against=0.6) == CLEARLY_BELOW


def test_a_contrast_note_needs_every_shared_answer_the_same() -> None:
    block = {
        "available": True,
        "control": "bot-control",
        "direction": "bot − bot-control",
        "same_answers": {"shared": 26, "identical": 26},
    }
    note = contrast_note(block, agent="bot", command=True)
    assert note.startswith("bot-control gave the same answer as bot on all 26 items")
    assert "same program" in note
    assert "same program" not in contrast_note(block, agent="bot")  # not a command agent
    assert contrast_note(block | {"same_answers": {"shared": 26, "identical": 25}}) == ""
    assert contrast_note({k: v for k, v in block.items() if k != "same_answers"}) == ""
    assert contrast_note(block | {"available": False}) == ""


def test_small_n_is_said_once_per_section() -> None:
    block = {"value": 4 / 7, "k": 4, "n": 7, "status": "not_estimable",
             "reason": "n = 7 items: at least 10 are needed for an interval that keeps its "
                       "coverage"}  # fmt: skip
    assert proportion_text(block) == "57.1% n=7 (no interval: n < 10)"
    with small_n_said_once() as tally:
        assert proportion_text(block) == "57.1% n=7"
        assert proportion_text(block | {"n": 3, "reason": block["reason"].replace("7", "3")})
        other = proportion_text(block | {"reason": "story length constant"})
    assert other.endswith("(no interval: story length constant)")  # other reasons stay
    assert tally.minimum == 10 and sorted(tally.ns) == [3.0, 7.0]
    assert tally.note() == (
        "Intervals need n ≥ 10: figures here printed without one rest on fewer items (n = 3 to 7)."
    )
    assert proportion_text(block).endswith("(no interval: n < 10)")  # outside it again


# -- the synthetic run: a valid agent, a control, two ablations, three references -----------


def test_a_valid_agent_is_judged_against_its_control_and_its_largest_credit(
    stored_profile: RunProfile,
) -> None:
    v = verdict(stored_profile)
    assert [a.agent for a in v.agents] == ["piper"]
    text = " ".join(v.agents[0].sentences())
    assert text.startswith("piper (agent under test) is valid (true-belief controls ")
    assert re.search(r"Its D50 \d\.\d\d \[\d\.\d\d, \d\.\d\d\]", text)
    assert re.search(
        r"false-belief accuracy \d+\.\d% \[[\d.]+, [\d.]+\] n=\d+, clearly above "
        r"the 25% of chance",
        text,
    )
    assert re.search(
        r"Against its control piper-control: false-belief accuracy \+[\d.]+ pts "
        r"\[\+[\d.]+, \+[\d.]+\] n=\d+: clearly above\.",
        text,
    )
    # the module that matters, not the one that does not
    assert "Its largest module credit: perspective-filtering (piper − piper-no-perspective)" \
        in text  # fmt: skip
    assert "witness-log" not in text
    assert [(r.policy, r.as_expected) for r in v.references] == [
        ("depth-capped:2", True),
        ("not-reality", True),
        ("oracle", True),
    ]
    assert v.notes == (v.notes[0],) and "skill S is not measured" in v.notes[0]


def test_a_reference_the_suite_gets_wrong_is_reported_not_praised(
    stored_profile: RunProfile,
) -> None:
    wrong = stored_profile.to_json()
    wrong["agents"]["depth-capped:2"]["d50"] |= {
        "status": "bracketed",
        "lower_bound": 3.0,
        "upper_bound": 4.0,
        "display": "between 3 and 4",
    }
    ref = next(r for r in verdict(wrong).references if r.policy == "depth-capped:2")
    assert ref.as_expected is False
    assert ref.text == (
        "depth-capped:2: NOT diagnosed as designed — D50 should lie between 2 "
        "and 3, got between 3 and 4"
    )


def test_an_invalid_ablation_variant_follows_its_agent(stored_profile: RunProfile) -> None:
    p = stored_profile.to_json()
    message = "INVALID: piper-no-witness-log's true-belief control accuracy is low"
    ab = p["agents"]["piper-no-witness-log"]
    ab["valid"] = False
    ab["validity"] |= {"valid": False, "message": message}
    ab["notices"] = [message]
    p["notices"].insert(0, message)  # first among the profile's notices
    v = verdict(p)
    assert v.agents[0].variants.startswith(
        "Also INVALID by the same rule: its ablation variant piper-no-witness-log (true-belief "
        f"controls {proportion_text(ab['true_belief_control_accuracy'])}"
    )
    for page, said in (
        (render_markdown(RunProfile.of(p)), message),
        (render_html(RunProfile.of(p), figures=()), html.escape(message)),
    ):
        assert page.index("piper (agent under test)") < page.index("piper-no-witness-log")
        assert page.count(said) == 1  # in its own section, not at the top
    md = render_markdown(RunProfile.of(p))
    assert md.index(message) > md.index("## Headline")


def test_depth_levels_are_read_defensively(stored_profile: RunProfile) -> None:
    """K_B may gain ``identifiable`` and ``reason`` (issue 24 item 6): read when present."""
    p = stored_profile.to_json()
    signals = p["agents"]["piper"]["depth_signals"]
    assert "K_B " in verdict(p).agents[0].figures
    signals["K_B"] |= {"identifiable": False, "reason": "no level explains its choices"}
    assert "K_B not identifiable (no level explains its choices)" in verdict(p).agents[0].figures


def test_json_keeps_the_profile_and_adds_the_verdict(stored_profile: RunProfile) -> None:
    out = json.loads(render_json(stored_profile))
    assert set(out) == set(stored_profile.to_json()) | {"verdict"}
    assert out["agents"] == stored_profile.to_json()["agents"]
    assert out["verdict"]["paragraphs"][0].startswith("piper (agent under test)")


@pytest.mark.parametrize("status", ["running", "interrupted", "incomplete"])
def test_an_unfinished_run_says_so_before_anything_else(
    stored_profile: RunProfile, status: str
) -> None:
    """A report read while a run is under way, or of one whose process was stopped, opens by
    saying the run is not finished and how many trials its figures rest on; a complete run
    says nothing of the kind."""
    assert verdict(stored_profile).unfinished is None  # a complete run
    run = stored_profile.run.model_copy(update={"status": status, "n_trials": 7})
    partial = stored_profile.model_copy(update={"run": run})
    expected = run.n_items * len(partial.agents)
    said = verdict(partial).paragraphs()[0]
    assert said.startswith(
        f"Run {run.id} is not finished ({status}): 7 of its {expected} trials are stored, and "
        "every figure here rests on those alone. "
        f"`mindledger run --resume {run.id}` finishes it"
    ), said
    assert said.endswith("if its process has stopped.") == (status == "running")
    md = render_markdown(partial)
    assert md.split("## Verdict", 1)[1].lstrip().startswith(f"**{said}**")
    assert f"<p class='unfinished'><strong>Run {run.id} is not finished" in render_html(
        partial, figures=[]
    )
    assert json.loads(render_json(partial))["verdict"]["unfinished"] == said


def test_an_agent_whose_trials_mostly_failed_says_so_first(stored_profile: RunProfile) -> None:
    """More than half of its trials API errors, not all: the verdict says so before its
    figures, with the command that shows them; half or fewer, nothing is added; all of them:
    it has no figures at all (said once, as before)."""
    p = stored_profile.to_json()
    trials = p["agents"]["piper"]["api_errors"]["trials"]
    run_id = stored_profile.run.id
    for count, said in ((trials - 2, True), (trials // 2, False), (0, False)):
        p["agents"]["piper"]["api_errors"]["count"] = count
        text = verdict(p).agents[0].figures
        cause = commonest_cause(RunProfile.of(p).agents["piper"])
        assert text.startswith(
            f"piper (agent under test): {count} of its {trials} trials were API errors{cause}, "
            f"so what follows rests on the 2 others (`mindledger trials {run_id} --agent piper "
            "--status error` shows what went wrong). It is valid (true-belief controls "
        ) == said, text
        assert text.count("piper (agent under test)") == 1
        assert ("Its D50 " in text) and text.startswith("piper (agent under test)")
    p["agents"]["piper"]["api_errors"]["count"] = trials
    assert "has no figures: its run failed, all " in verdict(p).agents[0].figures


def test_an_agent_whose_every_trial_failed_has_no_figures_said_once_a_cell_and_once_a_section(
    stored_profile: RunProfile,
) -> None:
    """Not "not estimable" with a reason for each figure: its headline cells say none, and its
    section says once that it has no figures (the verdict has said where to see why)."""
    p = stored_profile.to_json()
    errors = p["agents"]["piper"]["api_errors"]
    errors["count"] = errors["trials"]
    failed = RunProfile.of(p)
    row = {h.agent: h for h in headlines(failed)}["piper"]
    assert (row.valid, row.d50, row.false_belief, row.leakage_resistance, row.true_belief) == (
        "n/a", *[EVERY_TRIAL_FAILED] * 4
    )
    assert {h.agent: h for h in headlines(failed, with_ci=False)}["piper"].d50 == "failed"
    assert {h.agent: h for h in headlines(stored_profile)}["piper"].d50 != EVERY_TRIAL_FAILED
    md = render_markdown(failed)
    section = md.split("## piper (agent)", 1)[1].split("\n## ", 1)[0]
    assert section.lstrip().startswith(
        f"No figures: all {errors['trials']} trials were API errors (the verdict says where"
    )
    assert "not estimable" not in section and "D50" not in section
    assert f"API errors: {errors['trials']} of {errors['trials']} trials" in section


def test_a_control_whose_every_trial_failed_is_said_after_its_agent(
    stored_profile: RunProfile,
) -> None:
    """No contrast with it can be made, and the verdict says why, once, with the command."""
    p = stored_profile.to_json()
    errors = p["agents"]["piper-control"]["api_errors"]
    errors["count"] = errors["trials"]
    variants = verdict(p).agents[0].variants
    assert variants.startswith(
        f"Its control piper-control has no figures: its run failed, all {errors['trials']} "
        f"trials were API errors; `mindledger trials {stored_profile.run.id} --agent "
        "piper-control --status error` shows what went wrong."
    ), variants
    assert "Also INVALID" not in variants.split("piper-control", 2)[-1]
    assert verdict(stored_profile).agents[0].variants == ""  # a healthy control: nothing


def test_a_history_says_once_what_a_mostly_failed_run_rests_on(
    stored_profile: RunProfile,
) -> None:
    from reports.history import history_of
    from reports.history_render import failed_runs

    p = stored_profile.to_json()
    errors = p["agents"]["piper"]["api_errors"]
    errors["count"] = errors["trials"] - 3
    history = history_of("piper", [stored_profile, p])
    assert [r.mostly_failed for r in history.runs] == [
        None,
        f"{errors['count']} of its {errors['trials']} trials were API errors: its figures "
        "rest on the 3 others",
    ]
    assert failed_runs(history)[0] == f"{stored_profile.run.id}: {history.runs[1].mostly_failed}."
    assert history.runs[1].to_dict()["mostly_failed"] == history.runs[1].mostly_failed


def test_the_profile_keeps_the_commonest_causes_of_api_errors(
    stored_profile: RunProfile,
) -> None:
    from reports.sections.cost import _causes

    errors = stored_profile.agents["piper"].api_errors
    assert errors is not None and errors.count > 0
    # the synthetic run's errors name no kind: each reads as an "error"
    assert [(c.kind, c.count) for c in errors.causes] == [("error", errors.count)]
    assert errors.causes[0].example == "HTTP 503 from the endpoint"
    causes = _causes(
        ["timeout: no reply within 120 s\n  (POST http://h/v1/chat/completions)"] * 3
        + ["malformed: " + "x" * 500, "malformed: y", "no kind here", None]
        + [f"{k}: it broke" for k in ("connection", "server_error")]
    )
    assert [c.model_dump() for c in causes] == [
        {"kind": "timeout", "count": 3,
         "example": "no reply within 120 s (POST http://h/v1/chat/completions)"},
        {"kind": "malformed", "count": 2, "example": "x" * 199 + "…"},
        {"kind": "error", "count": 2, "example": "no kind here"},
    ]  # fmt: skip
    # the verdict says the commonest, and that there were others
    p = stored_profile.to_json()
    p["agents"]["piper"]["api_errors"]["count"] = p["agents"]["piper"]["api_errors"]["trials"]
    p["agents"]["piper"]["api_errors"]["causes"] = [c.model_dump() for c in causes]
    said = verdict(p).agents[0].figures
    assert "were API errors (3 × timeout: no reply within 120 s (POST http://h/v1/chat/" in said
    assert said.split("chat/completions)", 1)[1].startswith("; and others). ")


def test_the_profile_counts_answers_that_could_not_be_read(
    stored_run: StoredRun, stored_profile: RunProfile
) -> None:
    rows = stored_run.store.trials(stored_run.run_id)
    for name, a in stored_profile.agents.items():
        mine = [t for t in rows if t.agent == name and t.status == "ok"]
        unread = [t for t in mine if t.answer_json in (None, "null")]
        assert a.api_errors is not None
        assert a.api_errors.unparsed == len(unread), name
        assert (a.api_errors.unparsed_example is None) == (not unread)


def test_an_agent_whose_answers_mostly_could_not_be_read_says_so_first(
    stored_profile: RunProfile,
) -> None:
    """Each unread answer counts as wrong: more than half of them, and the verdict says so
    before the figures, with why the first could not be read and the command that shows them;
    most trials API errors is said instead, as it comes first."""
    p = stored_profile.to_json()
    errors = p["agents"]["piper"]["api_errors"]
    answered = errors["trials"] - errors["count"]
    run_id = stored_profile.run.id
    see = f"(`mindledger trials {run_id} --agent piper --status unparsed` shows them). It is "
    for unread, said in (
        (answered, f"none of its {answered} answers could be read (no ANSWER line)"),
        (answered - 1, f"{answered - 1} of its {answered} answers could not be read (no ANSWER"),
        (answered // 2, None),
    ):
        errors.update(unparsed=unread, unparsed_example="no ANSWER line")
        text = verdict(p).agents[0].figures
        if said is None:
            assert text.startswith("piper (agent under test) is "), text
            continue
        assert text.startswith(f"piper (agent under test): {said}"), text
        assert f", and each counts as wrong, so its figures say more about how it replies than " \
            f"about what it knows {see}valid (true-belief controls " in text  # fmt: skip
    errors.update(count=errors["trials"] - 2, unparsed=2)
    assert "trials were API errors" in verdict(p).agents[0].figures
    assert "could be read" not in verdict(p).agents[0].figures
