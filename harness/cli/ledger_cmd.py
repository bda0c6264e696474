"""``mindledger ledger``: commit, observe, reveal, verify, export and show predictions."""

from __future__ import annotations

import dataclasses
import getpass
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from harness.cli.common import echo_json, get_settings, get_workspace, is_read_only, reads_only
from harness.cli.conventions import agent_name, an_id, format_option, non_empty, options_as
from harness.config.workspace import Workspace
from ledger.chain import Verification
from ledger.db import mask
from ledger.forecasts import ForecastState
from ledger.keys import (
    COMMIT_TAG,
    KEY_FILE,
    load_or_create_service_key,
    load_private_key,
    parse_public_key,
    public_key_hex,
    rotate_service_key,
    sign,
)
from ledger.merkle import verify_consistency
from ledger.migrations import pending_migrations
from ledger.predictions import Ledger, verify_export
from ledger.protocol import (
    commit_fields,
    commit_message,
    commitment,
    new_salt,
    prediction_body,
    provenance,
    response_hash,
)
from ledger.tree import TreeHead, check_proof, digest_bytes
from mindledger.errors import InputError, NotFoundError, StorageError, UserError
from mindledger.jsonin import parse_json, read_json_file
from mindledger.words import counted

REVEAL_OPTION = click.option(
    "--reveal-held-out",
    is_flag=True,
    help="Show the queries, items and observed answers of predictions made on held-out "
    "runs' items too. For operators at this machine only: they are held-out items, which "
    "must never reach the agent under test.",
)


def _open(ctx: click.Context, db: str | None = None) -> Ledger:
    """The configured ledger; with ``db``, that database as it is (not migrated: verifying
    changes nothing)."""
    if not db:
        return get_workspace(ctx).ledger
    workspace = Workspace.open(
        get_settings(ctx), migrate=False, database_url=db, read_only=is_read_only(ctx)
    )
    pending = pending_migrations(workspace.engine)
    if "0002_predictions" in pending:
        raise StorageError(
            f"{mask(db)} has no prediction ledger (its schema predates it; "
            "see `mindledger db status`)"
        )
    if "0005_ledger_tree" in pending:
        raise StorageError(
            f"{mask(db)} has no Merkle tree for its ledger yet: run `mindledger --db URL "
            "db migrate` first (it builds the tree from the entries and changes none)"
        )
    return workspace.new_ledger()


def _json_arg(text: str | None, option: str) -> Any:
    if text is None:
        return None
    return parse_json(text, where=option)


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


@dataclass(frozen=True)
class CommitOptions:
    """The options of ``mindledger ledger commit``, as given."""

    predictor: str
    """--predictor: who predicts."""
    target: str
    """--target: whose answer is predicted."""
    query: str
    """--query: the query the target will be asked."""
    distribution: str
    """--distribution: the predicted answers, as JSON text."""
    top1: str | None
    """--top1: the top-1 guess."""
    rationale: str | None
    """--rationale: why."""
    own_answer: str | None
    """--own-answer: the predictor's own answer to the query."""
    item: str | None
    """--item: the item the query comes from."""
    condition: str | None
    """--condition: the condition or context, as JSON text."""
    agent_key: str | None
    """--agent-key: the agent's private key file to sign the commit with."""


