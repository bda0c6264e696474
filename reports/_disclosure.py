"""What a report may show about a held-out run (the rule is :mod:`mindledger.disclosure`).

A held-out run's seed, its items' seeds and anything cheap to invert back to one are withheld
unless an operator asks (``reveal_held_out=True``):

- the profile's ``run`` block: ``seed`` becomes None and ``seed_withheld`` True (it is False
  whenever the seed is shown);
- per-trial exports: score details that are a bare hash of an item's seed (the A/B/C scenario
  id hashes nothing but the generator, the kind and the scenario seed, so it can be searched
  for the seed) are replaced by a label that is stable within the run and says nothing.

Item ids, story ids and variant names are hashes of whole items, stories or game parameters:
they stay, as the run's identity needs them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mindledger.disclosure import shown_seed

__all__ = [
    "SEED_DERIVED_DETAILS",
    "ScoreJsonRedactor",
    "disclosed_profile",
    "disclosed_run",
    "held_out_of",
]

SEED_DERIVED_DETAILS = ("scenario",)
"""Score-detail keys whose value is a cheap function of an item's seed alone."""


def held_out_of(profile: Mapping[str, Any]) -> bool:
    """Whether a profile is of a held-out run (by its own flag or its run block's)."""
    run = profile.get("run")
    return bool(profile.get("held_out")) or (isinstance(run, Mapping) and bool(run.get("held_out")))


def disclosed_run(
    run: Mapping[str, Any], *, reveal_held_out: bool, held_out: bool | None = None
) -> dict[str, Any]:
    """A run block as a reader may see it: for a held-out run (``held_out``, else the block's
    own flag) and no operator, without its seed, saying so in ``seed_withheld``."""
    held = bool(run.get("held_out")) if held_out is None else held_out
    out = dict(run)
    seed = shown_seed(out.get("seed"), held_out=held, reveal_held_out=reveal_held_out)
    out["seed"] = seed
    out["seed_withheld"] = held and seed is None
    params = out.get("params")
    if out["seed_withheld"] and isinstance(params, Mapping):
        out["params"] = {k: v for k, v in params.items() if k != "seed"}
    return out


def disclosed_profile(profile: Mapping[str, Any], *, reveal_held_out: bool) -> dict[str, Any]:
    """The profile as a reader may see it (a shallow copy; only its ``run`` block changes)."""
    run = profile.get("run") or {}
    return {
        **profile,
        "run": disclosed_run(run, reveal_held_out=reveal_held_out, held_out=held_out_of(profile)),
    }


class ScoreJsonRedactor:
    """Replaces :data:`SEED_DERIVED_DETAILS` in a run's stored score JSON by ``scenario-1``,
    ``scenario-2`` … in order of first appearance, so that rows of one scenario still group."""

    def __init__(self) -> None:
        self.labels: dict[str, dict[str, str]] = {key: {} for key in SEED_DERIVED_DETAILS}

    def __call__(self, raw: str | None) -> str | None:
        if not raw:
            return raw
        try:
            score = json.loads(raw)
        except ValueError:
            return raw
        details = score.get("details") if isinstance(score, dict) else None
        if not isinstance(details, dict) or not any(
            details.get(k) is not None for k in SEED_DERIVED_DETAILS
        ):
            return raw
        for key in SEED_DERIVED_DETAILS:
            value = details.get(key)
            if value is None:
                continue
            labels = self.labels[key]
            details[key] = labels.setdefault(str(value), f"{key}-{len(labels) + 1}")
        return json.dumps(score, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
