"""Issue 28: a held-out run's seeds, items and expected answers reach nobody but an operator who
asks, through any door.

A held-out quick-suite run (agent ``dusk`` behind a fake OpenAI server, with its control and
reference agents) and a held-out prediction matrix (``dusk`` and reference agents, its
predictions committed to the ledger) are stored as the nightly job stores them. Every held-out
string is then read from the database itself — the seeds, the item ids and story ids, the
game variants, the story sentences, the expected answers, the matrix prompts and the targets'
answers, the ledger's queries — and every output is searched for them:

- the command line: every ``report --format`` (suite and matrix), ``--compare``, ``history``,
  ``trials``, ``runs``, ``ledger show``, ``ledger export`` and ``ledger prove``;
- the dashboard's data source (exports, matrix, trials, the ledger view);
- every route of the daemon's API through real sockets on 127.0.0.1, with the token of the
  run's own agent, another agent's token and an operator token.

Nothing is found without the reveal flag or parameter; with it, an operator sees them (so the
search can fail). Single words (expected answers, matrix answers) count only when a development
run's outputs through the same doors do not contain them too.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from starlette.routing import Route

from harness.cli.main import cli
from harness.config.seeds import is_held_out
from harness.config.settings import AgentConfig, Settings, load_settings
from harness.daemon import BackgroundServer, Daemon, build_daemon, create_token
from harness.matrix.runs import MatrixOptions, create_matrix_run, execute_matrix_run
from harness.run.build import plan_agents
from harness.run.runs import create_run, execute_stored_run
from harness.run.suites import get_suite
from harness.testing import FakeOpenAI
from tui.source import DashboardSource
from tui.state import prediction_rows

HELD_SEED = next(s for s in range(1_234_567_890, 1_234_568_890) if is_held_out(s))
MATRIX_SEED = next(s for s in range(HELD_SEED + 1, HELD_SEED + 1000) if is_held_out(s))
DEV_SEED = next(s for s in range(1_987_654_321, 1_987_655_321) if not is_held_out(s))
DEV_MATRIX_SEED = next(s for s in range(DEV_SEED + 1, DEV_SEED + 1000) if not is_held_out(s))
REFERENCES = ("oracle", "random", "level:2")
MATRIX_REFERENCES = ("habit", "projection")
N_BOOT = "100"
REVEAL = "--reveal-held-out"
SENTENCE = re.compile(r"(?<=[.?!])\s+")


@dataclass
class World:
    settings: Settings
    url: str
    held: tuple[str, str]
    """The held-out suite run and matrix run."""
    dev: tuple[str, str]
    secrets: dict[str, set[str]]
    """Held-out strings by kind (seed, id, sentence, prompt, answer)."""
    words: set[str] = field(default_factory=set)
    """Single-word secrets, kept only when a development run's outputs lack them."""

    def leaks(self, text: str) -> list[str]:
        return sorted(s for kind in self.secrets.values() for s in kind if s in text)

    def kinds_in(self, text: str) -> set[str]:
        return {k for k, found in self.secrets.items() if any(s in text for s in found)}


def _answer(body: dict[str, Any]) -> str:
    """``dusk``'s replies: a uniform distribution when asked for one (a matrix prediction), the
    first choice offered when there are choices, else the fake's default."""
    tools = body.get("tools") or []
    params = (tools[0].get("function") or {}).get("parameters") if tools else None
    if params is None:
        params = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    schema = ((params or {}).get("properties") or {}).get("answer") or {}
    if schema.get("type") == "object" and schema.get("properties"):
        choices = list(schema["properties"])
        return json.dumps({"answer": {c: 1 / len(choices) for c in choices}, "confidence": 0.5})
    if schema.get("enum"):
        return str(schema["enum"][0])
    return "ok"


def _sentences(text: str) -> set[str]:
    return {s.strip() for s in SENTENCE.split(text) if len(s.strip()) >= 25}


