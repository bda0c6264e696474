"""Matrix runs queued for workers: the same run executed in process and through queue workers
stores the same predictions and scores; every prediction is committed before its target's
first sample (walking the chain); a batch stranded on a dead worker is re-queued and finishes
the run, nothing stored or committed twice.

On real PostgreSQL (``MINDLEDGER_TEST_PG_URL``), a database per test (see test_queue.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.config.settings import Settings, load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import (
    MatrixOptions,
    create_matrix_run,
    execute_matrix_run,
    make_items,
    stored_summary,
)
from harness.run.build import plan_agents
from ledger.predictions import Ledger
from ledger.store import Store
from tests.harness.queue.test_queue import (
    _age_heartbeat,
    _cli,
    _jobs,
    _take,
    _trial_counts,
    pg_database,  # noqa: F401  (a fixture)
)

POLICIES = ("habit", "projection", "random")
NAMES = [f"ref:{p}" for p in POLICIES]
N_ITEMS = 4
SAMPLES = 3
CONDITIONS = ("zero-shot", "observe:2")
SEED = 11
PER_ITEM = len(NAMES) + len(NAMES) ** 2 * len(CONDITIONS)
"""Trials of one item: each target's, and a prediction per (predictor, target, condition)."""


def _settings(url: str) -> Settings:
    return load_settings(None, flags={"db_url": url})


def _plan(ws: Workspace) -> str:
    planned = plan_agents(ws.settings, agents=(), references=POLICIES, no_control=True)
    run_id, _ = create_matrix_run(
        ws.store,
        ws.settings,
        planned=planned,
        options=MatrixOptions(n_items=N_ITEMS, samples=SAMPLES, seed=SEED, conditions=CONDITIONS),
    )
    return run_id


