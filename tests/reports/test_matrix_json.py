"""reports.matrix_json: the matrix's JSON reads back into the typed summary whose JSON it is,
byte for byte (cells with every reason in its place, self-advantages with their paired values,
conditions, depths, second-order and past-seat sections, a not-divergent verdict)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import matrix as matrix_items
from harness.agent.agents import ReferenceAgent
from harness.matrix.runs import MatrixOptions, make_items, run_matrix
from ledger import open_ledger
from ledger.scoring import penalty_scores
from matrix import NO_ANSWER
from reports import matrix_summary
from reports.matrix_json import summary_of
from reports.matrix_summary import MatrixPlan, summarise


def _text(d: object) -> str:
    return json.dumps(d, indent=1, allow_nan=True)


async def test_the_json_reads_back_into_the_summary_it_came_from(tmp_path: Path) -> None:
    led = open_ledger(tmp_path / "home", f"sqlite:///{tmp_path / 'm.db'}")
    agents = {n: ReferenceAgent(n, p, seed=5) for n, p in (
        ("seer", "clairvoyant"), ("habit", "habit"), ("dice", "random"))}  # fmt: skip
    items = matrix_items.candidates(7, {"nesttom": 12, "arbitrary": 4})
    seen = {}
    original = matrix_summary.summarise

    def spy(*args: object, **kw: object) -> object:
        seen["args"], seen["kw"] = args, kw
        return original(*args, **kw)  # type: ignore[arg-type]

    import harness.matrix.runs as harness_matrix

    harness_matrix.summarise = spy  # type: ignore[assignment]
    try:
        result = await run_matrix(
            agents, items, led, past_seats=["habit"], exposure=make_items(99, 2),
            options=MatrixOptions(samples=3, n_boot=60, stats_seed=1, second_order=True,
                                  conditions=("zero-shot", "observe:1", "simulate")),
        )  # fmt: skip
    finally:
        harness_matrix.summarise = original
    assert {"by_condition", "by_depth", "second_order", "past_seat", "learning_curve",
            "simulate_contrast"} <= set(result)  # fmt: skip
    assert _text(summary_of(result).to_dict()) == _text(result)
    # every cell's reason in its place: a target that never answers readably, an unparsed
    # predictor, cells on fewer items, a pilot's verdict on top
    names, its, samples, outcomes, _ = seen["args"]  # type: ignore[misc]
    edited = {}
    for n, (iid, o) in enumerate(sorted(outcomes.items())):
        targets = {**o.targets, "dice": dataclasses.replace(
            o.targets["dice"], samples=tuple(NO_ANSWER for _ in o.targets["dice"].samples))}
        preds = {k: dataclasses.replace(pr, outcome="unparsed", distribution=None, top1=None,
                                        scores=penalty_scores(pr.observed))
                 if k[:2] == ("seer", "habit") and n % 4 else pr
                 for k, pr in o.predictions.items()}  # fmt: skip
        for k, pr in preds.items():  # cells on fewer items: a paired value apart
            if k[:2] == ("habit", "seer") and n < 6:
                preds[k] = dataclasses.replace(pr, outcome="unscored", scores=None)
        edited[iid] = dataclasses.replace(o, targets=targets, predictions=preds)
    plan = MatrixPlan(60, 2, ("zero-shot", "simulate"), True, ("habit",))
    summary = summarise(names, its, samples, edited, plan)
    d = summary.to_dict()
    assert any(c["unreadable"].get("reason") for c in d["cells"])
    assert any("paired_value" in f for e in d["self_advantage"].values() for f in e.values())
    assert _text(summary_of(d).to_dict()) == _text(d)
    verdict = summary.with_not_divergent("the targets answer alike").to_dict()
    assert all(c["skill"]["reason"] == "the targets answer alike" for c in verdict["cells"])
    assert _text(summary_of(verdict).to_dict()) == _text(verdict)
