"""Matrix benchmark: the cross-model prediction matrix at speed, ledger commits included.

Three chat agents (``ChatAgent`` over the OpenAI adapter) against a fake OpenAI-compatible
server in a separate process that answers after a fixed 50 ms: it gives each agent (told
apart by its model name) a fixed answer per question and a distribution over the choices per
prediction, as a model would. The matrix runs as ``mindledger matrix`` runs it: a stored
matrix run (its agents and items in the store, each item's trials stored when the item is
done) and a real SQLite prediction ledger in a data directory (service key, head witness,
heads file), durable writes. 100 items, K = 10 samples: per item 3 own answers + 3 × 3
predictions + 3 × 10 samples = 42 requests and 9 commits + 90 observations + 9 reveals = 108
ledger entries.

Prints wall time ÷ ideal (ideal = requests × latency ÷ requests in flight), the ledger entries
written and entries/s, and the process CPU time per request, side by side with the same number
of bare HTTP calls through the adapter at the same concurrency (the floor), measured in one run.
The matrix's own summary (its bootstrap intervals, ``--n-boot``) is timed on its own and shown
beside it.

    python bench/bench_matrix.py                       # 100 items, K = 10, 64 in flight
    python bench/bench_matrix.py --items 20 --samples 5 --repeat 1    # quick
    python bench/bench_matrix.py --profile out.prof    # cProfile of the matrix run
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.adapters import ChatPolicy, OpenAIBackend, OpenAIChat
from harness.agent.agents import ChatAgent
from harness.config.settings import load_settings
from harness.config.workspace import Workspace
from harness.matrix.runs import MatrixOptions, create_matrix_run, run_matrix
from harness.model.local_model import die_with_parent
from harness.run.build import plan_agents
from harness.testing import FakeOpenAI
from harness.testing.fake_openai import FakeConfig

AGENTS = ("a0", "a1", "a2")


# -- the server: a child process answering the matrix's prompts -----------------------------


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("tools"):
        params = body["tools"][0]["function"]["parameters"]
    else:
        params = body["response_format"]["json_schema"]["schema"]
    schema: dict[str, Any] = params["properties"]["answer"]
    return schema


def _draw(*key: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(key).encode()).digest()[:8], "big")


def matrix_answer(body: dict[str, Any]) -> str:
    """What a model answers: a fixed choice per (model, question); for a prediction, a
    distribution over the choices peaked on the choice the model expects of the target."""
    model = str(body.get("model"))
    prompt = str(body["messages"][-1]["content"])
    if not body.get("tools") and not body.get("response_format"):
        return "ok"  # a bare call
    schema = _schema(body)
    if schema.get("type") == "object":  # a prediction
        choices = list(schema["properties"])
        found = re.search(r"another AI model called (\S+)", prompt)
        target = found.group(1) if found else model
        peak = _draw(model, target, prompt) % len(choices)
        rest = 0.4 / max(1, len(choices) - 1)
        dist = {c: (0.6 if i == peak else rest) for i, c in enumerate(choices)}
        if len(choices) == 1:
            dist = {choices[0]: 1.0}
        return json.dumps({"answer": dist, "confidence": 0.6})
    choices = [str(c) for c in schema["enum"]]
    return choices[_draw(model, prompt) % len(choices)]


def serve(latency: float) -> None:
    """Run the server in this process until SIGTERM (``--serve``)."""

    async def go() -> None:
        server = FakeOpenAI(FakeConfig(latency=latency, answer=matrix_answer, log_bodies=False))
        await server.start(0)
        print(f"listening on {server.base_url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(go())


class MatrixServer:
    """:func:`serve` in a child process (as ``FakeOpenAIProcess`` runs the fake server)."""

    def __init__(self, latency: float):
        self.latency = latency
        self.process: subprocess.Popen[bytes] | None = None
        self.base_url = ""

    def __enter__(self) -> MatrixServer:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--latency", str(self.latency)],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode()
        found = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
        if not found:
            self.__exit__()
            raise RuntimeError(f"server did not start: {line!r}")
        self.base_url = found.group(1)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None


# -- the measurements --------------------------------------------------------------------------


async def bare_calls(base_url: str, n: int, concurrency: int) -> None:
    """``n`` chat calls through the adapter by ``concurrency`` workers (as bench_runner's)."""
    async with OpenAIChat(base_url, "bench", policy=ChatPolicy(concurrency=concurrency)) as client:
        msgs = [{"role": "user", "content": "Pick a number."}]
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await client.chat(msgs)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, n))))