def _stored(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """Every trial of the run as what must agree between two executions of it: agent, item,
    status, answer and score, less the ledger's prediction id (a fresh commitment each time)
    and the order of a prediction's observations (timing)."""
    out = []
    for t in store.trials(run_id):
        score = json.loads(t.score_json or "{}")
        score.pop("prediction", None)
        if "observed" in score:  # in the order the ledger recorded concurrent observations
            score["observed"] = sorted(score["observed"])
        out.append((t.agent, t.item_id, t.status, t.answer_json, json.dumps(score, sort_keys=True)))
    return sorted(out)


def _main(*args: str) -> int:
    """Run the CLI in this process; its exit code."""
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return int(exc.value.code or 0)


def _numbers(result: dict[str, Any]) -> list[Any]:
    return [result["cells"], result["self_advantage"], result["target_errors"], result["items"],
            result["by_condition"]]  # fmt: skip


def _commits_precede_samples(led: Ledger, store: Store, run_id: str) -> int:
    """Walk the chain: every prediction the run stored about (target, item) is committed
    before the first observation of that target's answer on it recorded against any of them.
    Returns the number of those predictions."""
    ours = {
        score["prediction"]
        for t in store.trials(run_id)
        if (score := json.loads(t.score_json or "{}")).get("role") == "prediction"
    }
    entries = led.entries()
    about = {e.subject: (e.payload["target"], e.payload["item"]) for e in entries
             if e.kind == "commit" and e.subject in ours}  # fmt: skip
    assert set(about) == ours
    last_commit: dict[tuple[str, str], int] = {}
    first_observe: dict[tuple[str, str], int] = {}
    for e in entries:
        if e.subject not in about:
            continue
        if e.kind == "commit":
            key = about[e.subject]
            last_commit[key] = max(last_commit.get(key, -1), e.seq)
        elif e.kind == "observe":
            first_observe.setdefault(about[e.subject], e.seq)
    items = [it.id for it in make_items(SEED, N_ITEMS)]
    assert set(first_observe) == set(last_commit) == {(t, i) for t in NAMES for i in items}
    late = {k: (last_commit[k], first_observe[k]) for k in last_commit
            if last_commit[k] >= first_observe[k]}  # fmt: skip
    assert late == {}, late
    return len(about)


@pytest.mark.postgres
def test_matrix_queued_to_two_workers_stores_what_the_in_process_matrix_stores(
    pg_database: str,  # noqa: F811
    isolated_home: Path,
) -> None:
    from harness.queue.batches import MATRIX_TASK, enqueue_run, pending_jobs

    with Workspace.open(_settings(pg_database)) as ws:
        here = _plan(ws)
        execute_matrix_run(ws.store, ws.settings, ws.ledger, here, n_boot=200)
        assert ws.store.get_run(here).status == "complete"
        in_process = _stored(ws.store, here)
        assert len(in_process) == N_ITEMS * PER_ITEM + len(NAMES) * 2  # + exposure answers
        commits_here = len([e for e in ws.ledger.entries() if e.kind == "commit"])

        queued = _plan(ws)
        # one item per batch, so that both workers have work to take
        enq = _cli(pg_database, "enqueue", queued, "--batch-size", "1")
        out, err = enq.communicate(timeout=60)
        assert enq.returncode == 0, err
        assert f"queued {N_ITEMS} new batch(es)" in out
        assert ws.store.get_run(queued).status == "queued"
        jobs = _jobs(pg_database)
        assert len(jobs) == N_ITEMS
        assert all(a["item_ids"] == [a["item_ids"][0]] for _, _, a in jobs.values())  # type: ignore[index]
        with ws.store.engine.connect() as conn:
            import sqlalchemy as sa

            tasks = {n for (n,) in conn.execute(sa.text("SELECT task_name FROM procrastinate_jobs"))}
        assert tasks == {MATRIX_TASK}
        # queued once: enqueueing again queues nothing new
        again = enqueue_run(ws.store, ws.settings, queued, batch_size=1)
        assert (again.deferred, again.held) == (0, N_ITEMS)

        workers = [_cli(pg_database, "worker", "--once", "--name", f"w{i}") for i in (1, 2)]
        logs = [w.communicate(timeout=120) for w in workers]
        for w, (_, err) in zip(workers, logs, strict=True):
            assert w.returncode == 0, err
        assert sum(err.count("1 item(s) run of a batch of 1") for _, err in logs) == N_ITEMS

        run = ws.store.get_run(queued)
        assert run.status == "complete" and run.finished_at is not None
        assert pending_jobs(pg_database, queued) == []
        assert set(_trial_counts(ws.store, queued)) == {1}
        assert _stored(ws.store, queued) == in_process
        assert _numbers(stored_summary(ws.store, queued, n_boot=200).to_dict()) == _numbers(
            stored_summary(ws.store, here, n_boot=200).to_dict()
        )
        # the workers' commitments are in the same ledger, each before its target's samples
        assert _commits_precede_samples(ws.ledger, ws.store, here) == commits_here
        commits = _commits_precede_samples(ws.ledger, ws.store, queued)
        assert commits == commits_here == N_ITEMS * len(NAMES) ** 2 * len(CONDITIONS)
        every = [e for e in ws.ledger.entries() if e.kind == "commit"]
        assert len(every) == 2 * commits  # and no other commitment was made
        assert ws.ledger.verify() == []


@pytest.mark.postgres
def test_cli_matrix_queue_then_a_worker_finishes_it(
    pg_database: str,  # noqa: F811
    isolated_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from harness.queue.batches import pending_jobs, run_worker

    refs = [a for p in POLICIES for a in ("--reference", p)]
    args = ("--db", pg_database, "matrix", *refs, "--items", str(N_ITEMS), "--samples",
            str(SAMPLES), "--seed", str(SEED), "--no-pilot", "--conditions", ",".join(CONDITIONS))  # fmt: skip
    assert _main(*args, "--queue") == 0
    err = capsys.readouterr().err
    assert "queued 1 batch(es) of matrix run" in err  # 4 items, 5 to a batch
    with Workspace.open(_settings(pg_database)) as ws:
        (run,) = ws.store.list_runs()
        assert run.suite == "matrix" and run.status == "queued" and ws.store.trials(run.id) == []
        assert _main("--db", pg_database, "matrix", "--resume", run.id, "--queue") == 0
        assert "nothing new to queue" in capsys.readouterr().err
        assert len(pending_jobs(pg_database, run.id)) == 1
        # the dashboard's queue shows the batch: every agent of the run on its items
        from harness.cli.dashboard_cmd import queue_reader

        (batch,) = queue_reader(ws.store)().batches
        assert (batch.run_id, batch.agent, batch.status) == (run.id, "all (matrix)", "todo")

        asyncio.run(run_worker(ws.store, ws.settings, once=True, install_signal_handlers=False))
        assert ws.store.get_run(run.id).status == "complete"
        assert len(ws.store.trials(run.id)) == N_ITEMS * PER_ITEM + len(NAMES) * 2
        _commits_precede_samples(ws.ledger, ws.store, run.id)
        assert ws.ledger.verify() == []
        assert _main("--db", pg_database, "matrix", "--resume", run.id, "--queue") == 0
        assert "is complete" in capsys.readouterr().err


@pytest.mark.postgres
def test_matrix_batch_of_a_dead_worker_is_requeued_and_nothing_runs_twice(
    pg_database: str,  # noqa: F811
    isolated_home: Path,
) -> None:
    from harness.queue.batches import (
        enqueue_run,
        execute_matrix_batch,
        missing_matrix_batches,
        pending_jobs,
        run_worker,
    )

    with Workspace.open(_settings(pg_database)) as ws:
        run_id = _plan(ws)
        assert enqueue_run(ws.store, ws.settings, run_id, batch_size=2).deferred == 2
        taken = asyncio.run(_take(ws.settings, ["dead"]))
        (job_id,) = taken["dead"]
        stranded = _jobs(pg_database)[job_id][2]["item_ids"]
        assert isinstance(stranded, list) and len(stranded) == 2
        # the worker stored the first item of its batch, then died in the second
        done = asyncio.run(
            execute_matrix_batch(
                ws.store, ws.settings, ws.ledger, run_id, stranded[:1], exclude_job=job_id
            )
        )
        assert done.items == 1 and done.status is None  # the rest is pending: no verdict
        assert ws.store.get_run(run_id).status == "running"
        _age_heartbeat(pg_database, taken["id:dead"][0])
        # nothing to queue afresh: the missing items are in batches, one stranded
        left = {i for b in missing_matrix_batches(ws.store, run_id, 1) for i in b.item_ids}
        assert len(left) == N_ITEMS - 1 and stranded[0] not in left

        asyncio.run(run_worker(ws.store, ws.settings, once=True, install_signal_handlers=False))
        assert _jobs(pg_database) == {}  # the stranded batch was retried, and succeeded
        assert ws.store.get_run(run_id).status == "complete"
        assert pending_jobs(pg_database, run_id) == []
        assert set(_trial_counts(ws.store, run_id)) == {1}
        assert len(ws.store.trials(run_id)) == N_ITEMS * PER_ITEM + len(NAMES) * 2
        # the first item was not asked again: one commitment per prediction, whole chain in order
        commits = _commits_precede_samples(ws.ledger, ws.store, run_id)
        assert commits == N_ITEMS * len(NAMES) ** 2 * len(CONDITIONS)
        assert len([e for e in ws.ledger.entries() if e.kind == "commit"]) == commits
        assert ws.ledger.verify() == []


def test_predictions_show_the_stored_exposure_answers_when_another_batch_stored_first(
    db_url: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two batches of a run may both find an exposure item unanswered and both ask it; the
    database keeps one answer, and every prediction of the run must show that one. Here the
    other batch stores its (different) answer while this one is asking."""
    import harness.matrix.runs as matrix
    from harness.matrix.asking import Reply
    from harness.matrix.runs import missing_matrix_items
    from harness.matrix.trials import exposure_trial

    real_ask = matrix.ask
    theirs: dict[tuple[str, str], str] = {}

    async def another_batch_stores_first(agent: Any, item: Any, *key: Any) -> Any:
        reply = await real_ask(agent, item, *key)
        if key == ("exposure",):
            choices = [str(c) for c in item.answer["choices"]]
            other = next(c for c in choices if c != reply.answer)
            trial = exposure_trial(run_id, item, agent.name, Reply(other))
            assert ws.store.record_trial(trial)
            theirs[agent.name, item.id] = other
        return reply

    with Workspace.open(_settings(db_url)) as ws:
        run_id = _plan(ws)
        monkeypatch.setattr(matrix, "ask", another_batch_stores_first)
        execute_matrix_run(ws.store, ws.settings, ws.ledger, run_id, n_boot=50)
        assert len(theirs) == len(NAMES) * 2  # every exposure answer was the other batch's
        assert missing_matrix_items(ws.store, run_id) == []
        assert ws.store.get_run(run_id).status == "complete"
        shown = [
            (score["target"], ws.store.items_by_id([t.item_id])[0].params["observed"])
            for t in ws.store.trials(run_id)
            if (score := json.loads(t.score_json or "{}")).get("condition") == "observe:2"
        ]
        assert len(shown) == N_ITEMS * len(NAMES) ** 2
        for target, observed in shown:
            assert len(observed) == 2
            assert all(answer == theirs[target, iid] for iid, answer in observed)
        assert ws.ledger.verify() == []


def test_cli_matrix_queue_refuses_sqlite_before_storing_anything(
    isolated_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "x.db"
    code = _main("--db", f"sqlite:///{db}", "matrix", "--reference", "random", "--no-pilot",
                 "--queue")  # fmt: skip
    assert code == 2
    assert "needs PostgreSQL" in capsys.readouterr().err
    assert not db.exists()
