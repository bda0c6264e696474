"""What a profile may show about a held-out run (the rule is :mod:`mindledger.disclosure`).

The profile's ``run`` block: ``seed`` becomes None and ``seed_withheld`` True (it is False
whenever the seed is shown), and its params lose what
:func:`~mindledger.disclosure.disclosed_params` takes out. The profile holds no item bodies, ids or expected answers of its own; the per-trial
CSV is withheld row by row (:class:`~mindledger.disclosure.TrialRowRedactor`). An agent's
profile loses the reply it could not read (:func:`disclosed_agent`), which quotes the item.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mindledger.disclosure import disclosed_params, shown_seed
from reports._json import JsonObject
from reports.model import AgentProfile, RunInfo

__all__ = [
    "disclosed_agent",
    "disclosed_profile",
    "disclosed_run",
    "disclosed_run_info",
    "held_out_of",
]


def held_out_of(profile: Mapping[str, Any]) -> bool:
    """Whether a profile is of a held-out run (by its own flag or its run block's)."""
    run = profile.get("run")
    return bool(profile.get("held_out")) or (isinstance(run, Mapping) and bool(run.get("held_out")))


def disclosed_run(
    run: Mapping[str, Any], *, reveal_held_out: bool, held_out: bool | None = None
) -> JsonObject:
    """A run block (its JSON) as a reader may see it: for a held-out run (``held_out``, else
    the block's own flag) and no operator, without its seed, saying so in ``seed_withheld``."""
    held = bool(run.get("held_out")) if held_out is None else held_out
    out = dict(run)
    seed = shown_seed(out.get("seed"), held_out=held, reveal_held_out=reveal_held_out)
    out["seed"] = seed
    out["seed_withheld"] = held and seed is None
    params = out.get("params")
    if isinstance(params, Mapping):
        out["params"] = disclosed_params(params, held_out=held, reveal_held_out=reveal_held_out)
    return out


def disclosed_run_info(
    run: RunInfo, *, reveal_held_out: bool, held_out: bool | None = None
) -> RunInfo:
    """:func:`disclosed_run` of a typed run block (the same rule, the same keys in the same
    order)."""
    block = run.model_dump(exclude_unset=True)
    return RunInfo.model_validate(
        disclosed_run(block, reveal_held_out=reveal_held_out, held_out=held_out)
    )


def disclosed_profile(profile: Mapping[str, Any], *, reveal_held_out: bool) -> JsonObject:
    """The profile's JSON as a reader may see it (a shallow copy; only its ``run`` block
    changes)."""
    run = profile.get("run") or {}
    return {
        **profile,
        "run": disclosed_run(run, reveal_held_out=reveal_held_out, held_out=held_out_of(profile)),
    }


def disclosed_agent(a: AgentProfile) -> AgentProfile:
    """An agent's profile of a held-out run as a reader may see it: without the reply it could
    not read (``api_errors.unparsed_example``: the parse problem quotes the item's choices and
    the answer, which ``mindledger trials`` withholds too)."""
    errors = a.api_errors
    if errors is None or errors.unparsed_example is None:
        return a
    return a.model_copy(update={"api_errors": errors.model_copy(update={"unparsed_example": None})})
