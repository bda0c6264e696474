"""Stated signals from two sources (reports/_judged.py): the agent's own statement first, the
extraction judge's reading only where the answer stated nothing, each figure saying which."""

from __future__ import annotations

from typing import Any

from games import make_trial, score
from ledger.store import RunAgent
from reports._data import Judged, run_data
from reports.profile import analyse


def _trial(item: Any, answer: Any) -> dict[str, Any]:
    from mindledger.canonical import canonical_json

    s = score(item, answer)
    return {"agent": "bot", "item_id": item.id, "status": "ok", "correct": s.correct,
            "confidence": None, "score_value": s.value, "primary_error": s.primary_error,
            "tokens_in": 0, "tokens_out": 0, "latency_s": 0.0,
            "score_json": canonical_json(s.to_dict()).decode(), "answer_json": None,
            "error": None}


def test_the_answer_comes_first_and_the_judge_fills_in() -> None:
    stated = make_trial(0, {"game": "11-20", "condition": "recursive", "target_depth": 6})
    silent = make_trial(1, {"game": "11-20", "condition": "recursive", "target_depth": 2})
    # the answer states belief 60 (K_L 6); the judge read 62 (K_L 5): the answer's counts
    own = {"action": 58, "final_belief_point": 60}
    judge_says = score(stated, {"action": 58, "final_belief_point": 62}).details
    # the other answer states nothing; the judge read its belief a(1) (K_L 2)
    belief = silent.truth["idr"][1]
    action = silent.truth["idr"][2]
    judged_silent = score(silent, {"action": action, "final_belief_point": belief,
                                   "mentalizing": True}).details
    data = run_data(
        {"id": "r", "params": {}, "held_out": False}, [RunAgent("bot", "agent", {})],
        [stated.to_dict(), silent.to_dict()], [_trial(stated, own), _trial(silent, action)],
    )  # fmt: skip
    data.judgements = {
        ("bot", stated.id): Judged("j", "ok", False, 2, 0, 0, judge_says),
        ("bot", silent.id): Judged("j", "ok", True, 2, 1, 1, judged_silent),
    }
    ds = analyse(data, n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    assert ds["K_L"]["value"] == (6 + 2) / 2 and ds["K_L"]["n"] == 2
    assert ds["sources"]["K_L"] == {"source": "answer+judge", "answer": 1, "judge": 1}
    assert ds["K_L"]["source"] == "answer+judge"
    assert ds["sources"]["mentalizing"] == {"source": "judge", "answer": 0, "judge": 1}
    assert ds["mentalizing"]["value"] == 1.0
    assert ds["sources"]["chain_consistency"]["source"] is None  # no chain from either
    assert ds["judge"] == {"judged": 2, "calls": 1, "cache_hits": 1, "parse_failures": 0,
                           "ungrounded": 1, "dropped": 1, "judges": ["j"]}
    # an unreadable judgement contributes nothing
    data.judgements[("bot", silent.id)] = Judged("j", "parse_error", False, 0, 0, 0, {})
    ds = analyse(data, n_boot=100).profile.to_json()["agents"]["bot"]["depth_signals"]
    assert ds["sources"]["K_L"] == {"source": "answer", "answer": 1, "judge": 0}
    assert ds["judge"]["parse_failures"] == 1