def matrix_once(
    base_url: str, n_items: int, samples: int, concurrency: int, n_boot: int,
    adapter_concurrency: int, profile: str | None,
) -> dict[str, float]:
    """One stored matrix run in a fresh data directory; wall and CPU seconds, entries."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        config = Path(tmp) / "mindledger.toml"
        config.write_text("".join(
            f"[agents.{name}]\nadapter = 'openai'\nendpoint = '{base_url}'\nmodel = 'm{i}'\n"
            for i, name in enumerate(AGENTS)
        ))
        settings = load_settings(config, env={}, flags={
            "db_url": f"sqlite:///{home / 'mindledger.db'}", "home": str(home),
        })
        with Workspace.open(settings) as ws:
            planned = plan_agents(settings, agents=AGENTS, no_control=True)
            run_id, _ = create_matrix_run(
                ws.store,
                settings,
                planned=planned,
                options=MatrixOptions(n_items=n_items, samples=samples, seed=11),
            )
            items = list(ws.store.run_items(run_id))
            ledger = ws.ledger
            ledger.head()  # open it (the key, the witness) before the clock starts
            before = ledger.head()
            start_seq = 0 if before is None else before.seq

            async def go() -> dict[str, Any]:
                agents = {
                    name: ChatAgent(name, OpenAIBackend(OpenAIChat(
                        base_url, f"m{i}", policy=ChatPolicy(concurrency=adapter_concurrency)
                    )), spec={}, answer_mode="tools")
                    for i, name in enumerate(AGENTS)
                }
                try:
                    return await run_matrix(
                        agents,
                        items,
                        ledger,
                        store=ws.store,
                        run_id=run_id,
                        options=MatrixOptions(
                            samples=samples, concurrency=concurrency, n_boot=n_boot
                        ),
                    )
                finally:
                    for agent in agents.values():
                        await agent.aclose()

            prof = None
            if profile:
                import cProfile

                prof = cProfile.Profile()
                prof.enable()
            c0, t0 = time.process_time(), time.perf_counter()
            result = asyncio.run(go())
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            if prof is not None:
                prof.disable()
                prof.dump_stats(profile)
            from reports.matrix_summary import stored_summary

            t1 = time.perf_counter()
            stored_summary(ws.store, run_id, n_boot=n_boot, stats_seed=0).to_dict()
            summary = time.perf_counter() - t1
            head = ledger.head()
            entries = (0 if head is None else head.seq) - start_seq
            problems = ledger.verify()
            trials = len(ws.store.trials(run_id))
            status = ws.store.get_run(run_id).status
    scored = sum(c["n"] for c in result["cells"])
    return {"wall": wall, "cpu": cpu, "summary": summary, "entries": entries,
            "problems": len(problems), "trials": trials, "complete": status == "complete",
            "scored": scored}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--samples", type=int, default=10, help="K: each target's samples")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight")
    parser.add_argument("--adapter-concurrency", type=int, default=None,
                        help="each agent's adapter limit (default: --concurrency)")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--n-boot", type=int, default=2000, help="the summary's bootstrap")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, interleaved")
    parser.add_argument("--profile", default=None, help="write a cProfile of the last run")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.latency)
        return
    n_agents = len(AGENTS)
    per_item = n_agents + n_agents * n_agents + n_agents * args.samples
    requests = args.items * per_item
    ideal = requests * args.latency / args.concurrency
    rows: list[tuple[str, float, float, str]] = []
    with MatrixServer(args.latency) as server:
        for r in range(args.repeat):
            c0, t0 = time.process_time(), time.perf_counter()
            asyncio.run(bare_calls(server.base_url, requests, args.concurrency))
            rows.append(("bare HTTP calls (OpenAIChat)", time.perf_counter() - t0,
                         time.process_time() - c0, ""))
            m = matrix_once(
                server.base_url, args.items, args.samples, args.concurrency, args.n_boot,
                args.adapter_concurrency or args.concurrency,
                args.profile if r == args.repeat - 1 else None,
            )
            rows.append((
                "matrix, without its summary", m["wall"] - m["summary"], m["cpu"] - m["summary"],
                "",
            ))
            rows.append((
                "matrix (ledger + store)", m["wall"], m["cpu"],
                f"{m['entries']:.0f} entries, {m['entries'] / (m['wall'] - m['summary']):,.0f}/s "
                "(without the summary); "
                f"{m['trials']:.0f} trials{'' if m['complete'] else ' (INCOMPLETE)'}; "
                f"{m['scored']:.0f} scored; summary {m['summary']:.2f}s; "
                f"verify: {m['problems']:.0f} problems",
            ))
    print(f"{args.items} items × {n_agents} predictors × {n_agents} targets, K = {args.samples}: "
          f"{requests} requests, {args.latency * 1000:.0f} ms latency, {args.concurrency} in "
          f"flight: ideal {ideal:.2f} s")
    print(f"{'':30} {'wall':>8} {'÷ ideal':>8} {'CPU/req':>8}")
    for what, wall, cpu, extra in rows:
        print(f"{what:30} {wall:7.2f}s {wall / ideal:7.2f}× {cpu / requests * 1000:6.2f}ms  "
              f"{extra}")


if __name__ == "__main__":
    main()
