"""``mindledger nesttom``: answer nested-belief questions about a story, generate NestToM items,
import Hi-ToM.

The file handling lives here; :mod:`nesttom` itself does no I/O.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from harness.cli.conventions import GENERATED, SEED, options_as
from mindledger.canonical import canonical_json
from mindledger.errors import InputError
from mindledger.items import Item
from mindledger.jsonin import read_json_file


def _read_json(path: str) -> Any:
    """Parse the JSON file at ``path`` (``-``: standard input) under the one input rule
    (:func:`mindledger.jsonin.read_json_file`); bad input is an InputError."""
    return read_json_file(path)


def _split(values: Sequence[str]) -> list[str]:
    """Values of a repeatable option, each possibly comma-separated."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


def _choices(values: Sequence[str], allowed: Sequence[str], option: str) -> list[str]:
    out = _split(values)
    for v in out:
        if v not in allowed:
            raise click.BadParameter(
                f"{v!r} is not one of {', '.join(allowed)}", param_hint=f"'{option}'"
            )
    return out


def _write_items(items: Iterable[Item], out: TextIO) -> int:
    n = 0
    for item in items:
        out.write(canonical_json(item.to_dict()).decode("utf-8") + "\n")
        n += 1
    return n


@click.group()
def nesttom() -> None:
    """Nested-belief stories with exact answers (NestToM).

    \b
    Examples:
      mindledger nesttom answer story.json
      mindledger nesttom generate --seed 7 --n 100 --depth R2,R3 --form chat > items.jsonl
      mindledger nesttom generate --seed 7 --suite b1 --out b1.jsonl
      mindledger nesttom import-hitom ../shared/data/hi-tom/Hi-ToM_data.json --out hitom.jsonl
    """


@nesttom.command("answer")
@click.argument(
    "story_path", metavar="STORY.json", type=click.Path(dir_okay=False, allow_dash=True)
)
def answer(story_path: str) -> None:
    """Answer every question of a story file: print a JSON list, one object per question (the
    question plus "answer"). A story that breaks the rules exits 2 naming the event or question.

    \b
    Story form:
      {"agents": ["Ann", "Ben"], "objects": {"key": "drawer"},
       "present": ["Ann", "Ben"],
       "events": [{"type": "leave", "agent": "Ben"},
                  {"type": "move", "agent": "Ann", "object": "key", "to": "safe",
                   "hidden": []},
                  {"type": "enter", "agent": "Ben"},
                  {"type": "tell", "from": "Ann", "to": "Ben", "object": "key",
                   "claimed": "box", "received": "box"}],
       "questions": [{"chain": ["Ben"], "object": "key"},
                     {"chain": [], "object": "key"}]}
    ("present" defaults to everyone, "received" to "claimed", "hidden" to
    none; the empty chain asks where the object really is.)

    \b
    Examples:
      mindledger nesttom answer story.json
      cat story.json | mindledger nesttom answer -
    """
    from nesttom import answer_questions

    data = _read_json(story_path)
    try:
        answers = answer_questions(data)
    except InputError as exc:
        raise InputError(str(exc), source=story_path) from exc
    click.echo(json.dumps(answers, indent=2, ensure_ascii=False))


@dataclass(frozen=True)
class GenerateOptions:
    """The options of ``mindledger nesttom generate``, as given."""

    seed: int
    """--seed: the generator seed."""
    n: int | None
    """--n: the number of stories (None: only with --suite)."""
    depths: tuple[str, ...]
    """--depth: the depths, each possibly comma-separated."""
    lengths: tuple[str, ...]
    """--length: events per story."""
    agents: tuple[int, ...]
    """--agents: agents per story."""
    mechanisms: tuple[str, ...]
    """--mechanism: the divergence mechanisms."""
    forms: tuple[str, ...]
    """--form: the story forms."""
    beliefs: tuple[str, ...]
    """--belief: the belief types."""
    applied: bool
    """--applied: add behaviour and judgment items."""
    companions: bool
    """--companions: add the items of every prefix chain."""
    suite: str | None
    """--suite: a baseline test's items at its default size instead."""
    out: str | None
    """--out: the output file (None: stdout)."""


