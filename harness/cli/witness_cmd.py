"""``mindledger witness``: this daemon as a witness of other mindledger ledgers."""

from __future__ import annotations

import click

from harness.cli.common import echo_json, get_settings
from harness.cli.conventions import an_id
from ledger.cosign import WITNESS_DIR, WitnessStore
from ledger.db import utc_now
from ledger.keys import WITNESS_KEY_FILE, load_or_create_witness_key, public_key_hex
from mindledger.errors import NotFoundError


@click.group()
def witness() -> None:
    """Witness other ledgers: cosign their tree heads, each only if it extends the last.

    The daemon (`mindledger serve`) answers POST /witness/cosign for every log registered here;
    give the log's operator this witness's key (`mindledger witness key`) and URL for their
    [[witnesses]] settings.

    \b
    Examples:
      mindledger witness add-log lab.example/piper 03a107bf…   # its public key
      mindledger witness key
      mindledger witness head lab.example/piper > cosigned.json
    """


@witness.command("add-log")
@click.argument("name", callback=an_id)
@click.argument("public_key")
@click.pass_context
def add_log_cmd(ctx: click.Context, name: str, public_key: str) -> None:
    """Cosign the heads of log NAME, signed by PUBLIC_KEY (its service key: 64 hex digits or
    a .pub/PEM file). Registering a known NAME again replaces its key (after the log's
    `ledger rotate-key`) and keeps the heads cosigned for it.

    \b
    Example:
      mindledger witness add-log lab.example/piper "$(cat piper-ledger-ed25519.pub)"
    """
    home = get_settings(ctx).home
    record, new = WitnessStore(home / WITNESS_DIR).add_log(name, public_key, now=utc_now())
    cosigned = record.cosigned
    echo_json(
        {
            "log": record.log,
            "public_key": record.public_key,
            "registered": "new" if new else "key replaced",
            "cosigned_size": None if cosigned is None else cosigned.tree_head.size,
            "witness_key": public_key_hex(load_or_create_witness_key(home)),
        }
    )


@witness.command("logs")
@click.pass_context
def logs_cmd(ctx: click.Context) -> None:
    """List the logs this witness cosigns for, with the latest head cosigned for each.

    \b
    Example:
      mindledger witness logs
    """
    home = get_settings(ctx).home
    echo_json(
        [
            {
                "log": r.log,
                "public_key": r.public_key,
                "added": r.added,
                "cosigned_size": None if r.cosigned is None else r.cosigned.tree_head.size,
                "cosigned_root": None if r.cosigned is None else r.cosigned.tree_head.root,
            }
            for r in WitnessStore(home / WITNESS_DIR).logs()
        ]
    )


@witness.command("key")
@click.pass_context
def key_cmd(ctx: click.Context) -> None:
    """Print this witness's public key (created on first use): a witnessed ledger's operator
    puts it in their [[witnesses]] settings.

    \b
    Example:
      mindledger witness key
    """
    home = get_settings(ctx).home
    key = load_or_create_witness_key(home)
    echo_json({"public_key": public_key_hex(key), "key_file": str(home / WITNESS_KEY_FILE)})


@witness.command("head")
@click.argument("name", callback=an_id)
@click.pass_context
def head_cmd(ctx: click.Context, name: str) -> None:
    """Print the latest head cosigned for log NAME: anyone can check the log against it with
    `mindledger ledger verify --witness-head FILE`.

    \b
    Example:
      mindledger witness head lab.example/piper > piper-cosigned.json
    """
    record = WitnessStore(get_settings(ctx).home / WITNESS_DIR).record(name)
    if record is None or record.cosigned is None:
        what = "is not registered" if record is None else "has no cosigned head yet"
        raise NotFoundError(f"log {name!r} {what} (see `mindledger witness logs`)")
    echo_json(record.cosigned.to_dict())
