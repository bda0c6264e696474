"""``mindledger judge``: the extraction judge over a stored run's game trials
(:mod:`harness.run.judging`)."""

from __future__ import annotations

import asyncio

import click
from rich.console import Console

from harness.cli.common import get_settings, get_store, resolve_run
from harness.cli.conventions import an_id
from harness.cli.progress import CountProgress, progress_option
from harness.config.settings import Settings
from harness.run.judging import JudgeCounts, judge_config, judge_stored_run
from ledger.store import Store
from mindledger.errors import ConfigError, MindledgerError
from mindledger.words import counted

__all__ = ["describe_counts", "judge", "judge_after_run"]


def describe_counts(counts: JudgeCounts) -> str:
    """One line saying what a judge pass did."""
    parts = [
        f"judge {counts.judge}: {counted(counts.judged, 'trial')} judged",
        f"{counts.already} already judged" if counts.already else "",
        f"{counted(counts.calls, 'call')}, {counted(counts.cache_hits, 'cache hit')}",
        f"{counted(counts.parse_failures, 'unparseable reply', 'unparseable replies')}"
        if counts.parse_failures else "",
        f"{counted(counts.ungrounded, 'ungrounded quote')}, {counted(counts.dropped, 'value')} dropped"
        if counts.ungrounded else "",
        f"{counted(counts.api_errors, 'API error')} (run again to retry)" if counts.api_errors else "",
        f"{counted(counts.no_reasoning, 'game trial')} without reasoning text" if counts.no_reasoning
        else "",
        f"{counted(counts.pruned, 'game trial')} whose transcript was pruned" if counts.pruned else "",
    ]
    return "; ".join(p for p in parts if p)


def _judge(
    store: Store,
    settings: Settings,
    run_id: str,
    judge_name: str | None,
    console: Console,
    *,
    quiet_without_games: bool = False,
    progress_mode: str = "auto",
) -> JudgeCounts:
    name = judge_config(settings, judge_name).name
    counts = asyncio.run(
        judge_stored_run(
            store, settings, run_id, judge=judge_name, progress=CountProgress(console, f"judge {name}", progress_mode),
        )
    )
    if quiet_without_games and not (counts.eligible or counts.no_reasoning or counts.pruned):
        return counts
    console.print(describe_counts(counts))
    for error in counts.errors:
        console.print(f"  {error}")
    return counts


def judge_after_run(store: Store, settings: Settings, run_id: str, console: Console) -> None:
    """The judge stage at the end of ``mindledger run``: judge the run's game trials when
    ``judge_after_run`` is on (with the ``judge_agent`` setting's judge). The run is stored
    whatever happens here: a judge that cannot start is reported, not raised."""
    if not settings.judge_after_run:
        return
    try:
        _judge(store, settings, run_id, None, console, quiet_without_games=True)
    except MindledgerError as exc:
        console.print(
            f"[yellow]the judge stage did not run:[/] {exc}; retry with `mindledger judge "
            f"{run_id}`"
        )


@click.command("judge")
@click.argument("run_id", callback=an_id)
@click.option(
    "--judge",
    "judge_name",
    default=None,
    metavar="AGENT",
    help="The judge: any declared agent, or 'local' (the embedded model). Default: the "
    "judge_agent setting (local unless set).",
)
@progress_option
def judge(run_id: str, judge_name: str | None, progress_mode: str) -> None:
    """Read the chains of thought of a run's game trials with the extraction judge.

    For every level-k game trial with reasoning text and no judgement by this judge, the
    judge extracts the stated belief, the written chain and the mentalizing flag with the
    games paper's prompt (Appendix D); a value whose quote is not verbatim in the chain of
    thought is dropped and counted; the trial is re-scored with the rest and the judgement
    stored. The profile then reports K_L, best-response and chain consistency and the
    mentalizing rate from it where the answer stated none. Judge replies are cached, so
    running it again (or after an interruption) only judges what is left.

    \b
    RUN_ID is a run's id, the start of its id, latest or latest~N.

    \b
    Examples:
      mindledger judge latest
      mindledger judge 20261130-031500-ab12cd --judge local
    """
    ctx = click.get_current_context()
    settings = get_settings(ctx)
    try:  # an unknown judge is named before the database opens
        judge_config(settings, judge_name)
    except ConfigError as exc:
        if not judge_name or exc.key != "judge_agent":
            raise
        raise ConfigError(str(exc).removeprefix(f"{exc.key}: "), key="--judge") from None
    run_id = resolve_run(ctx, run_id)
    _judge(
        get_store(ctx), settings, run_id, judge_name, Console(stderr=True, soft_wrap=True),
        progress_mode=progress_mode,
    )
