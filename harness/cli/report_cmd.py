"""``mindledger report``: a run's profile as Markdown, HTML, JSON or CSV; or two runs compared."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.common import echo_json, get_store, reads_only, resolve_run
from harness.cli.conventions import SEED, an_id
from harness.cli.suite_reports import ReportOptions, suite_report
from ledger.store import Store

if TYPE_CHECKING:
    from reports.model import RunProfile

__all__ = ["report"]


@reads_only
@click.command("report")
@click.argument("run_id", required=False, callback=an_id)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["md", "html", "json", "csv", "headline-csv", "forecasts-csv"]),
    default="md",
    show_default=True,
    help="md: Markdown (shown as a terminal shows it when stdout is one; figure files too "
    "with --out); html: one self-contained file with plots; "
    "json: every number with its interval and n (schema docs/profile.schema.json); csv: one "
    "row per trial; headline-csv: one row per agent, the headline figures as every report "
    "words them, with their values, interval ends and n; forecasts-csv: one row per "
    "self-forecast of the run (and each earlier confidently wrong one), with its bands.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file instead of stdout (md also writes its figures to <name>_files/).",
)
@click.option(
    "--compare",
    "compare_ids",
    nargs=2,
    callback=an_id,
    metavar="RUN_A RUN_B",
    default=None,
    help="Show what changed from RUN_A to RUN_B for the agents in both (md or json).",
)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed.")
@click.option(
    "--reveal-held-out",
    is_flag=True,
    help="Include the seeds of held-out runs. For operators at this machine only: a held-out "
    "seed regenerates the run's items, so such a report must never reach the agent under test.",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(100, 100_000),
    default=2000,
    show_default=True,
    help="Bootstrap replicates per interval.",
)
@click.pass_context
def report(
    ctx: click.Context,
    run_id: str | None,
    fmt: str,
    out: str | None,
    compare_ids: tuple[str, str] | None,
    seed: int,
    reveal_held_out: bool,
    n_boot: int,
) -> None:
    """Render a run's recursive-reasoning profile, or compare two runs. A held-out run's seed
    is withheld ("seed withheld (held-out run)") unless --reveal-held-out. A run is named by
    its id, the start of its id, latest (the newest run) or latest~N (the N-th before it).

    \b
    Examples:
      mindledger report latest                       # on a terminal: shown
      mindledger report latest > latest.md           # piped: Markdown
      mindledger report RUN_ID --format html --out report.html
      mindledger report RUN_ID --format json | jq '.agents[].d50'
      mindledger report RUN_ID --format headline-csv > headline.csv
      mindledger report --compare latest~1 latest
    """
    from reports.comparison import compare, render_compare_markdown
    from reports.render import report as render_report

    if compare_ids and run_id:
        raise click.UsageError("give either RUN_ID or --compare RUN_A RUN_B, not both")
    if not compare_ids and not run_id:
        raise click.UsageError("missing RUN_ID (or --compare RUN_A RUN_B); see `mindledger runs`")
    store = get_store(ctx)
    if compare_ids:
        if fmt not in ("md", "json"):
            raise click.UsageError("--compare renders as md or json")
        cmp = compare(
            store,
            resolve_run(ctx, compare_ids[0]),
            resolve_run(ctx, compare_ids[1]),
            seed=seed,
            n_boot=n_boot,
            reveal_held_out=reveal_held_out,
        )
        if fmt == "json":
            if out:
                import json

                Path(out).write_text(
                    json.dumps(cmp.to_json(), indent=2, ensure_ascii=False) + "\n",
                    encoding="utf-8",
                )
                click.echo(f"wrote {out}", err=True)
            else:
                echo_json(cmp.to_json())
            return
        _emit(render_compare_markdown(cmp), out, markdown=True)
        return
    assert run_id is not None
    run_id = resolve_run(ctx, run_id)
    own = suite_report(store.get_run(run_id).suite)
    if own is not None:  # a suite with its own report (a matrix run: its matrix, not a profile)
        from harness.cli.tables import PIPED_WIDTH, stdout_console

        width = PIPED_WIDTH if out else stdout_console().width
        options = ReportOptions(
            width, n_boot=n_boot, stats_seed=seed, reveal_held_out=reveal_held_out
        )
        _emit(own.render(store, run_id, fmt, options), out)  # its tables are fitted already
        return
    figures_dir = None
    prefix = ""
    if out and fmt == "md":
        path = Path(out)
        figures_dir = path.parent / f"{path.stem}_files"
        prefix = f"{path.stem}_files/"
    text = render_report(
        store,
        run_id,
        fmt,
        seed=seed,
        n_boot=n_boot,
        figures_dir=figures_dir,
        figures_link_prefix=prefix,
        reveal_held_out=reveal_held_out,
    )
    _emit(text, out, markdown=fmt == "md")


def _emit(text: str, out: str | None, *, markdown: bool = False) -> None:
    """``text`` to the file ``out``, or to stdout: on a terminal, ``markdown`` is shown as a
    terminal shows it (:class:`harness.cli.tables.TerminalMarkdown`: its tables would
    otherwise wrap as lines of pipes hundreds of columns long); piped, it stays Markdown."""
    if out:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
        return
    if markdown:
        from harness.cli.tables import TerminalMarkdown, stdout_console

        console = stdout_console()
        if console.is_terminal:
            console.print(TerminalMarkdown(text))
            return
    click.echo(text, nl=not text.endswith("\n"))


def write_reports(
    store: Store, run_id: str, directory: Path, *, profile: RunProfile | None = None
) -> list[Path]:
    """Write the run's Markdown (with its figures) and HTML reports into ``directory``, both
    from one ``profile`` (built here unless the caller has built it already)."""
    from reports import build_profile, render_html, render_markdown
    from reports.trials import wrong_examples

    if profile is None:
        profile = build_profile(store, run_id)
    directory.mkdir(parents=True, exist_ok=True)
    md = directory / f"{run_id}.md"
    md.write_text(
        render_markdown(
            profile,
            figures_dir=directory / f"{run_id}_files",
            figures_link_prefix=f"{run_id}_files/",
        ),
        encoding="utf-8",
    )
    html = directory / f"{run_id}.html"
    html.write_text(render_html(profile, examples=wrong_examples(store, run_id)), encoding="utf-8")
    return [md, html]
