"""``mindledger games``: list the built-in games, print IDR sequences, check a game given as
JSON, and generate trial items as JSON Lines.

Errors in the user's input (an unknown game, a malformed spec) exit with status 2 and a
message naming the problem.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.cli.conventions import GENERATED, SEED, format_option
from mindledger.canonical import canonical_json
from mindledger.errors import MindledgerError
from mindledger.items import Item

__all__ = ["games"]

F = TypeVar("F", bound=Callable[..., Any])


class _UserFailure(click.ClickException):
    """A user error shown as ``error: …`` with exit status 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}", err=True)


def _user_errors(func: F) -> F:
    """Turn mindledger's user errors into exit status 2 however the command is invoked."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MindledgerError as exc:
            if exc.exit_code != 2:
                raise
            raise _UserFailure(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False))


@click.group(name="games")
def games() -> None:
    """Level-k games: list, IDR sequences, check a game, generate trials.

    \b
    Examples:
      mindledger games list
      mindledger games idr 11-20 --depth 5
      mindledger games generate --seed 7 --n 20 --variants --out trials.jsonl
    """


@games.command(name="list")
@format_option("an array of games (name, title, players, actions, anchor, kmax)")
@_user_errors
def list_games(fmt: str) -> None:
    """List the built-in games (the paper's four) with their IDR depth K_max.

    \b
    Examples:
      mindledger games list
      mindledger games list --format json | jq -r '.[] | "\\(.name) \\(.kmax)"'
    """
    from games import FAMILIES, GAMES, check_distinguishability

    rows: list[dict[str, Any]] = []
    for name, spec in GAMES.items():
        verdict = check_distinguishability(spec)
        rows.append(
            {
                "name": name,
                "title": FAMILIES[spec.family].title,
                "players": spec.players,
                "actions": [spec.actions[0], spec.actions[-1]],
                "anchor": spec.anchor,
                "kmax": verdict.kmax,
            }
        )
    if fmt == "json":
        _echo_json(rows)
        return
    for r in rows:
        lo, hi = r["actions"]
        click.echo(
            f"{r['name']:<12} {r['title']:<18} players {r['players']}  S = {lo}..{hi}  "
            f"a(0) = {r['anchor']}  K_max = {r['kmax']}"
        )


@games.command(name="idr")
@click.argument("name")
@click.option(
    "--depth",
    default=10,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Deepest level to print.",
)
@_user_errors
def idr(name: str, depth: int) -> None:
    """Print NAME's IDR sequence a(0)..a(depth) and K_max as JSON.

    \b
    Example:
      mindledger games idr 11-20 --depth 5
    """
    from games import check_distinguishability, get_game

    verdict = check_distinguishability(get_game(name), depth)
    _echo_json({"game": name, "idr": list(verdict.idr), "kmax": verdict.kmax})


@games.command(name="check")
@click.argument("spec_path", metavar="SPEC.json", type=click.Path(dir_okay=False))
@click.option(
    "--depth",
    default=10,
    show_default=True,
    type=click.IntRange(0, 1000),
    help="Depth to check distinguishability to.",
)
@_user_errors
def check(spec_path: str, depth: int) -> None:
    """Check a game given as {"actions": [...], "payoff": [[u(s, a) ...] ...], "anchor": a0}.

    Rows are the player's own action s, columns the opponent's action a. Prints the IDR
    sequence, K_max, and where and why distinguishability fails.

    \b
    Example:
      mindledger games check my-game.json --depth 6
    """
    from games import GameSpec, check_distinguishability
    from mindledger.jsonin import read_json_file

    path = Path(spec_path)
    data = read_json_file(path)
    labels = _labels(data)
    if labels is not None:
        # Named actions: number them by position, so Eq. (3)'s "smallest maximiser" becomes
        # "the maximiser listed first"; map the verdict back to the names.
        data = {**data, "actions": list(range(len(labels))), "anchor": labels.index(data["anchor"])}
    spec = GameSpec.from_dict(data, source=spec_path, default_name=path.stem)
    out = check_distinguishability(spec, depth).to_dict()
    result = {
        "game": spec.name,
        "idr": out.pop("idr"),
        "kmax": out.pop("kmax"),
        **{k: v for k, v in out.items() if k not in ("game", "depth")},
    }
    if labels is not None:
        result = _relabel(result, labels)
        result["positions"] = {str(i): name for i, name in enumerate(labels)}
        result["note"] = (
            "named actions are numbered by their position in the list (see positions): the "
            "reasons quote those numbers, and ties go to the action listed first"
        )
    _echo_json(result)


def _labels(data: Any) -> list[str] | None:
    """The action names when a spec names its actions with strings (else None: numbers)."""
    from mindledger.errors import InputError

    actions = data.get("actions") if isinstance(data, dict) else None
    if not isinstance(actions, list) or not actions:
        return None
    if not all(isinstance(a, str) for a in actions):
        return None
    if len(set(actions)) != len(actions):
        dup = next(a for i, a in enumerate(actions) if a in actions[:i])
        raise InputError(f"action {dup!r} appears twice", where="actions")
    if data.get("anchor") not in actions:
        raise InputError(
            f"the anchor {data.get('anchor')!r} is not one of the actions", where="anchor"
        )
    return list(actions)


def _relabel(value: Any, labels: list[str], key: str | None = None) -> Any:
    """Replace action positions by names in the checker's verdict (idr, actions, BR sets)."""
    action_keys = {"idr", "action", "br_sets", "ties", "anchor"}
    if isinstance(value, dict):
        return {k: _relabel(v, labels, k if k in action_keys else key) for k, v in value.items()}
    if isinstance(value, list):
        if key == "ties":  # [(k, BR set)]: the depth stays a number
            return [
                [t[0], _relabel(t[1], labels, "br_sets")] if isinstance(t, list) else t
                for t in value
            ]
        return [_relabel(v, labels, key) for v in value]
    if key in action_keys and isinstance(value, int) and not isinstance(value, bool):
        return labels[value] if 0 <= value < len(labels) else value
    return value


def _write_items(items: Iterable[Item], out: str | None) -> None:
    lines = (canonical_json(item.to_dict()).decode("utf-8") + "\n" for item in items)
    if out is None or out == "-":
        for line in lines:
            click.echo(line, nl=False)
        return
    with open(out, "w", encoding="utf-8") as fh:
        fh.writelines(lines)


def _lambdas(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(int(v) if float(v).is_integer() else v for v in values)


@games.command(name="generate")
@click.option("--seed", required=True, type=SEED, help="Seed of the batch.")
@click.option("--n", "n", required=True, type=GENERATED, help="Number of items.")
@click.option(
    "--game",
    "game_names",
    multiple=True,
    type=click.Choice(["11-20", "all-pay", "nash-demand", "ring-11-20"]),
    help="Game(s) to draw from (repeatable; default: all four).",
)
@click.option(
    "--condition",
    "conditions",
    multiple=True,
    type=click.Choice(["recursive", "inductive"]),
    help="Condition(s) (repeatable; default: both).",
)
@click.option(
    "--lambda",
    "lambdas",
    multiple=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Precision(s) λ of the inductive histories (repeatable; default 1, 3, 10).",
)
@click.option(
    "--depth",
    "depths",
    multiple=True,
    type=click.IntRange(1, 10),
    help="Target depth(s) (repeatable; default 1..10).",
)
@click.option(
    "--variants/--canonical",
    default=False,
    show_default=True,
    help="Play fresh distinguishable variants instead of the paper's games.",
)
@click.option("--out", default=None, help="Write to this file instead of standard output.")
@_user_errors
def generate(
    seed: int,
    n: int,
    game_names: tuple[str, ...],
    conditions: tuple[str, ...],
    lambdas: tuple[float, ...],
    depths: tuple[int, ...],
    variants: bool,
    out: str | None,
) -> None:
    """Write N trial items as JSON Lines (one item per line, canonical JSON).

    \b
    Examples:
      mindledger games generate --seed 7 --n 20 > trials.jsonl
      mindledger games generate --seed 7 --n 40 --game 11-20 --condition recursive --variants
    """
    from games import CONDITIONS, FAMILIES, LAMBDAS, generate_items

    items = generate_items(
        seed,
        n,
        games=game_names or tuple(FAMILIES),
        conditions=conditions or CONDITIONS,
        lambdas=_lambdas(lambdas) if lambdas else LAMBDAS,
        depths=depths or tuple(range(1, 11)),
        variants=variants,
    )
    _write_items(items, out)


@games.command(name="abc")
@click.option("--seed", required=True, type=SEED, help="Seed of the batch.")
@click.option("--n", "n", required=True, type=GENERATED, help="Number of scenarios.")
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=click.Choice(["beauty", "11-20", "guessing"]),
    help="Scenario kind(s) (repeatable; default: all three).",
)
@click.option("--out", default=None, help="Write to this file instead of standard output.")
@_user_errors
def abc(seed: int, n: int, kinds: tuple[str, ...], out: str | None) -> None:
    """Write the A/B/C(/K) items of N strategic-prediction scenarios as JSON Lines.

    \b
    Example:
      mindledger games abc --seed 7 --n 10 --kind beauty --out abc.jsonl
    """
    from games import ABC_KINDS, generate_abc_items

    _write_items(generate_abc_items(seed, n, kinds=kinds or ABC_KINDS), out)