def _collect(url: str, held: Iterable[str], dev_prompts: set[str]) -> dict[str, set[str]]:
    """Every held-out string, read from the database with SQL (not through the code tested)."""
    engine = sa.create_engine(url)
    runs = list(held)
    out: dict[str, set[str]] = {k: set() for k in ("seed", "id", "sentence", "prompt", "answer")}
    marks = ", ".join(f":r{i}" for i in range(len(runs)))
    bind = {f"r{i}": r for i, r in enumerate(runs)}
    with engine.connect() as conn:
        for (seed,) in conn.execute(sa.text(f"SELECT seed FROM runs WHERE id IN ({marks})"), bind):
            out["seed"] |= {str(seed), f"{seed:x}"}
        items = conn.execute(
            sa.text(
                "SELECT id, seed, body_json FROM items WHERE id IN (SELECT item_id FROM "
                f"run_items WHERE run_id IN ({marks}))"
            ),
            bind,
        ).all()
        for iid, seed, body_json in items:
            body = json.loads(body_json)
            meta = body.get("meta") or {}
            out["seed"] |= {str(seed), f"{seed:x}"}
            out["id"] |= {iid, iid.removeprefix("sha256:")[:12]}
            for key in ("story_id",):
                if meta.get(key):
                    out["id"] |= {meta[key], str(meta[key]).removeprefix("sha256:")[:12]}
            if "~v:" in str(meta.get("game_name") or ""):
                out["id"].add(str(meta["game_name"]))
            prompt = str(body.get("prompt") or "")
            if body["family"] == "matrix":
                out["prompt"].add(prompt)
            out["sentence"] |= _sentences(prompt) - dev_prompts
        trials = conn.execute(
            sa.text(f"SELECT score_json FROM trials WHERE run_id IN ({marks})"), bind
        ).all()
        for (score_json,) in trials:
            score = json.loads(score_json or "{}")
            details = score.get("details") or {}
            for v in [details.get("expected"), *(score.get("samples") or [])]:
                if isinstance(v, str) and v.isalpha() and len(v) >= 5:  # "no" says nothing
                    out["answer"].add(v)
        for payload_json, kind in conn.execute(
            sa.text(
                "SELECT payload_json, kind FROM ledger_entries WHERE kind IN ('commit', 'observe')"
            )
        ):
            payload = json.loads(payload_json)
            if kind == "commit" and payload.get("item") in {i[0] for i in items}:
                out["prompt"].add(payload["query"])
    engine.dispose()
    assert all(int(s) >= 10_000_000 for s in out["seed"] if s.isdigit())
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    home = tmp_path_factory.mktemp("held-doors")
    url = f"sqlite:///{home / 'h.db'}"
    with FakeOpenAI(answer=_answer) as fake:
        base = load_settings(None, env={}, flags={"db_url": url, "home": str(home)})
        agents = {"dusk": AgentConfig(name="dusk", adapter="openai", endpoint=fake.base_url)}
        settings = replace(base, agents=agents, head_interval=0)
        from harness.config.workspace import Workspace

        ws = Workspace.open(settings)
        planned = plan_agents(settings, agents=("dusk",), references=REFERENCES)
        mplanned = plan_agents(
            settings, agents=("dusk",), references=MATRIX_REFERENCES, no_control=True
        )
        for run_id, seed, held in (("held", HELD_SEED, True), ("dev", DEV_SEED, False)):
            create_run(ws.store, settings, suite="quick", planned=planned, seed=seed,
                       held_out=held, run_id=run_id)  # fmt: skip
            asyncio.run(execute_stored_run(ws.store, settings, run_id))
        for run_id, seed, held, beside in (
            ("mheld", MATRIX_SEED, True, "held"),
            ("mdev", DEV_MATRIX_SEED, False, "dev"),
        ):
            create_matrix_run(
                ws.store,
                settings,
                planned=mplanned,
                run_id=run_id,
                options=MatrixOptions(
                    n_items=3, samples=2, seed=seed, held_out=held, accompanies=beside
                ),
            )
            execute_matrix_run(ws.store, settings, ws.ledger, run_id, n_boot=100)
        assert ws.store.get_run("held").held_out and ws.store.get_run("mheld").held_out
        assert ws.ledger.verify() == []
        ws.close()
        dev_prompts = {
            s for it in get_suite("quick").build(DEV_SEED) for s in _sentences(it.prompt)
        }
        secrets = _collect(url, ("held", "mheld"), dev_prompts)
        assert all(secrets.values()), {k: len(v) for k, v in secrets.items()}
        yield World(settings, url, ("held", "mheld"), ("dev", "mdev"), secrets)


