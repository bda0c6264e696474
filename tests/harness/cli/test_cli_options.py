"""A command with many options takes them as one frozen value (:func:`options_as`, issue 26
item 6): click still parses and documents each option; the callback gets a dataclass whose
fields are the options. The whole ``mindledger`` tree is walked, so a field that drifts from
its option fails here rather than as a TypeError when someone runs the command."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from harness.cli.conventions import OPTIONS, options_as
from harness.cli.main import cli


def _walk(
    command: click.Command, path: str, parent: click.Context | None
) -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(command, info_name=path.rsplit(" ", 1)[-1], parent=parent)
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from _walk(sub, f"{path} {name}", ctx)


GATHERING = {
    path: getattr(command.callback, OPTIONS)
    for path, command in _walk(cli, "mindledger", None)
    if hasattr(command.callback, OPTIONS)
}


def test_the_commands_with_many_options_gather_them() -> None:
    assert {
        "mindledger run",
        "mindledger ledger commit",
        "mindledger ledger verify",
        "mindledger nesttom generate",
        "mindledger serve token",
    } <= set(GATHERING)


@pytest.mark.parametrize("path", sorted(GATHERING))
def test_each_option_is_a_field_of_the_gathered_value(path: str) -> None:
    command = dict(_walk(cli, "mindledger", None))[path]
    options = GATHERING[path]
    # in order, each once (``--format`` and its hidden alias ``--json`` are both ``fmt``)
    named = list(dict.fromkeys(p.name for p in command.params if p.expose_value))
    assert named == [f.name for f in dataclasses.fields(options)]


@dataclasses.dataclass(frozen=True)
class Toy:
    name: str
    times: int
    loud: bool


def test_the_callback_gets_one_frozen_value_and_the_context_stays_first() -> None:
    got: list[tuple[click.Context, Toy]] = []

    @click.command()
    @click.argument("name")
    @click.option("--times", type=click.IntRange(1, 3), default=2, show_default=True)
    @click.option("--loud", is_flag=True, help="Shout.")
    @click.pass_context
    @options_as(Toy)
    def toy(ctx: click.Context, opts: Toy) -> None:
        """Greet NAME."""
        got.append((ctx, opts))

    result = CliRunner().invoke(toy, ["ann", "--loud"])
    assert result.exit_code == 0, result.output
    ((ctx, opts),) = got
    assert isinstance(ctx, click.Context) and opts == Toy("ann", 2, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.times = 3  # type: ignore[misc]
    # click still checks the options and writes the help from the declarations
    refused = CliRunner().invoke(toy, ["ann", "--times", "9"])
    assert refused.exit_code == 2 and "9 is not in the range 1<=x<=3" in refused.output
    shown = CliRunner().invoke(toy, ["--help"]).output
    assert "Greet NAME." in shown and "default: 2" in shown and "Shout." in shown


def test_only_a_frozen_dataclass_gathers_options() -> None:
    @dataclasses.dataclass
    class Loose:
        name: str

    with pytest.raises(TypeError, match="Loose is not a frozen dataclass"):
        options_as(Loose)
    with pytest.raises(TypeError, match="dict is not a frozen dataclass"):
        options_as(dict)
