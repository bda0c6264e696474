"""``mindledger trials``: what each agent was asked and answered, trial by trial.

``mindledger trials RUN`` lists a run's trials (a table, JSON or CSV); with ``--item ID
--agent A`` it prints one trial whole: every message and tool call in order, the raw reply, the
answer read from it beside the expected answer, the score and the cause of a failure, and the
costs. The views are :mod:`reports.trials`'s.

``--format json`` prints one JSON array, a trial per object in the order they were stored (one
object with ``--item``): :meth:`reports.trials.TrialView.to_json` — ``run_id``, ``agent``,
``item_id``, ``family``, ``label``, ``status`` (ok, wrong, unparsed, error, answered, n/a),
``answer``, ``expected``, ``correct``, ``error`` (the cause of an error or unparsed trial, else
null), ``cause``, ``detail``, ``confidence``, ``turns``, ``tokens_in``, ``tokens_out``,
``latency_s``, ``raw_text``, ``prompt``, ``transcript`` (every message as sent and received),
``score``, ``provider``, ``withheld``. Keys are only ever added.

A held-out run's trials are listed without their items, prompts, answers and transcripts, and
none is shown whole, unless an operator passes ``--reveal-held-out`` (issue 28).
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from harness.cli.common import echo_json, get_store, reads_only, resolve_run
from harness.cli.conventions import LISTED, an_id, format_option
from mindledger.words import counted

if TYPE_CHECKING:
    from ledger.store import Store
    from reports.trials import TrialListing, TrialView

__all__ = ["STATUSES", "TERMINAL_ROWS", "render_trial", "trials"]

TERMINAL_ROWS = 50
"""Trials a listing shows on a terminal when no --limit is given (piped, it lists them all)."""

STATUSES = ("ok", "wrong", "unparsed", "error", "answered", "n/a")
"""What ``--status`` takes: :data:`reports.trials.OUTCOMES` (kept here so that ``--help``
does not import the reports; a test keeps them equal)."""

CSV_COLUMNS = ("run_id", "agent", "item_id", "family", "label", "status", "answer", "expected",
               "correct", "error", "detail", "confidence", "turns", "tokens_in", "tokens_out",
               "latency_s")  # fmt: skip
"""The columns of ``--format csv``: :meth:`TrialView.to_json`'s, without the transcript, the
score and the provider's record (JSON holds them)."""

TABLE_DROP = ("correct", "family", "depth/game", "agent", "expected")
"""The table's columns left out first when the terminal is too narrow for all of them."""

CELL = 28
"""Characters of an answer shown in a table cell; a longer one ends in …."""