def _cli(world: World, *args: str, code: int = 0) -> str:
    """The command's output (and the message of the error it raised: 1 for a user error, as
    the click entry point tested here leaves it to ``main`` to print)."""
    result = CliRunner().invoke(
        cli, ["--db", world.url, *args], env={"MINDLEDGER_HOME": str(world.settings.home)}
    )
    assert result.exit_code == code, (args, result.output, result.exception)
    said = "" if result.exception is None else str(result.exception)
    return result.stdout + result.stderr + said


def _cli_outputs(world: World, run: str, matrix: str, *flags: str) -> dict[str, str]:
    """Every command-line door over the two runs, with ``flags`` where a command takes them."""
    out: dict[str, str] = {}
    for fmt in ("md", "html", "json", "csv", "headline-csv"):
        out[f"report {fmt}"] = _cli(
            world, "report", run, "--format", fmt, "--bootstrap", N_BOOT, *flags
        )
    for fmt in ("md", "html", "json", "csv"):
        out[f"matrix {fmt}"] = _cli(
            world, "report", matrix, "--format", fmt, "--bootstrap", N_BOOT, *flags
        )
    for fmt in ("md", "json"):
        out[f"compare {fmt}"] = _cli(
            world, "report", "--compare", run, "dev", "--format", fmt, "--bootstrap", N_BOOT, *flags
        )
    for fmt in ("table", "json", "csv"):
        out[f"history {fmt}"] = _cli(
            world, "history", "dusk", "--format", fmt, "--bootstrap", N_BOOT
        )
        if fmt != "csv":
            out[f"runs {fmt}"] = _cli(world, "runs", "--format", fmt, *flags)
        out[f"ledger show {fmt}"] = _cli(world, "ledger", "show", "--format", fmt, *flags)
        for r in (run, matrix):
            out[f"trials {r} {fmt}"] = _cli(world, "trials", r, "--format", fmt, *flags)
    return out


