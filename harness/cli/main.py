"""Entry point of the ``mindledger`` command.

Subcommands live in one module each under :mod:`harness.cli` and are imported only when used,
so ``mindledger --help`` stays fast. Every command's docstring ends with its examples, which
``--help`` shows last (:func:`~harness.cli.conventions.examples_last`). Errors: a
:class:`~mindledger.errors.MindledgerError` prints its message and exits with its ``exit_code``
(2 for user errors); a usage error (a bad option value, a missing argument) is one line too, exit
2; Ctrl-C exits 130; anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, NoReturn

import click

from harness.cli.conventions import examples_last, non_empty
from mindledger.errors import MindledgerError, readable
from mindledger.secrets import scrub

# name -> ("module", "attribute", "one-line help")
COMMANDS: dict[str, tuple[str, str, str]] = {
    "doctor": (
        "harness.cli.doctor_cmd",
        "doctor",
        "Check the installation, settings, database and agents.",
    ),
    "config": (
        "harness.cli.config_cmd",
        "config",
        "Show the effective settings and where each came from.",
    ),
    "db": (
        "harness.cli.db_cmd",
        "db",
        "Create, migrate, back up or restore the database; show its schema version.",
    ),
    "nesttom": (
        "harness.cli.nesttom_cmd",
        "nesttom",
        "Nested-belief stories: answer, generate, import Hi-ToM.",
    ),
    "games": (
        "harness.cli.games_cmd",
        "games",
        "Level-k games: list, IDR sequences, check a game, generate trials.",
    ),
    "run": (
        "harness.cli.run_cmd",
        "run",
        "Run a suite against an agent, its control and reference agents.",
    ),
    "runs": ("harness.cli.runs_cmd", "runs", "List stored runs (table or JSON)."),
    "trials": (
        "harness.cli.trials_cmd",
        "trials",
        "A run's trials: list them, or show one whole (messages, reply, answer, expected).",
    ),
    "judge": ("harness.cli.judge_cmd", "judge", "Judge the chains of thought of a run's games."),
    "quickstart": (
        "harness.cli.quickstart_cmd",
        "quickstart",
        "Start the embedded model and run the quick suite end to end.",
    ),
    "history": (
        "harness.cli.history_cmd",
        "history",
        "An agent's headline figures over its runs, regressions flagged.",
    ),
    "report": (
        "harness.cli.report_cmd",
        "report",
        "Render a run's profile as Markdown, HTML, JSON or CSV.",
    ),
    "ledger": (
        "harness.cli.ledger_cmd",
        "ledger",
        "The prediction ledger: commit, observe, reveal, verify, export.",
    ),
    "forecast": (
        "harness.cli.forecast_cmd",
        "forecast",
        "Self-forecasts: commit an agent's forecast of its own figures, list, show them.",
    ),
    "dashboard": (
        "harness.cli.dashboard_cmd",
        "dashboard",
        "Browse runs, profiles and the prediction ledger in the terminal.",
    ),
    "serve": (
        "harness.cli.serve_cmd",
        "serve",
        "Run the daemon: scheduler, HTTP API and query proxy.",
    ),
    "matrix": (
        "harness.cli.matrix_cmd",
        "matrix",
        "Cross-model prediction matrix: who predicts whom, scored through the ledger.",
    ),
    "worker": (
        "harness.cli.worker_cmd",
        "worker",
        "Execute queued batches of trials (PostgreSQL + procrastinate).",
    ),
    "witness": (
        "harness.cli.witness_cmd",
        "witness",
        "Witness other ledgers: register them, cosign their heads, export a cosigned head.",
    ),
    "enqueue": (
        "harness.cli.worker_cmd",
        "enqueue",
        "Cut a stored run into batches of trials and queue them for workers.",
    ),
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = set(super().list_commands(ctx))
        for name, (module, _, _) in COMMANDS.items():
            if importlib.util.find_spec(module) is not None:
                names.add(name)
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module, attr, _ = COMMANDS[cmd_name]
            if importlib.util.find_spec(module) is None:
                return None
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command)
            examples_last(command)
            return command
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            examples_last(command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx) if name in COMMANDS]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Settings file (default: ./mindledger.toml, else $MINDLEDGER_HOME/mindledger.toml).",
)
@click.option(
    "--db",
    "db_url",
    default=None,
    callback=non_empty("a database URL"),
    help="Database URL (overrides settings).",
)
@click.option(
    "-o",
    "--set",
    "assignments",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one setting, e.g. -o concurrency=8 (repeatable; beats file and env).",
)
@click.version_option(package_name="mindledger")
@click.pass_context
def cli(
    ctx: click.Context, config_path: str | None, db_url: str | None, assignments: tuple[str, ...]
) -> None:
    """mindledger: measure how well an LLM agent models other minds.

    \b
    Examples:
      mindledger quickstart              # embedded model, quick suite, report
      mindledger run --suite quick --agent local --reference oracle
      mindledger report RUN_ID --format html --out report.html
      mindledger ledger verify
    """
    ctx.ensure_object(dict)
    ctx.obj["config_path"] = config_path
    overrides: dict[str, Any] = {}
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"expected KEY=VALUE, got {assignment!r}", param_hint="--set")
        overrides[key.strip()] = value
    if db_url:
        overrides["db_url"] = db_url
    ctx.obj["overrides"] = overrides


examples_last(cli)


def _usage_line(exc: click.UsageError) -> str:
    """A usage error (a bad option value, a missing argument, an unknown option) as one line,
    as every other user error prints: what is wrong, then where the command's help is."""
    message = " ".join(exc.format_message().split()).removesuffix(".")
    message = message[:1].lower() + message[1:]
    hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
    return f"error: {readable(scrub(message))}{hint}"