@nesttom.command("generate")
@click.option("--seed", type=SEED, required=True, help="Generator seed.")
@click.option("--n", "n", type=GENERATED, default=None, help="Number of stories.")
@click.option(
    "--depth", "depths", multiple=True, help="R0 R1 R2 R2-self R3 R3-loop R4 R5 (default all)."
)
@click.option(
    "--length",
    "lengths",
    multiple=True,
    type=click.Choice(["6", "12", "20"]),
    help="Events per story (default 12).",
)
@click.option(
    "--agents", "agents", multiple=True, type=click.IntRange(3, 5), help="Agents (default 4)."
)
@click.option(
    "--mechanism", "mechanisms", multiple=True, help="Divergence mechanism(s) (default all)."
)
@click.option("--form", "forms", multiple=True, help="narrative, chat, log (default all).")
@click.option("--belief", "beliefs", multiple=True, help="false, true (default both).")
@click.option("--applied", is_flag=True, help="Add behaviour and judgment items for R1–R3 stories.")
@click.option(
    "--companions", is_flag=True, help="Add the items of every prefix chain (joint accuracy)."
)
@click.option(
    "--suite",
    type=click.Choice(["b1", "b2", "b4"]),
    default=None,
    help="A baseline test's items at its default size (ignores the factor options).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Output file (default stdout).",
)
@options_as(GenerateOptions)
def generate(opts: GenerateOptions) -> None:
    """Generate NestToM items as JSON Lines (one item per line, canonical JSON).

    --n stories, each giving one belief item (plus applied and prefix items when asked).
    Factors are fully crossed: depth varies fastest, then belief type; within each depth and
    belief type, mechanism, form, length and agent count all cycle. Options repeat or take
    comma-separated values. The same seed and options always give byte-identical output.

    \b
    Examples:
      mindledger nesttom generate --seed 7 --n 100 --depth R2,R3 --form chat > items.jsonl
      mindledger nesttom generate --seed 7 --suite b1 --out b1.jsonl
    """
    import nesttom

    if opts.suite is not None:
        builders: dict[str, Callable[[int], list[Item]]] = {
            "b1": nesttom.b1_items,
            "b2": nesttom.b2_items,
            "b4": nesttom.b4_items,
        }
        items = builders[opts.suite](opts.seed)
    else:
        if opts.n is None:
            raise click.UsageError("give --n (the number of stories) or --suite")
        try:
            design = nesttom.Design(
                depths=tuple(_choices(opts.depths, nesttom.DEPTHS, "--depth") or nesttom.DEPTHS),
                lengths=tuple(int(x) for x in opts.lengths) or (12,),
                agents=tuple(opts.agents) or (4,),
                mechanisms=tuple(
                    _choices(opts.mechanisms, nesttom.MECHANISMS, "--mechanism") or nesttom.MECHANISMS
                ),
                forms=tuple(_choices(opts.forms, nesttom.FORMS, "--form") or nesttom.FORMS),
                belief_types=tuple(
                    _choices(opts.beliefs, nesttom.BELIEF_TYPES, "--belief") or nesttom.BELIEF_TYPES
                ),
            )
            items = nesttom.generate_items(
                opts.seed, opts.n, design, applied=opts.applied, companions=opts.companions
            )
        except ValueError as exc:
            raise InputError(str(exc)) from exc
    if opts.out is None:
        _write_items(items, sys.stdout)
    else:
        with open(opts.out, "w", encoding="utf-8") as fh:
            count = _write_items(items, fh)
        click.echo(f"wrote {count} items to {opts.out}", err=True)


@nesttom.command("import-hitom")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Items file (default stdout).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Report file (default: standard error).",
)
def import_hitom_cmd(path: str, out: str | None, report_path: str | None) -> None:
    """Turn the public Hi-ToM JSON into items (JSON Lines) carrying Hi-ToM's own labels, and
    report how many labels of stories without communication disagree with NestToM semantics.

    \b
    Example:
      mindledger nesttom import-hitom Hi-ToM_data.json --out hitom.jsonl --report hitom.txt
    """
    from nesttom import import_hitom

    data = _read_json(path)
    try:
        items, report = import_hitom(data)
    except InputError as exc:
        raise InputError(str(exc), source=path) from exc
    if out is None:
        _write_items(items, sys.stdout)
    else:
        with open(out, "w", encoding="utf-8") as fh:
            _write_items(items, fh)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if report_path is None:
        click.echo(text, err=True)
    else:
        Path(report_path).write_text(text + "\n", encoding="utf-8")
