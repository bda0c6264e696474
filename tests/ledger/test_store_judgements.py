"""Judgements in the store (SQLite and PostgreSQL): written once per trial and judge, read back
whole, and loaded by the reports."""

from __future__ import annotations

from games import make_trial
from ledger.db import open_engine
from ledger.store import JudgementRecord, RunAgent, Store
from reports._data import judgements_of


def test_judgements_are_stored_once_per_trial_and_judge(db_url: str) -> None:
    store = Store(open_engine(db_url))
    item = make_trial(0, {"game": "11-20", "condition": "recursive", "target_depth": 2})
    store.create_run("r1", suite="custom", seed=1, held_out=False, params={},
                     agents=[RunAgent("bot", "agent", {"adapter": "openai"})], items=[item])
    rec = JudgementRecord(
        run_id="r1", agent="bot", item_id=item.id, judge="j1", judge_hash="sha256:00",
        status="ok", reply_text='{"final_belief_point": 60}',
        extraction={"final_belief_point": 60}, reading={"dropped": ["chain[0]"]},
        score={"details": {"K_L": 6}}, grounded=1, ungrounded=1, dropped=1,
    )  # fmt: skip
    assert store.record_judgement(rec) is True
    assert store.record_judgement(rec) is False  # the same judge again: nothing written
    assert store.judged_pairs("r1", "j1") == {("bot", item.id)}
    assert store.judged_pairs("r1", "j2") == set()
    other = JudgementRecord(**{**rec.__dict__, "judge": "j2", "status": "parse_error",
                               "extraction": None, "reading": None, "score": None})
    assert store.record_judgement(other) is True  # another judge may judge it too
    first, second = store.judgements("r1")
    assert first.created_at and (first.extraction, first.score) == (rec.extraction, rec.score)
    assert (first.grounded, first.ungrounded, first.dropped) == (1, 1, 1)
    assert second.status == "parse_error" and second.score is None
    # the reports take a trial's latest readable judgement: j2's reply could not be read
    loaded = judgements_of(store, "r1")
    assert list(loaded) == [("bot", item.id)]
    assert loaded[("bot", item.id)].judge == "j1" and loaded[("bot", item.id)].details == {"K_L": 6}
    third = JudgementRecord(**{**rec.__dict__, "judge": "j3", "score": {"details": {"K_L": 2}}})
    assert store.record_judgement(third) is True
    assert judgements_of(store, "r1")[("bot", item.id)].details == {"K_L": 2}
    store.engine.dispose()
