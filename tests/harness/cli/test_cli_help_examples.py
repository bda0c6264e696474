"""Every command's ``--help`` ends with an example: the whole ``mindledger`` tree is walked (a
command added later is walked too), and each help text must end with an ``Example:`` or
``Examples:`` block whose first line is a ``mindledger …`` command line."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from harness.cli.conventions import examples_last
from harness.cli.main import cli

HEADER = re.compile(r"^\s*Examples?:\s*$")


def _walk(
    command: click.Command, path: tuple[str, ...], parent: click.Context | None
) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{' '.join(path)} lists {name} but cannot load it"
            yield from _walk(sub, (*path, name), ctx)


COMMANDS = {" ".join(p): (cmd, ctx) for p, cmd, ctx in _walk(cli, ("mindledger",), None)}


def example_block(help_text: str) -> list[str]:
    """The lines of the example block that ends ``help_text`` (after its header), or []."""
    lines = help_text.rstrip().splitlines()
    heads = [n for n, line in enumerate(lines) if HEADER.match(line)]
    if not heads:
        return []
    return [line.strip() for line in lines[heads[-1] + 1 :] if line.strip()]


def test_the_walk_finds_the_whole_tree() -> None:
    for name in ("mindledger runs", "mindledger ledger show", "mindledger serve token",
                 "mindledger games list", "mindledger quickstart", "mindledger dashboard"):
        assert name in COMMANDS  # fmt: skip


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_ends_with_an_example(name: str) -> None:
    command, ctx = COMMANDS[name]
    text = command.get_help(ctx)
    block = example_block(text)
    assert block, f"`{name} --help` does not end with an Example(s): block:\n{text[-600:]}"
    assert block[0].startswith("mindledger "), f"`{name} --help`'s example: {block[0]!r}"
    # the block is the end of the help: no options or commands listed after it
    after = text.rstrip().splitlines()[-len(block) :]
    assert not any(line.startswith(("Options:", "Commands:")) for line in after)


def test_help_through_the_real_command_line_ends_with_the_examples() -> None:
    result = CliRunner().invoke(cli, ["runs", "--help"])
    assert result.exit_code == 0
    assert example_block(result.output)[0].startswith("mindledger runs")
    assert result.output.index("Options:") < result.output.rindex("Examples:")


def test_examples_move_after_the_options_and_nothing_else_changes() -> None:
    @click.command()
    @click.option("--n", default=1, help="How many.")
    def demo(n: int) -> None:
        """Do a thing.

        More about it.

        \b
        Examples:
          mindledger demo --n 2
          mindledger demo
        """

    examples_last(demo)
    examples_last(demo)  # twice changes nothing more
    text = demo.get_help(click.Context(demo, info_name="demo"))
    assert text.index("More about it.") < text.index("--n") < text.index("Examples:")
    assert example_block(text) == ["mindledger demo --n 2", "mindledger demo"]
    assert demo.get_short_help_str() == "Do a thing."

    @click.command()
    def bare() -> None:
        """No examples here."""

    examples_last(bare)
    assert bare.epilog is None and bare.help == "No examples here."
    assert example_block(bare.get_help(click.Context(bare, info_name="bare"))) == []


def test_run_help_lists_every_suite_with_its_preset_size() -> None:
    """The suite table in ``mindledger run --help`` is made from the presets (it once said
    B2 180 while the baseline held 360)."""
    from harness.run.suites import SUITES

    out = CliRunner().invoke(cli, ["run", "--help"], terminal_width=80).output
    for suite in SUITES.values():
        assert re.search(rf"^\s+{suite.name}\s+{suite.total:,}\b", out, re.M), suite.name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_fits_an_80_column_terminal(name: str) -> None:
    """Every line of ``--help`` at 80 columns fits in them, but an example command line too
    long to break (a line can be copied whole only unbroken), and such a line has no comment
    (a comment could go on the line above)."""
    command, ctx = COMMANDS[name]
    ctx.terminal_width = ctx.max_content_width = 80
    formatter = ctx.make_formatter()
    command.format_help(ctx, formatter)
    examples = set(example_block(formatter.getvalue()))
    for line in formatter.getvalue().splitlines():
        if len(line) <= 80:
            continue
        example = line.strip()
        assert example in examples, f"`{name} --help`: {len(line)} columns: {line!r}"
        assert "  #" not in line, f"`{name} --help`: its comment takes {line!r} past 80 columns"
