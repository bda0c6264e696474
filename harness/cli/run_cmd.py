"""``mindledger run``, ``runs`` and ``quickstart``."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.cli.common import echo_json, get_settings, get_store, get_workspace, resolve_run
from harness.cli.conventions import an_id, format_option, options_as
from harness.cli.progress import TrialProgress, duration, progress_option
from harness.cli.tables import print_table, stdout_console
from harness.config.settings import Settings
from harness.config.workspace import SeedPolicy
from harness.run.build import plan_agents
from harness.run.runner import RunSummary
from harness.run.runs import create_run, execute_stored_run
from harness.run.suites import SUITES, get_suite
from ledger.store import Store
from mindledger.disclosure import seed_phrase, shown_seed
from mindledger.errors import RunFailedError, readable

if TYPE_CHECKING:
    from reports.trials import RunFailures

QUICKSTART_REFERENCES = (
    "oracle",
    "random",
    "depth-capped:2",
    "reality-leak",
    "not-reality",
    "level:2",
)


def summary_record(
    store: Store, run_id: str, summary: RunSummary | None, failures: RunFailures, share: float
) -> dict[str, Any]:
    """The run's closing summary as ``run --format json`` prints it: the run, per agent its
    trials, answers scored and right, failures (API errors and unreadable answers) and their
    causes, and whether the run failed (an agent's failure share over ``share``)."""
    run = store.get_run(run_id)
    counts = store.trial_counts(run_id)
    n_items = len(store.run_item_ids(run_id))
    agents = []
    for af in failures.agents:
        c = counts.get(af.agent, {})
        scored = c.get("ok", 0)
        agents.append({
            "name": af.agent,
            "role": af.role,
            "items": n_items,
            "trials": sum(af.counts.values()),
            "scored": scored,
            "correct": c.get("correct", 0),
            "accuracy": c.get("correct", 0) / scored if scored else None,
            "errors": af.counts.get("error", 0),
            "unparsed": af.counts.get("unparsed", 0),
            "not_applicable": af.counts.get("n/a", 0),
            "failed": af.failed,
            "failure_share": af.failure_share if af.attempted else None,
            "causes": [
                {"status": c.outcome, "kind": c.kind, "count": c.count, "example": c.example,
                 "item": c.example_item}
                for c in af.causes
            ],
        })
    over = failures.over(share)
    record: dict[str, Any] = {
        "run": {
            "id": run.id,
            "suite": run.suite,
            "status": run.status,
            "seed": shown_seed(run.seed, held_out=run.held_out),
            "held_out": run.held_out,
        },
        "agents": agents,
        "attempted": summary.attempted if summary else 0,
        "skipped": summary.skipped if summary else 0,
        "wall_s": round(summary.wall_s, 3) if summary else 0.0,
        "max_failure_share": share,
        "failed_agents": [a.agent for a in over],
        "exit_code": RunFailedError.exit_code if over else 0,
    }
    forecasts = forecast_records(store, run_id)
    if forecasts:
        record["forecasts"] = forecasts
    return record


def forecast_records(store: Store, run_id: str) -> list[dict[str, Any]]:
    """The run's self-forecasts as the closing summary shows them: the figure, what the run
    made of it, the forecast's median and 90% interval, and its loss (or why it has none)."""
    from ledger.forecasts import read_forecasts
    from reports.self_forecast import forecast_line

    out = []
    for f in read_forecasts(store.engine, run_id=run_id):
        line = forecast_line(f)  # median and bands as the reports read them
        out.append({
            "id": f.id,
            "agent": f.predictor,
            "figure": f.figure,
            "status": f.status,
            "outcome": line.outcome,
            "median": line.median,
            "interval_90": None if line.interval_90 is None else list(line.interval_90),
            "loss": f.loss,
            "naive_loss": f.naive_loss,
            "note": f.note,
        })
    return out


def _forecast_line(f: dict[str, Any]) -> str:
    head = f"  {f['agent']} {f['figure']}: "
    if f["status"] != "scored":
        why = {"committed": "not revealed yet (`mindledger forecast reveal RUN`)"}.get(
            f["status"], f["note"] or f["status"]
        )
        return head + f"{f['status']} — {why}"
    said = "" if f["median"] is None else f", forecast median {f['median']:.3g}"
    if f["interval_90"] is not None:
        lo, hi = f["interval_90"]
        said += f" (90% {lo:.3g}–{hi:.3g})"
    naive = "" if f["naive_loss"] is None else f", naive {f['naive_loss']:.3g}"
    return head + f"outcome {f['outcome']:.3g}{said}; loss {f['loss']:.3g}{naive}"


def print_summary(console: Console, record: dict[str, Any]) -> None:
    """The closing table of a run: per agent its trials, right answers and failures."""
    run = record["run"]
    seed = "seed withheld (held-out run)" if run["held_out"] and run["seed"] is None else (
        f"seed {run['seed']}"
    )
    status = run["status"]
    if record["failed_agents"]:  # every trial attempted, but too many failed: not a success
        n = len(record["failed_agents"])
        status += f" · FAILED ({n} agent{'s' if n != 1 else ''} over the failure limit)"
    table = Table(
        title=f"run {run['id']} · {run['suite']} · {seed} · {status}",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("agent", overflow="fold")
    table.add_column("role")
    for col in ("trials", "correct", "accuracy", "failed", "n/a"):
        table.add_column(col, justify="right")
    for a in record["agents"]:
        failed = f"{a['failed']}" if not a["failed"] else (
            f"{a['failed']} ({a['failure_share']:.0%})"
        )
        table.add_row(
            a["name"],
            a["role"],
            f"{a['trials']}/{a['items']}",
            f"{a['correct']}/{a['scored']}",
            "n/a" if a["accuracy"] is None else f"{a['accuracy']:.1%}",
            Text(failed, style="bold red" if a["name"] in record["failed_agents"] else ""),
            str(a["not_applicable"]),
        )
    print_table(console, table, drop=("n/a", "role", "correct"))
    note = tolerated_failures(record)
    if note:
        console.print(note, highlight=False, markup=False)
    if record["attempted"] or record["skipped"]:
        console.print(
            f"{record['attempted']} trial{'s' if record['attempted'] != 1 else ''} attempted "
            f"in {duration(record['wall_s'])}"
            + (f"; {record['skipped']} already stored" if record["skipped"] else ""),
            highlight=False,
        )
    if record.get("forecasts"):
        console.print("self-forecasts (scored in the ledger):", highlight=False)
        for f in record["forecasts"]:
            console.print(_forecast_line(f), highlight=False, markup=False)


def tolerated_failures(record: dict[str, Any]) -> str | None:
    """Two lines on the failed trials of agents within the share a run may lose (those over it
    get :func:`check_failures`' account, in the same form): what they were, then the command
    that shows them on a line of its own, so that a count in the table's "failed" column never
    leaves its reader guessing which status to list. None when there are none."""
    within = [
        a for a in record["agents"] if a["failed"] and a["name"] not in record["failed_agents"]
    ]
    if not within:
        return None
    said = []
    for a in within:
        kinds = [f"{a['errors']} error{'s' if a['errors'] != 1 else ''}"] if a["errors"] else []
        if a["unparsed"]:
            kinds.append(f"{a['unparsed']} unparsed")
        said.append(f"{a['name']} {' and '.join(kinds)}")
    agent = within[0]["name"] if len(within) == 1 else None
    gloss = (
        " (unparsed: no answer could be read from the reply)"
        if any(a["unparsed"] for a in within) else ""
    )
    return (
        f"failed trials, within the {record['max_failure_share']:.0%} a run may lose "
        f"(max_failure_share): {'; '.join(said)}{gloss}\n"
        f"  see them: {failed_trials_command(record['run']['id'], agent)}"
    )


def failed_trials_command(run_id: str, agent: str | None = None) -> str:
    """The command that lists the run's failed trials (API errors and unreadable answers), of
    ``agent`` alone when given."""
    who = f" --agent {agent}" if agent else ""
    return f"mindledger trials {run_id}{who} --status error,unparsed"


def check_failures(console: Console, record: dict[str, Any]) -> None:
    """Say loudly which agents failed over the allowed share and why (each cause with its
    count and one example, then the command that lists them), and raise RunFailedError;
    nothing when no agent did."""
    failed = [a for a in record["agents"] if a["name"] in record["failed_agents"]]
    if not failed:
        return
    run_id = record["run"]["id"]
    share = record["max_failure_share"]
    for a in failed:
        console.print(
            f"[bold red]{a['name']}[/]: {a['failed']} of its {a['trials'] - a['not_applicable']} "
            f"trials failed ({a['failure_share']:.0%}; a run may lose {share:.0%}, setting "
            "max_failure_share):",
            highlight=False,
        )
        for cause in a["causes"][:5]:
            example = str(cause["example"]).removeprefix(f"{cause['kind']}: ")
            example = " ".join(example.split())  # one line a cause, whatever the agent wrote
            console.print(
                f"  {cause['count']:>5} × {cause['kind']}: {readable(example, 300)}",
                highlight=False,
                markup=False,
            )
        if len(a["causes"]) > 5:
            console.print(f"  … and {len(a['causes']) - 5} more causes", highlight=False)
        console.print(
            f"  see them: {failed_trials_command(run_id, a['name'])}",
            highlight=False,
            markup=False,
        )
    names = " and ".join(
        [", ".join(a["name"] for a in failed[:-1]), failed[-1]["name"]] if len(failed) > 1
        else [failed[0]["name"]]
    )
    raise RunFailedError(
        f"run {run_id} is stored, but {names} failed on more than {share:.0%} of "
        f"{'its' if len(failed) == 1 else 'their'} trials (exit code {RunFailedError.exit_code})"
    )


def finish(
    store: Store,
    settings: Settings,
    run_id: str,
    summary: RunSummary | None,
    *,
    fmt: str = "table",
    out: Console | None = None,
    err: Console | None = None,
) -> dict[str, Any]:
    """The end of a run: its summary on stdout (a table, or JSON with ``fmt="json"``), then,
    when an agent failed over ``max_failure_share``, its causes on stderr and RunFailedError.
    Returns the summary record."""
    from reports.trials import failure_summary

    failures = failure_summary(store, run_id)
    record = summary_record(store, run_id, summary, failures, settings.max_failure_share)
    if fmt == "json":
        echo_json(record)
    else:
        print_summary(out or stdout_console(), record)
    check_failures(err or Console(stderr=True, soft_wrap=True), record)
    return record


def _run(
    store: Store, settings: Settings, run_id: str, console: Console, progress_mode: str = "auto"
) -> RunSummary:
    progress = TrialProgress(console, progress_mode)
    try:
        summary = asyncio.run(execute_stored_run(store, settings, run_id, progress=progress))
    except KeyboardInterrupt:
        # main says "Interrupted." once, after this
        console.print(
            f"run {run_id} keeps every trial stored so far: continue with "
            f"`mindledger run --resume {run_id}`",
            highlight=False,
            markup=False,
        )
        raise
    return summary


def _held_forecasts(opts: RunOptions) -> list[tuple[str, dict[str, Any]]]:
    """The ``--forecast`` options as (figure, body) pairs, checked (InputError naming the
    option) before anything is stored."""
    from harness.cli.forecast_cmd import quantiles_forecast
    from mindledger.errors import InputError
    from mindledger.forecasts import figure, forecast_body, parse_forecast

    if not opts.forecasts:
        return []
    if opts.resume_id or len(opts.agents) != 1:
        raise InputError(
            "a forecast is of the one agent under test of a new run: give one --agent, "
            "without --resume",
            where="--forecast",
        )
    out = []
    for name, text in opts.forecasts:
        fig = figure(name, where="--forecast")
        body = forecast_body(parse_forecast(quantiles_forecast(text, "--forecast"), "--forecast"), None)
        out.append((fig.name, body))
    return out


def _commit_forecasts(
    ctx: click.Context, agent: str, run_id: str, held: list[tuple[str, dict[str, Any]]]
) -> None:
    """Commit the run's self-forecasts (held by the service) before its first trial."""
    if not held:
        return
    from ledger.protocol import commitment, new_salt

    ledger = get_workspace(ctx).ledger
    for name, body in held:
        salt = new_salt()
        ledger.commit_forecast(agent, run_id, name, commitment(body, salt), held=(body, salt.hex()))


@dataclass(frozen=True)
class RunOptions:
    """The options of ``mindledger run``, as given."""

    suite: str
    """--suite: the suite preset."""
    agents: tuple[str, ...]
    """--agent: the agents under test."""
    control: str | None
    """--control: the control agent, instead of each agent's own."""
    no_control: bool
    """--no-control: run without a control."""
    references: tuple[str, ...]
    """--reference: the reference agents' policies."""
    ablate: tuple[str, ...]
    """--ablate: the modules whose switched-off variants run too."""
    seed: int | None
    """--seed: the run's seed (None: drawn fresh)."""
    held_out: bool
    """--held-out: draw from the held-out seed share."""
    hitom_path: Path | None
    """--hitom: the Hi-ToM file that adds test B3."""
    use_queue: bool
    """--queue: queue the trials for workers instead of running them here."""
    resume_id: str | None
    """--resume: the run to continue."""
    forecasts: tuple[tuple[str, str], ...]
    """--forecast: the agent's self-forecasts for the run, (figure, quantiles) each."""
    progress_mode: str
    """--progress: how progress is shown."""
    fmt: str
    """--format: how the closing summary is printed."""


@click.command()
@click.option(
    "--suite",
    type=click.Choice(sorted(SUITES)),
    default="quick",
    show_default=True,
    help="Suite preset: " + "; ".join(f"{s.name}: {s.description}" for s in SUITES.values()),
)
@click.option(
    "--agent",
    "agents",
    multiple=True,
    metavar="NAME",
    help="Agent under test, from the settings or built in ('local'); repeatable.",
)
@click.option(
    "--control",
    default=None,
    metavar="NAME",
    help="Control agent (default: the agent's `control` setting, else the same model "
    "with a minimal system prompt and no modules).",
)
@click.option("--no-control", is_flag=True, help="Run without a control (not recommended).")
@click.option(
    "--reference",
    "references",
    multiple=True,
    metavar="POLICY",
    help="Reference agent: oracle, random, depth-capped:N, reality-leak, not-reality, "
    "noisy:P, level:K, believer:K; repeatable.",
)
@click.option(
    "--ablate",
    multiple=True,
    metavar="MODULE",
    help="Add a variant of the agent with MODULE switched off: one of the reference "
    "scaffold's (perspective, witness_log, opponent_sim) or of the agent's own, declared in "
    "the settings as [agents.NAME.own_modules.MODULE] with the headers, body fields, model, "
    "endpoint or env that switch it off; repeatable. The profile credits each module "
    "(full − ablated, paired).",
)
@click.option("--seed", type=int, default=None, help="Seed (default: drawn fresh and logged).")
@click.option(
    "--held-out",
    is_flag=True,
    help="Draw from the held-out seed share (scheduled runs). The seed is not printed: it "
    "regenerates the run's items (operators: `mindledger runs --reveal-held-out`).",
)
@click.option(
    "--hitom",
    "hitom_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Hi-ToM JSON file, adds test B3.",
)
@click.option(
    "--queue",
    "use_queue",
    is_flag=True,
    help="Store the run and queue its trials in batches for `mindledger worker` processes "
    "(PostgreSQL) instead of running them here.",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    callback=an_id,
    metavar="RUN_ID",
    help="Continue an interrupted run: attempt only what has no stored trial (RUN_ID may be "
    "latest, latest~N or the start of an id).",
)
@click.option(
    "--forecast",
    "forecasts",
    multiple=True,
    nargs=2,
    metavar="FIGURE QUANTILES",
    help="A self-forecast of the agent's own FIGURE for this run (d50, false_belief_accuracy, "
    "accuracy_at_depth:R2, change:d50…) as LEVEL=VALUE pairs, 0.05=1.5,0.5=2.5,0.95=3.5: "
    "committed before the first trial, held by the service and scored when the run ends; "
    "one --agent only; repeatable.",
)
@progress_option
@format_option("the run's summary: per agent its trials, right answers, failures and causes")
@options_as(RunOptions)
def run(opts: RunOptions) -> None:
    """Run a suite against agents, their controls and reference agents.

    Items are generated from the seed and stored with the run before any trial; every trial is
    stored as it completes, so an interrupted run loses nothing and --resume finishes it.

    \b
    Suites and their items per agent (what each holds: --suite below):
    {suites}

    \b
    Examples:
      mindledger run --suite quick --agent local --reference oracle --reference depth-capped:2
      mindledger run --suite baseline --agent mybot --ablate perspective
      mindledger run --suite baseline --agent mybot --ablate tom   # an own module
      mindledger run --resume 20261130-031500-ab12cd
      mindledger run --agent mybot --forecast d50 0.05=1.5,0.5=2.5,0.95=3.5
    """
    ctx = click.get_current_context()
    settings = get_settings(ctx)
    if opts.use_queue:
        from harness.queue.batches import conninfo

        conninfo(settings)  # PostgreSQL only: say so before anything is stored
    console = Console(stderr=True, soft_wrap=True)  # a log keeps its lines whole
    held = _held_forecasts(opts)  # checked before anything is stored
    if opts.resume_id:
        if opts.agents or opts.references or opts.ablate or opts.seed is not None:
            raise click.UsageError("--resume takes no other run options: the run's own are used")
        store = get_store(ctx)
        run_id = resolve_run(ctx, opts.resume_id)
        console.print(f"resuming run {run_id}", highlight=False)
    else:
        # every argument is checked before the database is opened (or created)
        get_suite(opts.suite)
        SeedPolicy.of(settings).check_seed(opts.seed, held_out=opts.held_out)
        planned = plan_agents(
            settings,
            agents=opts.agents,
            control=opts.control,
            references=opts.references,
            ablate=opts.ablate,
            no_control=opts.no_control,
        )
        store = get_store(ctx)
        run_id, used_seed, n = create_run(
            store,
            settings,
            suite=opts.suite,
            planned=planned,
            seed=opts.seed,
            held_out=opts.held_out,
            hitom_path=opts.hitom_path,
        )
        _commit_forecasts(ctx, opts.agents[0] if held else "", run_id, held)
        seed_text = seed_phrase(used_seed, held_out=store.get_run(run_id).held_out)
        console.print(
            f"run {run_id}: suite {opts.suite}, {seed_text}, {n} items × "
            f"{len(planned)} agent{'s' if len(planned) != 1 else ''} "
            f"({', '.join(ra.name for ra in planned)})"
        )
    if opts.use_queue:
        from harness.queue.batches import enqueue_run

        done = enqueue_run(store, settings, run_id)
        stalled = f", re-queued {done.retried} stalled batch(es)" if done.retried else ""
        console.print(
            f"queued {done.deferred} batch(es) of run {run_id}{stalled}; start workers with "
            "`mindledger worker` (any machine with this database URL)"
        )
        return
    summary = _run(store, settings, run_id, console, opts.progress_mode)
    try:
        finish(store, settings, run_id, summary, fmt=opts.fmt, err=console)
    finally:
        from harness.cli.judge_cmd import judge_after_run  # the judge stage, when switched on

        judge_after_run(store, settings, run_id, console)


def _suite_sizes() -> str:
    """The help's table of suites and their items per agent, from the presets themselves."""
    lines = []
    for suite in SUITES.values():
        extra = " (+ B3 100 Hi-ToM items with --hitom)" if "B1" in suite.counts else ""
        lines.append(f"  {suite.name:<9} {suite.total:>5,}{extra}")
    return "\n    ".join(lines)  # under the docstring's indentation


run.help = (run.help or "").replace("{suites}", _suite_sizes())