def test_the_cli_withholds_every_held_out_string_unless_revealed(
    world: World, tmp_path: Path
) -> None:
    dev = _cli_outputs(world, "dev", "mdev")
    shown = _cli_outputs(world, "held", "mheld")
    # single words are secrets where a development run's outputs do not say them as well
    common = "\n".join(dev.values())
    world.secrets["answer"] = {a for a in world.secrets["answer"] if a not in common}
    assert world.secrets["answer"], "no distinctive expected answer or matrix answer to look for"
    for door, text in shown.items():
        assert world.leaks(text) == [], door
    # doors that show a held-out item whole refuse without the flag, and say why
    md = tmp_path / "held.md"
    _cli(world, "report", "held", "--out", str(md), "--bootstrap", N_BOOT)
    files = " ".join(p.name for p in (tmp_path / "held_files").iterdir())
    assert world.leaks(md.read_text() + files) == []
    refused = [
        _cli(world, "trials", "held", "--item", "1", "--agent", "dusk", code=1),
        _cli(world, "ledger", "export", "--out", str(tmp_path / "l.jsonl"), code=1),
    ]
    pid = json.loads(_cli(world, "ledger", "show", "--format", "json"))["predictions"][0]["id"]
    refused.append(_cli(world, "ledger", "prove", pid, code=1))
    assert all("--reveal-held-out" in text for text in refused)
    refused.append(_cli(world, "ledger", "show", "--id", pid))
    for text in refused:
        assert world.leaks(text) == []
    assert not (tmp_path / "l.jsonl").exists()
    # an operator who asks sees every kind of held-out string
    revealed = _cli_outputs(world, "held", "mheld", REVEAL)
    seen = set().union(*(world.kinds_in(t) for t in revealed.values()))
    assert seen == set(world.secrets), seen
    assert str(HELD_SEED) in revealed["report json"] and str(MATRIX_SEED) in revealed["matrix json"]
    assert all(p in revealed["ledger show json"] for p in world.secrets["prompt"])
    assert "id" in world.kinds_in(revealed["report csv"])
    expected = '""expected"":'  # inside score_json, as CSV quotes it
    assert expected in revealed["report csv"] and expected not in shown["report csv"]
    whole = _cli(world, "trials", "held", "--item", "1", "--agent", "dusk", REVEAL)
    assert world.kinds_in(whole) & {"sentence", "id"}
    _cli(world, "ledger", "export", "--out", str(tmp_path / "l.jsonl"), REVEAL)
    exported = (tmp_path / "l.jsonl").read_text()
    assert all(p in exported for p in world.secrets["prompt"])
    key = json.loads(_cli(world, "ledger", "show", "--id", pid, "--format", "json", REVEAL))
    assert key["query"] in world.secrets["prompt"] and key["withheld"] is None


def test_the_dashboard_withholds(world: World, tmp_path: Path) -> None:
    from harness.config.workspace import Workspace

    ws = Workspace.open(world.settings)
    try:
        source = DashboardSource(ws.store, ws.new_ledger, n_boot=100)
        shown = [json.dumps(source.profile("held").to_json()),
                 json.dumps(source.matrix("mheld"), default=str)]  # fmt: skip
        for fmt in ("md", "html"):
            shown.append(source.export("held", fmt, tmp_path).read_text())
        shown.append(repr(source.trials("held", "dusk")))
        snap = source.ledger_snapshot()
        shown.append(repr(prediction_rows(snap.predictions, snap.now)))
        shown.append(repr(snap.predictions))
        for n, text in enumerate(shown):
            assert world.leaks(text) == [], n
        ledger = ws.new_ledger()
        try:  # the ledger itself still holds them: the dashboard withheld them
            assert "prompt" in world.kinds_in(repr([p.query for p in ledger.predictions()]))
        finally:
            ledger.close()
    finally:
        ws.close()


# -- the daemon's API ------------------------------------------------------------------------