@reads_only
@click.command("trials")
@click.argument("run_ref", metavar="RUN", callback=an_id)
@click.argument("item_ref", metavar="[ITEM]", required=False, callback=an_id)
@click.option("--agent", default=None, help="Only this agent's trials (with --item: whose trial).")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help=f"Only trials with this outcome: {', '.join(STATUSES)} (repeatable, or "
    "comma-separated). error: the agent could not be asked or broke the protocol; unparsed: "
    "no answer could be read from its reply.",
)
@click.option("--family", default=None, help="Only items of this family (nesttom, games, …).")
@click.option(
    "--limit",
    type=LISTED,
    default=None,
    help="At most this many trials. Without it, a table on a terminal shows the first "
    f"{TERMINAL_ROWS} (the tally under it counts them all); piped, or as JSON or CSV, every "
    "trial is listed.",
)
@click.option(
    "--item",
    default=None,
    callback=an_id,
    metavar="ID",
    help="Show one trial whole: ID is the item's id, its unique start (as listed), or its "
    "position in the run (1 is the first item).",
)
@click.option(
    "--reveal-held-out",
    is_flag=True,
    help="Show a held-out run's items, answers and transcripts too. For operators at this "
    "machine only: a held-out run's items must never reach the agent under test.",
)
@format_option(
    "an array of trials, each whole (with --item: the one trial; a table is then its text)",
    csv="a trial per row, without transcripts",
)
@click.pass_context
def trials(
    ctx: click.Context,
    run_ref: str,
    item_ref: str | None,
    agent: str | None,
    statuses: tuple[str, ...],
    family: str | None,
    limit: int | None,
    item: str | None,
    reveal_held_out: bool,
    fmt: str,
) -> None:
    """List RUN's trials: agent, item, family, depth or game, status (ok, wrong, unparsed,
    error, answered, n/a), answer, expected answer, correct, and the error's cause; or, with
    ITEM (or --item), show one trial whole: every message and tool call as sent and received,
    the raw reply, the answer read from it beside the expected one, the score, and latency and
    tokens. ITEM is as --item takes it.

    RUN is a run id, its unique start, latest, or latest~N (the N-th run before the newest).
    A held-out run's trials are listed without items, answers or transcripts unless
    --reveal-held-out (operators only).

    \b
    Examples:
      mindledger trials latest --status error          # why did trials fail?
      mindledger trials latest --agent mybot --status wrong --family nesttom
      mindledger trials latest 3f2a9c --agent mybot   # one trial whole
      mindledger trials latest~1 --agent mybot --format json | jq '.[] | select(.error)'
      mindledger trials 20261203-0425 --format csv > trials.csv
    """
    from harness.cli.tables import stdout_console
    from reports.trials import list_trials, one_trial

    if item_ref is not None:
        if item is not None and item != item_ref:
            raise click.UsageError(f"two items given ({item_ref} and --item {item}): one trial "
                                   "is shown at a time")  # fmt: skip
        item = item_ref
    store = get_store(ctx)
    run_id = resolve_run(ctx, run_ref)
    if item is not None:
        if fmt == "csv":
            raise click.UsageError("--item shows one trial: as a table (its text) or json, not csv")
        if statuses or family or limit:
            raise click.UsageError("--status, --family and --limit choose trials to list, not "
                                   "one trial to show: leave them out with --item")  # fmt: skip
        view = one_trial(store, run_id, agent or _only_agent(store, run_id), item,
                         reveal_held_out=reveal_held_out)  # fmt: skip
        if fmt == "json":
            echo_json(view.to_json())
        else:
            click.echo(render_trial(view), nl=False)
        return
    wanted = [s.strip() for given in statuses for s in given.split(",") if s.strip()]
    # on a terminal, a run's thousands of trials would scroll the tally out of sight
    on_screen = fmt == "table" and limit is None and stdout_console().is_terminal
    views = list_trials(store, run_id, agent=agent, outcome=wanted or None, family=family,
                        limit=TERMINAL_ROWS if on_screen else limit,
                        reveal_held_out=reveal_held_out)  # fmt: skip
    if store.get_run(run_id).held_out and not reveal_held_out and views:
        click.echo(f"note: run {run_id} is held out: its items, answers and transcripts are "
                   "withheld (operators: --reveal-held-out)", err=True)  # fmt: skip
    if not views:
        chosen = [f"agent {agent}"] if agent else []
        chosen += [f"status {', '.join(wanted)}"] if wanted else []
        chosen += [f"family {family}"] if family else []
        click.echo(f"no trials of run {run_id}"
                   + (f" match ({'; '.join(chosen)})" if chosen else " are stored yet"),
                   err=True)  # fmt: skip
    if fmt == "json":
        echo_json([v.to_json() for v in views])
    elif fmt == "csv":
        click.echo(_csv(views), nl=False)
    elif views:
        _table(views, show_agent=agent is None)
        click.echo(tally_line(views))
        if len(views) < views.total:
            click.echo(left_out_line(len(views), views.total, on_screen=on_screen))
        for line in failure_lines(views, stdout_console().width):
            click.echo(line, err=True)
        if not views[0].withheld:
            first = views[0]
            click.echo(f"one whole: mindledger trials {run_id} {_short_id(first)} "
                       f"--agent {first.agent}", err=True)  # fmt: skip


def tally_line(listing: TrialListing) -> str:
    """How many trials the filters matched, by outcome: ``6972 trials: 3810 ok, 2634 wrong``."""
    total = listing.total
    return f"{total:,} trial{'' if total == 1 else 's'}: " + ", ".join(
        f"{listing.matched[o]:,} {o}" for o in STATUSES if listing.matched[o]
    )


def failure_lines(views: Sequence[TrialView], width: int, most: int = 3) -> list[str]:
    """Why the listed trials failed (API errors and unreadable answers), which the table's
    error column can only name: each cause with how many trials it failed and the first one's
    whole reason, on one line cut to ``width``, the commonest ``most`` causes first."""
    failed = [v for v in views if v.outcome in ("error", "unparsed") and v.detail]
    if not failed:
        return []
    counts = Counter(v.cause or v.outcome for v in failed)
    example: dict[str, str] = {}
    for v in failed:
        example.setdefault(v.cause or v.outcome, " ".join(str(v.detail).split()))
    lines = ["why they failed:"]
    for cause, n in counts.most_common(most):
        line = f"  {n:>5} × {cause}: {example[cause].removeprefix(f'{cause}: ')}"
        lines.append(line if len(line) <= width else line[: width - 1] + "…")
    if len(counts) > most:
        lines.append(f"  … and {counted(len(counts) - most, 'other cause')}")
    return lines


