"""``mindledger quickstart``: the embedded model and the reference agents on the quick suite,
end to end, then a few plain lines on what the newcomer just saw.

The lines come from the run's own profile (:func:`explain_run`, pure): what the agent under test
scored against chance and whether its true-belief controls let its profile count, what the
reference agents came out as and whether the suite diagnosed each as what it is
(:func:`reports.diagnose_references`), then where to go next.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import click

from harness.cli.common import get_settings, get_store
from harness.cli.progress import progress_option

__all__ = ["DASHBOARD_COMMAND", "README_SECTION", "explain_run", "quickstart"]

DASHBOARD_COMMAND = "mindledger dashboard"
README_SECTION = "Connecting a real agent"
"""The README section (a ``##`` heading) that connects a real agent; a test keeps it there."""


def _pct(value: float) -> str:
    return f"{100.0 * value:.0f}%"


def _count(block: Mapping[str, Any], what: str) -> str:
    """``3 of the 7 false-belief questions (43%)`` from a proportion block."""
    k, n, value = block.get("k"), block.get("n"), block.get("value")
    if k is None or not n or not isinstance(value, int | float):
        return f"none of the {what}"
    return f"{k} of the {n} {what} ({_pct(value)})"


def _against_chance(block: Mapping[str, Any], chance: Any) -> str:
    """Where a proportion lies against the chance rate: its 95% Wilson interval (at any n,
    so a quick run's few items get a verdict too) above, below or around chance."""
    from reports import wilson_interval

    k, n = block.get("k"), block.get("n")
    if not isinstance(chance, int | float) or k is None or not n:
        return ""
    lo, hi = wilson_interval(k, n)
    where = "above" if lo > chance else "below" if hi < chance else "no better than"
    return f"{where} the {_pct(chance)} that guessing gets"


def _agent_lines(name: str, agent: Mapping[str, Any]) -> list[str]:
    """What the profile says of an agent under test: false-belief accuracy against chance,
    then whether its controls let the profile count."""
    from reports import TRUE_BELIEF_THRESHOLD

    fb = agent.get("false_belief_accuracy") or {}
    d50 = agent.get("d50") or {}
    threshold = float((agent.get("validity") or {}).get("threshold") or TRUE_BELIEF_THRESHOLD)
    lines = []
    if fb.get("n"):
        verdict = _against_chance(fb, d50.get("chance"))
        lines.append(
            f"{name}, the agent under test, answered {_count(fb, 'false-belief questions')} "
            "right" + (f": {verdict}." if verdict else ".")
        )
    controls = (
        (agent.get("true_belief_control_accuracy") or {}, "true-belief controls"),
        (agent.get("reality_check") or {}, "reality checks"),
    )
    if agent.get("valid") is False:
        failed = [
            _count(block, what)
            for block, what in controls
            if block.get("n")
            and (not isinstance(block.get("value"), int | float) or block["value"] < threshold)
        ]
        lines.append(
            f"It answered {' and '.join(failed) or 'too few of its controls'} right, below "
            f"the {_pct(threshold)} a reasoner must reach, so its profile is marked INVALID: its "
            "D50, false-belief accuracy and leakage resistance are not counted (a model that "
            "fails the controls can score on false-belief questions by a shortcut or by chance)."
        )
    elif agent.get("valid") is True:
        lines.append(
            f"It passed the controls ({' and '.join(_count(b, w) for b, w in controls)} right), "
            f"so its profile counts: D50 {d50.get('display') or 'not estimable'}."
        )
    else:
        lines.append(
            "The run had no true-belief controls, so whether its profile counts is unchecked "
            f"(D50 {d50.get('display') or 'not estimable'})."
        )
    return lines


def _reference_figure(name: str, agent: Mapping[str, Any]) -> tuple[int, str]:
    """What the profile says of one valid (or unchecked) reference agent, in a few words,
    after its rank in the sentence: depth figures first, then leakage, then the games."""
    policy = str((agent.get("spec") or {}).get("policy") or name.removeprefix("ref:"))
    d50 = agent.get("d50") or {}
    signals = agent.get("depth_signals") or {}
    if (agent.get("leakage_resistance") or {}).get("value") == 0:
        return 2, f"{policy} answers reality for every false belief (leakage resistance 0%)"
    rank = {"beyond": 0, "estimated": 1, "bracketed": 1, "below": 1}.get(str(d50.get("status")))
    if rank is not None:
        return rank, f"{policy} has D50 {d50.get('display')}"
    if signals.get("available"):
        from reports.present import level_text

        k_b = signals.get("K_B") or {}
        if k_b.get("identifiable") is False:
            return 3, f"{policy} is not identifiable as a level-k player in the games"
        return 3, f"{policy} plays at {level_text(k_b)} in the games"
    return 4, f"{policy} was not measured on this run"


def _references_line(profile: Mapping[str, Any], references: Mapping[str, Any]) -> str:
    from reports import diagnose_references

    valid = {n: a for n, a in references.items() if a.get("valid") is not False}
    figures = [text for _, text in sorted(_reference_figure(n, a) for n, a in valid.items())]
    invalid = [
        str((a.get("spec") or {}).get("policy") or n.removeprefix("ref:"))
        for n, a in references.items()
        if a.get("valid") is False
    ]
    if invalid:
        names = invalid[0] if len(invalid) == 1 else f"{', '.join(invalid[:-1])} and {invalid[-1]}"
        verb = "is" if len(invalid) == 1 else "are"
        figures.append(f"{names} {verb} marked invalid by the controls")
    problems = diagnose_references({**profile, "agents": references})
    if problems:
        verdict = (
            f"The reference agents are scripted reasoners, but {len(problems)} of their "
            "figures did not come out as designed (" + "; ".join(problems) + "), so read this "
            "run with care"
        )
    else:
        verdict = (
            "The reference agents are scripted reasoners, and the suite diagnosed each as what "
            "it is"
        )
    return f"{verdict}: {'; '.join(figures)}."


def explain_run(profile: Mapping[str, Any]) -> list[str]:
    """A few plain lines on what a quickstart run showed, computed from its profile (pure):
    the agent under test against chance and its validity, the reference agents as the suite
    diagnosed them, then the command that opens the dashboard and the README section that
    connects a real agent."""
    agents: Mapping[str, Any] = profile.get("agents") or {}
    lines = ["What you just saw:"]
    for name, agent in agents.items():
        if agent.get("role") == "agent":
            lines += _agent_lines(name, agent)
    references = {n: a for n, a in agents.items() if a.get("role") == "reference"}
    if references:
        lines.append(_references_line(profile, references))
    lines.append(f"Browse the results: {DASHBOARD_COMMAND}")
    lines.append(f'Evaluate your own agent: the README section "{README_SECTION}".')
    return lines


@click.command()
@click.option("--seed", type=int, default=None, help="Seed (default: drawn fresh).")
@progress_option
def quickstart(seed: int | None, progress_mode: str) -> None:
    """Start the embedded model and run the quick suite end to end.

    Runs the `local` agent (SmolLM2-135M with the reference scaffold), its control, and the
    reference agents on the quick suite, stores everything in the configured database (SQLite
    in the data directory by default), writes the report next to it, and ends with a few
    lines on what the run showed. Exits 3 (after saying why) when an agent's trials mostly
    failed, as `mindledger run` does.

    \b
    Examples:
      mindledger quickstart
      mindledger quickstart --seed 12
      mindledger quickstart --progress lines 2> quickstart.log
    """
    from rich.console import Console

    from harness.build import plan_agents
    from harness.cli.report_cmd import write_reports
    from harness.cli.run_cmd import (
        QUICKSTART_REFERENCES,
        _run,
        check_failures,
        print_summary,
        summary_record,
    )
    from harness.cli.tables import stdout_console
    from harness.local_model import server_count
    from harness.runs import create_run
    from reports import build_profile
    from reports.trials import failure_summary

    ctx = click.get_current_context()
    settings = get_settings(ctx)
    store = get_store(ctx)
    console = Console(stderr=True, soft_wrap=True)  # a log keeps its lines whole
    planned = plan_agents(settings, agents=("local",), references=QUICKSTART_REFERENCES)
    run_id, used_seed, n = create_run(store, settings, suite="quick", planned=planned, seed=seed)
    console.print(
        f"run {run_id}: quick suite, seed {used_seed}, {n} items × {len(planned)} agents",
        highlight=False,
    )
    servers = server_count(settings.model_servers)
    console.print(
        "starting the embedded model (SmolLM2-135M-Instruct via llama.cpp on 127.0.0.1: "
        f"{servers} server{'s' if servers != 1 else ''} of {settings.model_threads} "
        f"thread{'s' if settings.model_threads != 1 else ''})…",
        highlight=False,
    )
    summary = _run(store, settings, run_id, console, progress_mode)
    out = stdout_console()
    record = summary_record(
        store, run_id, summary, failure_summary(store, run_id), settings.max_failure_share
    )
    print_summary(out, record)
    url = settings.database_url
    where = url.split("///")[-1] if url.startswith("sqlite") else "the database"
    out.print(f"stored in {where} as run {run_id}", highlight=False)
    profile = build_profile(store, run_id)
    for p in write_reports(store, run_id, settings.home / "reports", profile=profile):
        out.print(f"report: {p}", highlight=False)
    sys.stdout.flush()
    click.echo("\n" + "\n".join(explain_run(profile)))
    check_failures(console, record)
