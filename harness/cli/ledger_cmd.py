"""``mindledger ledger``: commit, observe, reveal, verify, export and show predictions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from harness.cli.common import echo_json, get_settings, get_store
from ledger.chain import Verification
from ledger.db import mask, open_engine
from ledger.keys import (
    COMMIT_TAG,
    KEY_FILE,
    load_or_create_service_key,
    load_private_key,
    public_key_hex,
    sign,
)
from ledger.migrations import pending_migrations
from ledger.predictions import WITNESS_DIR, Ledger, verify_export
from ledger.protocol import commit_message, commitment, new_salt, prediction_body
from mindledger.errors import InputError, StorageError


def _open(ctx: click.Context, db: str | None = None) -> Ledger:
    """The configured ledger; with ``db``, that database as it is (not migrated: verifying
    changes nothing)."""
    settings = get_settings(ctx)
    if db:
        engine = open_engine(db, migrate_schema=False)
        if "0002_predictions" in pending_migrations(engine):
            raise StorageError(
                f"{mask(db)} has no prediction ledger (its schema predates it; "
                "see `mindledger db status`)"
            )
    else:
        engine = get_store(ctx).engine
    key = load_or_create_service_key(settings.home)
    return Ledger(
        engine,
        key,
        reveal_timeout=settings.reveal_timeout,
        witness_dir=settings.home / WITNESS_DIR,
    )


def _json_arg(text: str | None, option: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", where=option) from None


def _distribution(text: str) -> Any:
    value = _json_arg(text, "--distribution")
    if not isinstance(value, dict):
        raise InputError(
            'expected a JSON object of answer to probability, e.g. {"yes": 0.7, "no": 0.3}',
            where="--distribution",
        )
    return value


def _body(**kw: Any) -> dict[str, Any]:
    try:
        return prediction_body(**kw)
    except InputError as exc:
        if exc.where == "distribution":
            raise InputError(
                str(exc).removeprefix("distribution: "), where="--distribution"
            ) from None
        raise


@click.group()
def ledger() -> None:
    """The prediction ledger: commit a hashed prediction before a query, record the answer,
    reveal and score it; verify that nobody changed the past.

    \b
    Example:
      mindledger ledger commit --predictor piper --target dusk \\
          --query "Pick a number from 1 to 10" --distribution '{"7": 0.6, "3": 0.4}'
      mindledger ledger observe p1a2b3… --answer 7
      mindledger ledger reveal p1a2b3… --distribution '{"7": 0.6, "3": 0.4}' --salt 9f…
      mindledger ledger verify
    """


@ledger.command("commit")
@click.option("--predictor", required=True, help="Who predicts (the agent).")
@click.option("--target", required=True, help="Whose answer is predicted.")
@click.option("--query", required=True, help="The query the target will be asked.")
@click.option(
    "--distribution",
    required=True,
    help='Predicted answers as JSON, e.g. \'{"7": 0.6, "3": 0.4}\'.',
)
@click.option("--top1", default=None, help="Top-1 guess (default: the most probable answer).")
@click.option("--rationale", default=None, help="Why (revealed with the prediction).")
@click.option("--own-answer", default=None, help="The predictor's own answer to the query.")
@click.option("--item", default=None, help="Item id the query comes from.")
@click.option("--condition", default=None, help="Condition or context, as JSON.")
@click.option(
    "--agent-key",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="The agent's Ed25519 private key (PEM) to sign the commit with.",
)
@click.pass_context
def commit_cmd(
    ctx: click.Context,
    predictor: str,
    target: str,
    query: str,
    distribution: str,
    top1: str | None,
    rationale: str | None,
    own_answer: str | None,
    item: str | None,
    condition: str | None,
    agent_key: str | None,
) -> None:
    """Commit a prediction: prints its id, the commitment and the salt. Keep the salt (and the
    distribution): the reveal needs both, and only the committer has them."""
    cond = _json_arg(condition, "--condition")
    body = _body(
        predictor=predictor,
        target=target,
        query=query,
        distribution=_distribution(distribution),
        top1=top1,
        rationale=rationale,
        own_answer=own_answer,
        item=item,
        condition=cond,
    )
    salt = new_salt()
    digest = commitment(body, salt)
    signature = None
    if agent_key:
        fields = {k: body[k] for k in ("predictor", "target", "query", "item", "condition")}
        signature = sign(
            load_private_key(Path(agent_key)),
            COMMIT_TAG,
            commit_message({**fields, "commitment": digest}),
        )
    receipt = _open(ctx).commit(
        predictor, target, query, digest, item=item, condition=cond, agent_signature=signature
    )
    echo_json(
        {
            "id": receipt.id,
            "commitment": receipt.commitment,
            "salt": salt.hex(),
            "deadline": receipt.deadline,
        }
    )


@ledger.command("observe")
@click.argument("prediction_id")
@click.option(
    "--answer",
    "answers",
    required=True,
    multiple=True,
    help="One answer of the target (repeatable).",
)
@click.pass_context
def observe_cmd(ctx: click.Context, prediction_id: str, answers: tuple[str, ...]) -> None:
    """Record answer(s) of the target to a committed prediction's query."""
    led = _open(ctx)
    entries = [led.observe(prediction_id, a) for a in answers]
    echo_json({"id": prediction_id, "observed": list(answers), "seq": [e.seq for e in entries]})


