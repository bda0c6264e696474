"""What every ``mindledger`` command has in common, beyond settings and the database (those are
:mod:`harness.cli.common`): the ``--format table|json`` option of the listing commands, and
help texts that end with their examples, the ranges of count and seed options (every integer
option has one, shown in its help), and :func:`options_as`, which hands a command with many
options one frozen value instead of a keyword per option. Tables for people fit the terminal with
:mod:`harness.cli.tables`.

Light on imports on purpose: :mod:`harness.cli.main` uses it before any command is loaded, and
``mindledger --help`` must stay fast.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click

from mindledger.errors import InputError
from mindledger.names import check_agent_name

__all__ = [
    "BATCH",
    "CONCURRENCY",
    "GENERATED",
    "LISTED",
    "OPTIONS",
    "OUTPUT_FORMATS",
    "SEED",
    "agent_name",
    "an_id",
    "examples_last",
    "format_option",
    "non_empty",
    "options_as",
]

F = TypeVar("F", bound=Callable[..., Any])
D = TypeVar("D")
R = TypeVar("R")

GENERATED = click.IntRange(0, 100_000)
"""How many stories, items or scenarios one ``generate`` / ``abc`` call writes: at most 100,000
(a minute or so of work and some hundreds of MB); for more, call again with another seed."""

LISTED = click.IntRange(1, 1_000_000)
"""How many rows a listing shows at most (``runs --limit``, ``trials --limit``)."""

CONCURRENCY = click.IntRange(1, 10_000)
"""Requests or batches in flight at once: the range of the ``concurrency`` setting."""

BATCH = click.IntRange(1, 100_000)
"""Items per queued batch."""

SEED = click.IntRange(0, 2**63 - 1)
"""A generator or bootstrap seed, as the ``seed`` setting takes it: 0 … 2**63 − 1."""

OUTPUT_FORMATS = ("table", "json")
"""What a listing command prints: ``table`` for people (the default), ``json`` for scripts —
one JSON document on stdout and nothing else there (notes and warnings go to stderr); and
``csv`` where the data are rows (a header line, then one line per row)."""


def agent_name(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: ``value`` (each value of a repeatable option; None passes) checked by
    :func:`mindledger.names.check_agent_name`, the one rule for agent names."""
    for name in value if isinstance(value, tuple) else () if value is None else (value,):
        try:
            check_agent_name(name, where="")
        except InputError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


def non_empty(what: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback refusing an empty (or blank) value, or such a value among a repeatable
    or multi-value option's: ``--id ""`` would otherwise read as no ``--id`` at all."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        for text in value if isinstance(value, tuple) else () if value is None else (value,):
            if isinstance(text, str) and not text.strip():
                raise click.BadParameter(
                    f"expected {what}, got {'an empty string' if not text else 'only spaces'}",
                    ctx=ctx,
                    param=param,
                )
        return value

    return check


an_id = non_empty("an id")
"""The callback of every option and argument that names a stored thing by id (a run, an item,
a prediction, a token, a log)."""


def format_option(what: str, *, csv: str | None = None) -> Callable[[F], F]:
    """The ``--format table|json`` option of a command that prints data (parameter ``fmt``),
    with ``csv`` too when ``csv`` says what its rows are; ``what`` says what the JSON document
    is, e.g. ``"an array of runs"``. ``--json`` is a hidden alias of ``--format json`` (the
    spelling some commands had first); whichever of the two comes last wins. An unknown format
    is refused as every input error is: one line naming ``--format``, exit 2."""
    formats = (*OUTPUT_FORMATS, "csv") if csv else OUTPUT_FORMATS

    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if value not in formats:  # one line naming the option, as every input error
            from mindledger.errors import InputError

            raise InputError(
                f"expected {', '.join(formats[:-1])} or {formats[-1]}, got {value!r}",
                where="--format",
            )
        return value

    chosen = click.option(
        "--format",
        "fmt",
        metavar="|".join(formats),
        callback=check,
        default="table",
        show_default=True,
        help=f"table for people; json for scripts: {what}, alone on stdout"
        + (f"; csv: {csv}." if csv else "."),
    )
    alias = click.option(
        "--json", "fmt", flag_value="json", hidden=True, help="Same as --format json."
    )

    def decorate(f: F) -> F:
        own = getattr(f, "__click_params__", ())  # a command that declares its own --json
        if any("--json" in p.opts for p in own):  # keeps it (doctor, for now)
            return chosen(f)
        return chosen(alias(f))

    return decorate


OPTIONS = "mindledger_options"
"""The attribute :func:`options_as` sets on a command's callback: its options' dataclass."""


def options_as(
    options: type[D],
) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Hand a command its options as one frozen dataclass value instead of a keyword each.

    Put it right above the ``def`` (below the ``@click.option`` lines and any
    ``@click.pass_context``); the command then reads ``def run(opts: RunOptions)`` (or
    ``def cmd(ctx, opts)``). The dataclass has one field per option or argument, named as click
    names its parameter; click still parses, checks and documents every option as declared, so
    ``--help``, defaults and errors are the same. The callback keeps the dataclass as its
    :data:`OPTIONS` attribute (a test checks, over every command, that fields and parameters
    agree)."""
    params = getattr(options, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"{options.__name__} is not a frozen dataclass")

    def decorate(command: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(command)
        def gathered(*args: Any, **values: Any) -> R:
            return command(*args, options(**values))

        setattr(gathered, OPTIONS, options)  # kept by click.pass_context's update_wrapper
        return gathered

    return decorate


_EXAMPLES = re.compile(r"^\s*Examples?:\s*$")


def examples_last(command: click.Command) -> None:
    """Show the examples that end ``command``'s docstring at the very end of its ``--help``,
    after the options (and the list of subcommands), as its epilog; recurses into groups.

    A command's docstring ends with its examples (a ``\\b`` line, ``Examples:``, then indented
    lines that start with ``mindledger``): they read in place in the code, and a person reading
    ``--help`` finds them last, where the eye lands. Everything from the last ``Example:`` or
    ``Examples:`` line on moves. A command that already has an epilog, or whose docstring has
    no examples, is left as it is; calling this twice changes nothing more."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            examples_last(sub)
    if command.epilog or not command.help:
        return
    lines = inspect.cleandoc(command.help).split("\f", 1)[0].rstrip().splitlines()
    heads = [n for n, line in enumerate(lines) if _EXAMPLES.match(line)]
    if not heads:
        return
    start = heads[-1]
    if start > 0 and lines[start - 1].strip() == "\b":
        start -= 1
    body, block = lines[:start], lines[start:]
    if block[0].strip() != "\b":
        block.insert(0, "\b")
    command.help = "\n".join(body).rstrip()
    command.epilog = "\n".join(block)