def left_out_line(shown: int, total: int, *, on_screen: bool) -> str:
    """What a listing cut short left out, and how to see the rest."""
    if on_screen:
        return f"shown: the first {shown:,} of {total:,} (all: --limit {total}, or pipe the output)"
    return f"shown: the first {shown:,} of {total:,} (--limit {shown})"


def _only_agent(store: Store, run_id: str) -> str:
    """The run's one agent, when --item comes without --agent; else a usage error naming
    them."""
    names = [ra.name for ra in store.run_agents(run_id)]
    if len(names) == 1:
        return str(names[0])
    raise click.UsageError(f"--item needs --agent: run {run_id}'s agents are {', '.join(names)}")


# -- a listing -----------------------------------------------------------------------------


def _cut(text: str, width: int = CELL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _short_id(view: TrialView) -> str:
    """What the table shows of an item: the start of its hash (``--item`` takes it), or a
    withheld item's position."""
    if view.withheld:
        return view.item_id.removeprefix("item ")
    return view.item_id.removeprefix("sha256:")[:10]


def _table(views: Sequence[TrialView], *, show_agent: bool) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console
    from reports.trials import value_text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    heads = ["agent", "item", "family", "depth/game", "status", "answer", "expected", "correct",
             "error"]  # fmt: skip
    if not show_agent:
        heads.remove("agent")
    for head in heads:
        table.add_column(head, overflow="fold" if head == "agent" else "ellipsis")
    for v in views:
        cells = {
            "agent": v.agent,
            "item": _short_id(v),
            "family": v.family,
            "depth/game": v.label,
            "status": v.outcome,
            "answer": "" if v.withheld else _cut(value_text(v.answer)),
            "expected": "" if v.withheld else _cut(value_text(v.expected)),
            "correct": "" if v.correct is None else "yes" if v.correct else "no",
            "error": v.cause or "",
        }
        table.add_row(*(Text(cells[h]) for h in heads))  # text, never markup
    console = stdout_console()
    print_table(console, table, drop=TABLE_DROP)


def _csv(views: Sequence[TrialView]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for v in views:
        data = v.to_json()
        writer.writerow(_csv_cell(data[c]) for c in CSV_COLUMNS)
    return buf.getvalue()


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


# -- one trial whole -----------------------------------------------------------------------

_RULE = 72


def _heading(title: str) -> str:
    return f"── {title} " + "─" * max(3, _RULE - len(title) - 4)


def render_trial(view: TrialView) -> str:
    """One trial whole, as text for a terminal: its messages in order (each with its role,
    its content as sent, tool calls with their arguments indented), then the raw reply, the
    answer beside the expected one, the outcome and its cause, the score and the costs."""
    from reports.trials import (
        costs_text,
        message_blocks,
        outcome_text,
        printable,
        score_text,
        value_text,
    )

    where = " ".join(p for p in (view.family, view.label) if p)
    lines = [
        f"run {view.run_id} · agent {printable(view.agent)} · item {view.item_id}",
        f"{where} · {view.outcome}" if where else view.outcome,
        "",
    ]
    if view.prompt and not any(m.get("role") == "user" for m in view.transcript):
        lines += [_heading("the item's prompt (no message was sent)"), printable(view.prompt), ""]
    if view.transcript_pruned:
        lines += [f"transcript pruned on {view.transcript_pruned}", ""]
    for block in message_blocks(view.transcript):
        lines += [_heading(block.title), block.body, ""]
    mark = {"ok": "  (right)", "wrong": "  (wrong)"}.get(view.outcome, "")
    confidence = f"   confidence {view.confidence}" if view.confidence is not None else ""
    correct = "—" if view.correct is None else "yes" if view.correct else "no"
    lines += [
        _heading("outcome"),
        f"raw reply  {value_text(view.raw_text)}",
        f"answer     {value_text(view.answer)}{mark}",
        f"expected   {value_text(view.expected)}",
        f"correct    {correct}{confidence}",
        f"status     {outcome_text(view)}",
        f"score      {score_text(view.score)}",
        f"costs      {costs_text(view)}",
    ]
    return "\n".join(lines) + "\n"