@ledger.command("reveal")
@click.argument("prediction_id")
@click.option("--distribution", required=True, help="The committed distribution, as JSON.")
@click.option("--salt", required=True, help="The salt printed by commit (hex).")
@click.option("--top1", default=None, help="The committed top-1 guess, if one was given.")
@click.option("--rationale", default=None, help="The committed rationale, if one was given.")
@click.option("--own-answer", default=None, help="The committed own answer, if one was given.")
@click.pass_context
def reveal_cmd(
    ctx: click.Context,
    prediction_id: str,
    distribution: str,
    salt: str,
    top1: str | None,
    rationale: str | None,
    own_answer: str | None,
) -> None:
    """Reveal a prediction and score it. Exits 1 when the reveal does not match the
    commitment (or comes too late): that is recorded and counted against the predictor."""
    led = _open(ctx)
    state = led.prediction(prediction_id)
    body = _body(
        predictor=state.predictor,
        target=state.target,
        query=state.query,
        distribution=_distribution(distribution),
        top1=top1,
        rationale=rationale,
        own_answer=own_answer,
        item=state.item,
        condition=state.condition,
    )
    result = led.reveal(prediction_id, body, salt.strip())
    echo_json(result.to_dict())
    if not result.accepted:
        what = "does not match the commitment" if result.status == "rejected" else "is too late"
        click.echo(
            f"error: the reveal of {prediction_id} {what} ({result.reason}); recorded as "
            f"{result.status}, with the worst-case score",
            err=True,
        )
        ctx.exit(1)


def _report(ctx: click.Context, v: Verification, as_json: bool) -> None:
    if as_json:
        echo_json(
            {
                "ok": v.ok,
                "entries": v.entries,
                "head_seq": v.head_seq,
                "head_hash": v.head_hash,
                "predictions": v.states,
                "signatures": v.signatures,
                "failures": [f.to_dict() for f in v.failures],
            }
        )
    if v.ok:
        if not as_json:
            click.echo(v.summary())
        return
    if not as_json:
        first = v.first_bad()
        click.echo(f"FAILED: first bad entry is {first[0].seq}", err=True)
        for f in first:
            click.echo(f"  {f}", err=True)
        rest = len(v.failures) - len(first)
        if rest:
            click.echo(f"  … and {rest} more problem(s) after it", err=True)
    ctx.exit(1)


@ledger.command("verify")
@click.option("--db", "db_url", default=None, help="Database URL (default: the configured one).")
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Verify an export file offline instead of the database.",
)
@click.option(
    "--public-key",
    default=None,
    help="With --file: the service public key (64 hex digits, or a .pub/PEM file).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Also check every entry's signature and agents' signatures and re-derive every "
    "score (slower; by default the head's signature vouches for the chain).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON.")
@click.pass_context
def verify_cmd(
    ctx: click.Context,
    db_url: str | None,
    file: str | None,
    public_key: str | None,
    full: bool,
    as_json: bool,
) -> None:
    """Verify the ledger: every hash, link, reveal and signature. Exit 0 and one line when
    intact; exit 1 naming the first bad entry and what is wrong otherwise."""
    if file:
        if not public_key:
            raise InputError(
                "verifying a file needs the service's public key", where="--public-key"
            )
        v = verify_export(Path(file), public_key, full=full)
    else:
        if public_key:
            raise InputError("only used with --file", where="--public-key")
        v = _open(ctx, db_url).verification(full=full)
    _report(ctx, v, as_json)


@ledger.command("export")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="JSONL file.")
@click.pass_context
def export_cmd(ctx: click.Context, out: str) -> None:
    """Export every entry and a signed trailer; verify it anywhere with
    `mindledger ledger verify --file FILE --public-key KEY`."""
    led = _open(ctx)
    n = led.export(Path(out))
    echo_json({"file": out, "entries": n, "public_key": led.public_key_hex})


@ledger.command("show")
@click.option("--predictor", default=None, help="Only this predictor's predictions.")
@click.option("--target", default=None, help="Only predictions of this target.")
@click.option("--id", "prediction_id", default=None, help="One prediction, in full.")
@click.pass_context
def show_cmd(
    ctx: click.Context, predictor: str | None, target: str | None, prediction_id: str | None
) -> None:
    """List predictions with their states and scores, and aggregate scores (expired and
    rejected predictions count with the worst-case score)."""
    led = _open(ctx)
    now = led.clock()
    if prediction_id:
        echo_json(led.prediction(prediction_id).to_dict(now))
        return
    states = led.predictions(predictor, target)
    echo_json(
        {
            "predictions": [s.to_dict(now) for s in states],
            "summary": led.summary(predictor, target),
        }
    )


@ledger.command("register")
@click.option("--predictor", required=True, help="The agent registering its key.")
@click.option("--public-key", required=True, help="Its Ed25519 public key (hex, or a PEM file).")
@click.pass_context
def register_cmd(ctx: click.Context, predictor: str, public_key: str) -> None:
    """Register an agent's public key: its commits must then be signed with it."""
    e = _open(ctx).register_agent(predictor, public_key)
    echo_json({"predictor": predictor, "seq": e.seq, "entry": e.hash})


@ledger.command("expire")
@click.pass_context
def expire_cmd(ctx: click.Context) -> None:
    """Record every open prediction past its deadline as expired (worst-case score)."""
    echo_json({"expired": _open(ctx).expire_overdue()})


@ledger.command("key")
@click.pass_context
def key_cmd(ctx: click.Context) -> None:
    """Print the service's public key, for third parties verifying exports."""
    settings = get_settings(ctx)
    key = load_or_create_service_key(settings.home)
    echo_json({"public_key": public_key_hex(key), "key_file": str(settings.home / KEY_FILE)})