@ledger.command("commit")
@click.option(
    "--predictor", required=True, callback=agent_name, help="Who predicts (the agent)."
)
@click.option("--target", required=True, callback=agent_name, help="Whose answer is predicted.")
@click.option("--query", required=True, help="The query the target will be asked.")
@click.option(
    "--distribution",
    required=True,
    help='Predicted answers as JSON, e.g. \'{"7": 0.6, "3": 0.4}\'.',
)
@click.option("--top1", default=None, help="Top-1 guess (default: the most probable answer).")
@click.option("--rationale", default=None, help="Why (revealed with the prediction).")
@click.option("--own-answer", default=None, help="The predictor's own answer to the query.")
@click.option("--item", default=None, callback=an_id, help="Item id the query comes from.")
@click.option("--condition", default=None, help="Condition or context, as JSON.")
@click.option(
    "--agent-key",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="The agent's Ed25519 private key (PEM) to sign the commit with.",
)
@click.pass_context
@options_as(CommitOptions)
def commit_cmd(ctx: click.Context, opts: CommitOptions) -> None:
    """Commit a prediction: prints its id, the commitment and the salt. Keep the salt (and the
    distribution): the reveal needs both, and only the committer has them.

    \b
    Example:
      mindledger ledger commit --predictor piper --target dusk \\
          --query "Pick a number from 1 to 10" --distribution '{"7": 0.6, "3": 0.4}'
    """
    cond = _json_arg(opts.condition, "--condition")
    body = _body(
        predictor=opts.predictor,
        target=opts.target,
        query=opts.query,
        distribution=_distribution(opts.distribution),
        top1=opts.top1,
        rationale=opts.rationale,
        own_answer=opts.own_answer,
        item=opts.item,
        condition=cond,
    )
    salt = new_salt()
    digest = commitment(body, salt)
    fields = commit_fields(body, digest)
    signature = None
    if opts.agent_key:
        key = load_private_key(Path(opts.agent_key))
        signature = sign(key, COMMIT_TAG, commit_message(fields))
    receipt = _open(ctx).commit(
        opts.predictor,
        opts.target,
        opts.query,
        digest,
        item=opts.item,
        condition=cond,
        agent_signature=signature,
        query_hash=fields["query_hash"],
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
@click.argument("prediction_id", callback=an_id)
@click.option(
    "--answer",
    "answers",
    required=True,
    multiple=True,
    help="One answer of the target (repeatable).",
)
@click.option(
    "--request",
    default=None,
    help="An id of the request that obtained the answer (default: a fresh one).",
)
@click.pass_context
def observe_cmd(
    ctx: click.Context, prediction_id: str, answers: tuple[str, ...], request: str | None
) -> None:
    """Record answer(s) of the target to a committed prediction's query, as the operator.

    Only whoever asked the target records its answers: the proxy, the matrix, or an operator
    at this machine who asked it by hand. Each observation names its provenance (operator,
    user name, request id); the predictor and the target cannot record answers through the
    daemon's API.

    \b
    Example:
      mindledger ledger observe p871d2d04f1b8e14bd01f --answer 7 --request ticket-42
    """
    led = _open(ctx)
    operator = getpass.getuser()
    entries = []
    for n, a in enumerate(answers):
        rid = request if request is not None else f"cli-{uuid.uuid4().hex}"
        if request is not None and len(answers) > 1:
            rid = f"{request}#{n + 1}"
        source = provenance("operator", rid, response_hash(a), operator=operator, via="cli")
        entries.append(led.observe(prediction_id, a, source))
    echo_json({"id": prediction_id, "observed": list(answers), "seq": [e.seq for e in entries]})


@ledger.command("reveal")
@click.argument("prediction_id", callback=an_id)
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
    commitment (or comes too late): that is recorded and counted against the predictor.

    \b
    Example:
      mindledger ledger reveal p871d2d04f1b8e14bd01f \\
          --distribution '{"7": 0.6, "3": 0.4}' --salt SALT  # as commit printed
    """
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
                "ledger": v.ledger_id,
                "entries": v.entries,
                "head_seq": v.head_seq,
                "head_hash": v.head_hash,
                "root": None if v.root is None else "sha256:" + v.root.hex(),
                "keys": v.keys,
                "predictions": v.states,
                "forecasts": {"states": v.forecasts, "sealed_runs": v.sealed_runs},
                "calls": v.calls,
                "signatures": v.signatures,
                "failures": [f.to_dict() for f in v.failures],
                "warnings": v.warnings,
            }
        )
    if not as_json:
        # not failures of the chain: what it records that someone should look at
        for line in v.warnings:
            click.echo(f"warning: {line}", err=True)
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
            click.echo(f"  … and {counted(rest, 'more problem')} after it", err=True)
    ctx.exit(1)


@dataclass(frozen=True)
class VerifyOptions:
    """The options of ``mindledger ledger verify``, as given."""

    db_url: str | None
    """--db: the database to verify instead of the configured one."""
    file: str | None
    """--file: an export file to verify offline instead."""
    public_key: str | None
    """--public-key: the service public key, for --file and --proof."""
    full: bool
    """--full: check every signature and re-derive every score too."""
    heads: tuple[str, ...]
    """--head: files of signed tree heads the ledger must extend."""
    proof: str | None
    """--proof: an inclusion-proof bundle to check instead."""
    witness_urls: tuple[str, ...]
    """--witness: witnesses whose latest cosigned head the ledger must extend."""
    witness_heads: tuple[str, ...]
    """--witness-head: files of heads a witness cosigned, checked offline."""
    witness_key: str | None
    """--witness-key: the public key of a witness not in the settings."""
    witness_log: str | None
    """--witness-log: the name such a witness knows this ledger by."""
    fmt: str
    """--format: how the report is printed."""


@reads_only
@ledger.command("verify")
@click.option(
    "--db",
    "db_url",
    default=None,
    callback=non_empty("a database URL"),
    help="Database URL (default: the configured one).",
)
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
@click.option(
    "--head",
    "heads",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="A signed tree head saved earlier (`mindledger ledger head > head.json`): the ledger "
    "must be an append-only extension of it (repeatable).",
)
@click.option(
    "--proof",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Check an inclusion-proof bundle from `mindledger ledger prove` instead (offline; "
    "with --public-key, the head must be signed by that key).",
)
@click.option(
    "--witness",
    "witness_urls",
    multiple=True,
    help="A witness's URL: the ledger must extend the latest head that witness cosigned "
    "(its key and this ledger's log name from [[witnesses]], or --witness-key/--witness-log; "
    "repeatable).",
)
@click.option(
    "--witness-head",
    "witness_heads",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True),
    help="A cosigned head a witness exported (`mindledger witness head NAME`): checked like "
    "--witness, offline (repeatable).",
)
@click.option(
    "--witness-key",
    default=None,
    help="The witness's public key (64 hex digits), for a witness not in [[witnesses]].",
)
@click.option(
    "--witness-log",
    default=None,
    help="The name the witness knows this ledger by, for a witness not in [[witnesses]].",
)
@format_option(
    "the full report (ok, ledger, entries, head_seq, head_hash, root, keys, predictions, "
    "forecasts, calls, signatures, failures, warnings); with --proof, ok and problems"
)
@click.pass_context
@options_as(VerifyOptions)
def verify_cmd(ctx: click.Context, opts: VerifyOptions) -> None:
    """Verify the ledger: every hash, link, reveal and signature, the Merkle tree, the heads
    it published, every head given with --head, and the latest head each --witness cosigned.
    Exit 0 and one line when intact; exit 1 naming the first bad entry and what is wrong
    otherwise (or that a witness's head could not be had or does not verify). Obligations of
    the query proxy that an agent abandoned (a sampled call never predicted within 24 h) are
    warnings on stderr, with counts: the record, not a failure of the chain.

    \b
    Examples:
      mindledger ledger verify
      mindledger ledger verify --head head-2026-11-30.json  # nothing rewritten
      mindledger ledger verify --witness https://witness.example.org:8765
      mindledger ledger verify --file ledger.jsonl --public-key KEY --head head.json
      mindledger ledger verify --proof p871d2d04f.proof.json --public-key KEY
      mindledger ledger verify --format json | jq '.failures'
    """
    as_json = opts.fmt == "json"
    if opts.proof:
        _check_proof(ctx, Path(opts.proof), opts.public_key, as_json)
        return
    saved = [(TreeHead.load(Path(h)), f"the head in {h}") for h in opts.heads]
    if opts.witness_urls or opts.witness_heads:
        from harness.publish.witnesses import witnessed_heads

        found, problems = witnessed_heads(
            get_settings(ctx).witnesses,
            opts.witness_urls,
            opts.witness_heads,
            key=opts.witness_key,
            log_name=opts.witness_log,
        )
        if problems:
            if as_json:
                echo_json({"ok": False, "problems": problems})
            for p in problems:
                click.echo(f"FAILED: {p}", err=True)
            ctx.exit(1)
        saved.extend(found)
    elif opts.witness_key or opts.witness_log:
        raise InputError("only used with --witness or --witness-head", where="--witness-key")
    if opts.file:
        if not opts.public_key:
            raise InputError(
                "verifying a file needs the service's public key", where="--public-key"
            )
        v = verify_export(Path(opts.file), opts.public_key, full=opts.full, heads=saved)
    else:
        if opts.public_key:
            raise InputError("only used with --file or --proof", where="--public-key")
        led = _open(ctx, opts.db_url)
        v = led.verification(full=opts.full, heads=saved)
        if v.ok and saved and not as_json:
            for head, _ in saved:
                c = led.consistency_proof(head.size, v.head_seq)
                click.echo(
                    f"consistent with the head of {head.time} ({head.size} entries): a "
                    f"{len(c['proof'])}-hash consistency proof from {c['nodes_read']} stored "
                    "nodes verifies"
                    if _consistent(head, c)
                    else f"the stored tree does not prove consistency with {head.time}",
                    err=True,
                )
    _report(ctx, v, as_json)


def _consistent(head: TreeHead, c: dict[str, Any]) -> bool:
    return c["old_root"] == head.root and verify_consistency(
        head.size,
        c["new"],
        digest_bytes(head.root),
        digest_bytes(c["new_root"]),
        [digest_bytes(h) for h in c["proof"]],
    )


def _check_proof(ctx: click.Context, path: Path, public_key: str | None, as_json: bool) -> None:
    bundle = read_json_file(path)
    key = None if public_key is None else public_key_hex(parse_public_key(public_key))
    problems = check_proof(bundle, key)
    if as_json:
        echo_json({"ok": not problems, "problems": problems})
    elif not problems:
        head = bundle["tree_head"]["tree_head"]
        click.echo(
            f"ok: {len(bundle['proofs'])} entries are in the ledger {head['ledger']} of "
            f"{head['size']} entries, signed {head['time']}"
        )
    else:
        for p in problems:
            click.echo(f"FAILED: {p}", err=True)
    if problems:
        ctx.exit(1)


@ledger.command("head")
@click.pass_context
def head_cmd(ctx: click.Context) -> None:
    """Print a signed tree head of the ledger (size, Merkle root, time, signature), and add it
    to the heads file. Keep it somewhere else: `ledger verify --head FILE` proves later that
    nothing it covers was changed, even by someone holding this machine's key and disk. The
    head also goes to the ledger's [[witnesses]] (a witness that is down is a warning).

    \b
    Example:
      mindledger ledger head > /mnt/offsite/head-$(date +%F).json
    """
    led = _open(ctx)
    head = led.tree_head()
    if head is None:
        raise InputError("the ledger is empty: there is no head to sign yet", where="ledger")
    echo_json(head.to_dict())
    settings = get_settings(ctx)
    if settings.witnesses:
        from harness.publish.witnesses import COSIGNATURES_FILE, CosignatureLog, send_head

        kept = CosignatureLog(settings.home / COSIGNATURES_FILE)
        for outcome in send_head(led, head, settings.witnesses, kept):
            click.echo(outcome.line(), err=True)


@ledger.command("prove")
@click.argument("subject", callback=an_id)
@REVEAL_OPTION
@click.pass_context
def prove_cmd(ctx: click.Context, subject: str, reveal_held_out: bool) -> None:
    """Print inclusion proofs (RFC 6962) that the entries of prediction SUBJECT (or entry
    number SUBJECT) are in the ledger, against a freshly signed tree head: anyone can check
    them offline with `mindledger ledger verify --proof FILE --public-key KEY`. The bundle
    holds the entries whole; for a prediction on a held-out run's item it is printed only with
    --reveal-held-out (the API's /ledger/proof proves an entry by its hash alone).

    \b
    Example:
      mindledger ledger prove p871d2d04f1b8e14bd01f > p871d2d04f.proof.json
    """
    led = _open(ctx)
    bundle = led.prove(subject)
    if not reveal_held_out:
        subjects = {str(p["entry"]["subject"]) for p in bundle["proofs"]}
        if get_workspace(ctx).store.held_out_items(_items_of(led, subjects)):
            raise UserError(
                f"{subject} is a prediction on a held-out run's item: its entries show the "
                "item, so the bundle is printed only with --reveal-held-out (operators)"
            )
    echo_json(bundle)


def _items_of(led: Ledger, subjects: set[str]) -> list[str | None]:
    """The items the predictions among ``subjects`` were made on (other subjects: none)."""
    items: list[str | None] = []
    for subject in sorted(subjects):
        try:
            items.append(led.prediction(subject).item)
        except NotFoundError:
            continue
    return items


@ledger.command("rotate-key")
@click.pass_context
def rotate_key_cmd(ctx: click.Context) -> None:
    """Replace the service's signing key: the ledger records the change in an entry signed by
    the old key (with the new key's own signature), so verification follows it; a key swapped
    by any other means fails verification. Give third parties the new public key.

    \b
    Example:
      mindledger ledger rotate-key
    """
    settings = get_settings(ctx)
    led = _open(ctx)
    old = led.public_key_hex
    new = rotate_service_key(settings.home, led.rotate_key)
    echo_json({"previous": old, "public_key": new, "key_file": str(settings.home / KEY_FILE)})


@ledger.command("export")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False), help="JSONL file.")
@REVEAL_OPTION
@click.pass_context
def export_cmd(ctx: click.Context, out: str, reveal_held_out: bool) -> None:
    """Export every entry and a signed trailer; verify it anywhere with
    `mindledger ledger verify --file FILE --public-key KEY`.

    An export holds every entry whole, as its hash covers its text: when the ledger holds
    predictions made on held-out runs' items, it is written only with --reveal-held-out (for
    auditors an operator trusts with held-out items). `ledger verify`, `ledger head` and
    `ledger prove` check the same ledger without showing any entry's text.

    \b
    Example:
      mindledger ledger export --out ledger-$(date +%F).jsonl
    """
    led = _open(ctx)
    if not reveal_held_out:
        store = get_workspace(ctx).store
        held = store.held_out_items(p.item for p in led.predictions(None, None))
        if held:
            raise UserError(
                f"the ledger holds predictions on {counted(len(held), 'held-out item')}: an export "
                "holds every entry's text (its hash covers it), so it would show them; pass "
                "--reveal-held-out to export for an auditor who may see held-out items, or "
                "check the ledger without its text with `mindledger ledger verify`, `ledger "
                "head` and `ledger prove`"
            )
    n = led.export(Path(out))
    echo_json({"file": out, "entries": n, "public_key": led.public_key_hex})


@reads_only
@ledger.command("show")
@click.option("--predictor", default=None, help="Only this predictor's predictions.")
@click.option("--target", default=None, help="Only predictions of this target.")
@click.option(
    "--id", "prediction_id", default=None, callback=an_id, help="One prediction, in full."
)
@REVEAL_OPTION
@format_option(
    "an object of predictions and summary (with --id, the one prediction)",
    csv="one row per prediction (id, state, predictor, target, query, item, committed_at, "
    "deadline, observed, log_score, brier, top1_match, reason, agent_signed, query_hash)",
)
@click.pass_context
def show_cmd(
    ctx: click.Context,
    predictor: str | None,
    target: str | None,
    prediction_id: str | None,
    reveal_held_out: bool,
    fmt: str,
) -> None:
    """List predictions with their states and scores, and aggregate scores (expired and
    rejected predictions count with the worst-case score), then the self-forecasts (with
    --id f…, one forecast). A prediction made on a held-out
    run's item is shown without its query, item and observed answers ("withheld"; its hashes
    and scores stay) unless --reveal-held-out (operators only).

    JSON (--format json): "predictions", one object per prediction (id, state, predictor,
    target, query, item, condition, commitment, committed_at, deadline, observed, provenance,
    query_hash, proxied, scores, reason, agent_signed, withheld: null, or why the query, item
    and observed answers are null and empty, with observed_count), and "summary" (predictor, target,
    states, n, penalised, log_score, brier, top1_accuracy, ece, skill, …). With --id, that
    prediction's object alone. "forecasts": one object per self-forecast (id, status,
    predictor, run_id, figure, commitment, committed_at, seq, held, forecast, reason,
    revealed_at, outcome, naive, rule, loss, naive_loss, note).

    \b
    Examples:
      mindledger ledger show --predictor piper
      mindledger ledger show --format json | jq '.summary.log_score'
      mindledger ledger show --predictor piper --format csv > piper.csv
      mindledger ledger show --id p871d2d04f1b8e14bd01f
    """
    led = _open(ctx)
    store = get_workspace(ctx).store
    now = led.clock()
    if prediction_id and prediction_id.startswith("f"):
        _show_forecast(led.forecast(prediction_id), fmt)
        return
    if prediction_id:
        one = store.disclosed_predictions(
            [led.prediction(prediction_id).to_dict(now)], reveal_held_out=reveal_held_out
        )[0]
        if fmt == "json":
            echo_json(one)
        elif fmt == "csv":
            click.echo(_csv([one]), nl=False)
        else:
            _print_prediction(one)
        return
    shown = store.disclosed_predictions(
        [s.to_dict(now) for s in led.predictions(predictor, target)],
        reveal_held_out=reveal_held_out,
    )
    if fmt == "csv":
        click.echo(_csv(shown), nl=False)
        return
    summary = led.summary(predictor, target)
    # self-forecasts are of the predictor itself: none is "of a target"
    forecasts = [] if target is not None else led.forecasts(predictor=predictor)
    if fmt == "json":
        echo_json(
            {
                "predictions": shown,
                "summary": summary,
                "forecasts": [dataclasses.asdict(f) for f in forecasts],
            }
        )
        return
    if shown or not forecasts:
        _print_predictions(shown, summary)
    if forecasts:
        _print_forecasts(forecasts)


def _show_forecast(state: ForecastState, fmt: str) -> None:
    """``ledger show --id f…``: one self-forecast (JSON, or a table of its fields)."""
    one = dataclasses.asdict(state)
    if fmt == "json":
        echo_json(one)
    elif fmt == "csv":
        raise UserError("--format csv lists predictions: show a forecast as json or a table")
    else:
        _print_prediction(one)


def _print_forecasts(forecasts: list[ForecastState]) -> None:
    """The self-forecasts (issue 29) under the predictions: one row each."""
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console

    table = Table(title="self-forecasts")
    for col in ("id", "status", "predictor", "run", "figure", "committed"):
        table.add_column(col, no_wrap=col == "id", overflow="fold")
    for col in ("outcome", "loss", "naive loss"):
        table.add_column(col, justify="right")
    for f in forecasts:
        cells = [f.id, f.status + (" (held)" if f.held else ""), f.predictor, f.run_id, f.figure,
                 f.committed_at[:19], *(("" if v is None else f"{v:.3f}")
                                       for v in (f.outcome, f.loss, f.naive_loss))]  # fmt: skip
        table.add_row(*(Text(c) for c in cells))
    console = stdout_console()
    print_table(console, table, drop=("committed", "naive loss"))
    counts: dict[str, int] = {}
    for f in forecasts:
        counts[f.status] = counts.get(f.status, 0) + 1
    states = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    console.print(f"{counted(len(forecasts), 'self-forecast')}: {states}", highlight=False)


CSV_COLUMNS = ("id", "state", "predictor", "target", "query", "item", "committed_at",
               "deadline", "observed", "log_score", "brier", "top1_match", "reason",
               "agent_signed", "query_hash")


def _csv(predictions: list[dict[str, Any]]) -> str:
    """``ledger show --format csv``: a row per prediction; ``observed`` counts the answers."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for p in predictions:
        scores = p.get("scores") or {}
        row = {**p, **{k: scores.get(k) for k in ("log_score", "brier", "top1_match")},
               "observed": _observed_count(p)}
        if p.get("withheld"):
            row.update(query="withheld", item="withheld")
        writer.writerow(["" if row.get(k) is None else row[k] for k in CSV_COLUMNS])
    return out.getvalue()


def _observed_count(p: dict[str, Any]) -> int:
    """How many answers a prediction observed (a withheld one says so without them)."""
    count = p.get("observed_count")
    return count if isinstance(count, int) else len(p.get("observed") or ())


def _score(scores: dict[str, Any] | None, key: str) -> str:
    value = (scores or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def _metric(block: Any) -> str:
    if not isinstance(block, dict) or not isinstance(block.get("value"), int | float):
        return "—"
    return f"{block['value']:.3f} (n={block.get('n', 0)})"


def _print_predictions(shown: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text  # cells as plain text: a query's "[red]" is not markup

    if not shown:
        click.echo("no predictions (commit one with `mindledger ledger commit`)", err=True)
        return
    from harness.cli.tables import print_table, stdout_console

    table = Table()
    for col in ("id", "state", "predictor → target", "query", "observed"):
        table.add_column(col, no_wrap=col == "id", overflow="fold" if col == "query" else "ellipsis")
    for col in ("log score", "Brier", "top-1"):
        table.add_column(col, justify="right")
    for p in shown:
        query = "withheld (held-out)" if p.get("withheld") else str(p["query"])
        cells = [
            p["id"],
            p["state"],
            f"{p['predictor']} → {p['target']}",
            query if len(query) <= 60 else query[:59] + "…",
            str(_observed_count(p)),
            _score(p["scores"], "log_score"),
            _score(p["scores"], "brier"),
            _score(p["scores"], "top1_match"),
        ]
        table.add_row(*(Text(str(c)) for c in cells))
    console = stdout_console()
    print_table(console, table, drop=("observed", "Brier", "top-1"))
    states = ", ".join(f"{n} {state}" for state, n in sorted(summary["states"].items()))
    console.print(
        f"{counted(len(shown), 'prediction')}: {states}. Over the {summary['n']} final "
        f"{'one' if summary['n'] == 1 else 'ones'}"
        f" ({summary['penalised']} with the worst-case score): log score "
        f"{_metric(summary['log_score'])}, Brier {_metric(summary['brier'])}, top-1 "
        f"{_metric(summary['top1_accuracy'])}, skill {_metric(summary['skill'])}",
        highlight=False,
    )


def _print_prediction(p: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from harness.cli.tables import print_table, stdout_console

    table = Table(show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, value in p.items():
        if value is None or value == [] or value == {}:
            continue
        if key == "scores":
            value = ", ".join(f"{k} {_score(value, k) or value[k]}" for k in sorted(value))
        elif key == "provenance":
            value = "\n".join(
                ", ".join(f"{k}={v}" for k, v in sorted(entry.items()) if v is not None)
                if isinstance(entry, dict)
                else str(entry)
                for entry in value
            )
        elif isinstance(value, list):
            value = ", ".join(map(str, value))
        elif isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in sorted(value.items()))
        table.add_row(key, Text(str(value)))
    print_table(stdout_console(), table)


@ledger.command("register")
@click.option(
    "--predictor", required=True, callback=agent_name, help="The agent registering its key."
)
@click.option("--public-key", required=True, help="Its Ed25519 public key (hex, or a PEM file).")
@click.pass_context
def register_cmd(ctx: click.Context, predictor: str, public_key: str) -> None:
    """Register an agent's public key: its commits must then be signed with it.

    \b
    Example:
      mindledger ledger register --predictor piper --public-key piper.pub
    """
    e = _open(ctx).register_agent(predictor, public_key)
    echo_json({"predictor": predictor, "seq": e.seq, "entry": e.hash})


@ledger.command("expire")
@click.pass_context
def expire_cmd(ctx: click.Context) -> None:
    """Record every open prediction past its deadline as expired (worst-case score).

    \b
    Example:
      mindledger ledger expire
    """
    echo_json({"expired": _open(ctx).expire_overdue()})


@ledger.command("key")
@click.pass_context
def key_cmd(ctx: click.Context) -> None:
    """Print the service's public key, for third parties verifying exports.

    \b
    Example:
      mindledger ledger key | jq -r .public_key > service.pub
    """
    settings = get_settings(ctx)
    key = load_or_create_service_key(settings.home)
    echo_json({"public_key": public_key_hex(key), "key_file": str(settings.home / KEY_FILE)})