def interrupted(code: int = 130, said: str = "Interrupted.") -> NoReturn:
    """Say "Interrupted." and exit 130 (or ``said`` and ``code``) — at once, without the
    interpreter's finalisation: when Ctrl-C lands while CPython runs code through its own
    ``PyRun`` entry points (as an import of the database layer can), CPython remembers the
    KeyboardInterrupt as unhandled even after it is caught here, and at exit kills the process
    with SIGINT (exit −2) instead of 130. Every ``finally`` block has run by the time the
    exception gets here; the streams are flushed."""
    sys.stderr.write(said + "\n")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, ``systemctl stop``, a CI job's timeout) or SIGHUP (the terminal or
    the SSH session closed), raised where the program is as Ctrl-C's KeyboardInterrupt is, so
    that the same clean-up runs: a run keeps its trials, is marked ``interrupted`` and says how
    to resume, a command agent's programs are stopped. The command then exits 128 + the
    signal's number (143, 129), as a process stopped by it does. The same signal again while
    that clean-up runs stops the process at once."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOPPING = (signal.SIGTERM, signal.SIGHUP)
"""The signals that stop a command as Ctrl-C does (:class:`Terminated`)."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    """Raise :class:`Terminated` where the program is; but with an event loop running (the
    handler runs between two bytecodes of whatever the main thread runs, often inside a task's
    step), raise it from a callback of its own between the loop's callbacks, as asyncio's
    Ctrl-C handling does: raised inside a task, the task would end there, its ``except
    CancelledError`` clean-up never run (a command agent's program left running, seen on a
    loaded machine), while every task waiting at an ``await`` is cancelled and cleans up."""
    signal.signal(signum, signal.SIG_DFL)  # a second one: stop now
    aio = sys.modules.get("asyncio")  # not imported: no loop can be running
    try:
        loop = aio.get_running_loop() if aio is not None else None
    except RuntimeError:
        loop = None
    if loop is None:
        raise Terminated(signum)
    loop.call_soon_threadsafe(_raise, Terminated(signum))


def _raise(exc: BaseException) -> None:
    raise exc


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within it, SIGTERM and SIGHUP raise :class:`Terminated` (in the main thread only:
    elsewhere, as when a test calls :func:`main` from a thread, signals cannot be caught); the
    handlers before it are put back after. A signal ignored when the command started (``nohup``
    ignores SIGHUP) stays ignored. A command with its own handling (``serve``, ``worker``) sets
    its own within."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in STOPPING}
    for sig, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, _terminate)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and turn errors into exit codes."""
    try:
        for n, arg in enumerate(sys.argv[1:] if argv is None else argv, start=1):
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                click.echo(
                    f"error: argument {n} ({readable(shown, 60)!r}) is not valid UTF-8 text",
                    err=True,
                )
                sys.exit(2)
        with sigterm_interrupts():
            rv = cli.main(args=argv, prog_name="mindledger", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt) as exc:
        # click turns a KeyboardInterrupt into Abort, the interrupt its cause
        stopped = exc if isinstance(exc, Terminated) else exc.__cause__
        if isinstance(stopped, Terminated):
            interrupted(128 + stopped.signum, f"Stopped by {signal.Signals(stopped.signum).name}.")
        interrupted()
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        exc.show()
        sys.exit(2)
    except click.UsageError as exc:
        click.echo(_usage_line(exc), err=True)
        sys.exit(2)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if exc.exit_code == 2 else exc.exit_code)
    except MindledgerError as exc:
        click.echo(f"error: {readable(scrub(str(exc)))}", err=True)
        sys.exit(exc.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