@dataclass
class Api:
    daemon: Daemon
    url: str
    own: str
    """The token of ``dusk``, the agent under test of both held-out runs."""
    other: str
    """The token of ``piper``, who takes part in no run."""
    operator: str

    def get(self, token: str, path: str) -> httpx.Response:
        return httpx.get(self.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@pytest.fixture(scope="module")
def api(world: World) -> Iterator[Api]:
    daemon = build_daemon(world.settings, scheduler=False)
    own = create_token(daemon.engine, "dusk")
    other = create_token(daemon.engine, "piper")
    operator = create_token(daemon.engine, None, scope="operator", label="ops")
    try:
        with BackgroundServer(daemon.app) as server:
            yield Api(daemon, server.url, own, other, operator)
    finally:
        daemon.close()


def _prediction_ids(api: Api) -> dict[str, str]:
    """Every prediction's id and predictor, from the ledger."""
    return {p.id: p.predictor for p in api.daemon.ledger.predictions()}


def _paths(api: Api) -> list[str]:
    reads = [f"/runs/{r}{tail}" for r in ("held", "mheld") for tail in ("", "/profile")]
    return ["/runs", *reads, *(f"/predictions/{pid}" for pid in _prediction_ids(api))]


def test_every_route_withholds_from_agents_and_from_operators_who_do_not_ask(
    world: World, api: Api
) -> None:
    walked = 0
    for route in (r for r in api.daemon.app.routes if isinstance(r, Route)):
        for method in sorted((route.methods or set()) - {"HEAD"}):
            path = route.path.replace("{id}", "held").replace("{target}", "dusk")
            for token in (api.own, api.other, api.operator):
                if method == "GET":
                    query = {"/ledger/proof": "?seq=2", "/ledger/consistency": "?old=1"}
                    r = api.get(token, path + query.get(route.path, ""))
                else:
                    r = httpx.request(method, api.url + path, json={}, timeout=60,
                                      headers={"Authorization": f"Bearer {token}"})  # fmt: skip
                assert r.status_code < 500, (method, path, r.text)
                assert world.leaks(r.text + json.dumps(dict(r.headers))) == [], (method, path)
                walked += 1
    assert walked >= 3 * len(api.daemon.app.routes) - 6
    for path in _paths(api):
        for token in (api.own, api.operator):
            r = api.get(token, path)
            assert r.status_code in (200, 404), (path, r.text)
            assert world.leaks(r.text) == [], path
    own = [pid for pid, who in _prediction_ids(api).items() if who == "dusk"]
    assert own, "dusk made no prediction in the matrix"
    shown = api.get(api.own, f"/predictions/{own[0]}").json()
    assert shown["query"] is None and shown["withheld"] and shown["observed_count"] >= 1
    assert api.get(api.own, "/runs/held/profile").status_code == 200


def test_an_operator_who_asks_sees_them(world: World, api: Api) -> None:
    ask = "?reveal_held_out=true"
    texts = [api.get(api.operator, path + ask).text for path in _paths(api)]
    seen = set().union(*(world.kinds_in(t) for t in texts))
    assert {"seed", "prompt", "answer", "id"} <= seen, seen
    detail = api.get(api.operator, "/runs/held" + ask).json()
    assert detail["seed"] == HELD_SEED and detail["seed_withheld"] is False
    for path in _paths(api):  # an agent that asks is refused, its own runs too
        assert api.get(api.own, path + ask).status_code == 403, path


def test_a_prediction_answers_its_predictor_and_operators_only(api: Api) -> None:
    for pid, predictor in _prediction_ids(api).items():
        assert api.get(api.operator, f"/predictions/{pid}").status_code == 200
        assert api.get(api.own, f"/predictions/{pid}").status_code == (
            200 if predictor == "dusk" else 404
        )
        r = api.get(api.other, f"/predictions/{pid}")
        unknown = api.get(api.other, "/predictions/p00000000000000000000")
        assert r.status_code == unknown.status_code == 404
        assert r.json()["error"]["message"].replace(pid, "ID") == unknown.json()["error"][
            "message"
        ].replace("p00000000000000000000", "ID")


def test_agent_tokens_list_and_read_only_their_own_runs(api: Api) -> None:
    def listed(token: str) -> set[str]:
        return {r["id"] for r in api.get(token, "/runs").json()["runs"]}

    assert listed(api.operator) == {"held", "dev", "mheld", "mdev"}
    assert listed(api.own) == {"held", "dev", "mheld", "mdev"}  # dusk is their agent
    assert listed(api.other) == set()
    for run in ("held", "dev", "mheld"):
        for tail in ("", "/profile"):
            r = api.get(api.other, f"/runs/{run}{tail}")
            assert (
                r.status_code == 404 and r.json()["error"]["message"] == f"no run with id {run!r}"
            )
            assert api.get(api.own, f"/runs/{run}{tail}").status_code == 200
    # a run that only references take part in belongs to no agent token, unless it asked for it
    store = api.daemon.store
    assert not store.owns_run("dev", "piper") and store.owns_run("dev", "dusk")
    assert store.owns_run("dev", "dusk-control".removesuffix("-control"))
    assert not store.owns_run("dev", "ref:oracle")
