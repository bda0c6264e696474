"""HTTP layer benchmark: 2,000 chat completions, 64 in flight, against the fake OpenAI server in a
separate process answering after a fixed 50 ms, through :class:`harness.adapters.OpenAIChat` with
each candidate transport, side by side in one run.

Prints, per candidate, wall time ÷ ideal (ideal = calls × latency ÷ concurrency) and the client's
CPU time per call (``time.process_time``; the server's CPU is in its own process), and checks that
every call got its own answer and the server never saw more than ``concurrency`` in flight.

    python bench/bench_http.py                       # all candidates
    python bench/bench_http.py --only fast,aiohttp   # some of them
    python bench/bench_http.py --calls 500           # quicker
    python bench/bench_http.py --repeat 3            # rounds interleaved; medians reported

The machine is shared: wall ratios move with other load, CPU per call much less. Use --repeat
to see the spread.

Candidates: ``fast`` (FastTransport, the default), ``aiohttp`` (httpx-aiohttp's
AiohttpTransport), ``httpx`` (httpx's own pool; slow: ~15× the ideal, ~25 s), and, as a floor
without httpx and without the adapter, ``raw-aiohttp`` (a bare aiohttp ClientSession). The
aiohttp candidates need the ``bench`` extra: ``pip install -e ".[bench]"``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field

from harness.adapters import ChatPolicy, OpenAIChat, make_transport
from harness.testing import FakeOpenAIProcess

CANDIDATES = ("fast", "aiohttp", "httpx", "raw-aiohttp")


@dataclass
class Row:
    name: str
    calls: int
    ideal: float
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    max_in_flight: int = 0
    server_cpus: list[float] = field(default_factory=list)
    wrong: int = 0

    @property
    def label(self) -> str:
        return (
            "bare aiohttp ClientSession"
            if self.name == "raw-aiohttp"
            else f"OpenAIChat + {self.name}"
        )

    @property
    def ratio(self) -> str:
        text = f"{statistics.median(self.walls) / self.ideal:.2f}×"
        if len(self.walls) > 1:
            text += f" ({min(self.walls) / self.ideal:.2f}–{max(self.walls) / self.ideal:.2f})"
        return text

    @property
    def server_ms(self) -> str:
        if not self.server_cpus:
            return "n/a"
        return f"{statistics.median(self.server_cpus) / self.calls * 1000:.2f} ms"

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpus) / self.calls * 1000


def process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) used so far by process pid, from /proc (Linux); else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def messages(i: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Answer with the value in the marker."},
        {"role": "user", "content": f"Question {i}: what is the value? [[answer: {i}]]"},
    ]


async def via_adapter(
    kind: str, base_url: str, calls: int, concurrency: int
) -> tuple[float, float, int]:
    transport = make_transport(kind, max_connections=concurrency)
    async with OpenAIChat(
        base_url, "bench", policy=ChatPolicy(concurrency=concurrency), transport=transport
    ) as chat:
        await asyncio.gather(*(chat.chat(messages(-1 - i)) for i in range(concurrency)))  # warm
        wall0, cpu0 = time.perf_counter(), time.process_time()
        results = await asyncio.gather(*(chat.chat(messages(i)) for i in range(calls)))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    wrong = sum(r.message.get("content") != str(i) for i, r in enumerate(results))
    return wall, cpu, wrong


async def via_raw_aiohttp(base_url: str, calls: int, concurrency: int) -> tuple[float, float, int]:
    import aiohttp

    url = base_url + "/chat/completions"
    slots = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def one(i: int) -> str:
            async with (
                slots,
                session.post(url, json={"model": "bench", "messages": messages(i)}) as r,
            ):
                data = json.loads(await r.read())
                return str(data["choices"][0]["message"]["content"])

        await asyncio.gather(*(one(-1 - i) for i in range(concurrency)))
        wall0, cpu0 = time.perf_counter(), time.process_time()
        answers = await asyncio.gather(*(one(i) for i in range(calls)))
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return wall, cpu, sum(a != str(i) for i, a in enumerate(answers))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--only", default=",".join(CANDIDATES))
    parser.add_argument("--repeat", type=int, default=1, help="rounds (medians are reported)")
    args = parser.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - set(CANDIDATES)
    if unknown:
        parser.error(f"unknown candidates {sorted(unknown)}; known: {', '.join(CANDIDATES)}")
    ideal = args.calls * args.latency / args.concurrency
    rows = {name: Row(name, args.calls, ideal) for name in names}
    with FakeOpenAIProcess(latency=args.latency, log_bodies=False) as server:
        for _ in range(args.repeat):
            for name in names:
                server.reset()
                server_cpu0 = process_cpu(server.process.pid if server.process else None)
                if name == "raw-aiohttp":
                    run = via_raw_aiohttp(server.base_url, args.calls, args.concurrency)
                else:
                    run = via_adapter(name, server.base_url, args.calls, args.concurrency)
                wall, cpu, wrong = asyncio.run(run)
                row = rows[name]
                row.walls.append(wall)
                row.cpus.append(cpu)
                row.wrong += wrong
                row.max_in_flight = max(row.max_in_flight, int(server.stats()["max_in_flight"]))
                server_cpu1 = process_cpu(server.process.pid if server.process else None)
                if server_cpu0 is not None and server_cpu1 is not None:
                    row.server_cpus.append(server_cpu1 - server_cpu0)
                print(f"  {name}: {wall:.2f} s", file=sys.stderr, flush=True)

    print(
        f"\n{args.calls} calls, {args.latency * 1000:g} ms server latency, {args.concurrency} in "
        f"flight; ideal {ideal:.2f} s; server in a separate process; {args.repeat} round(s)\n"
    )
    print(
        "| candidate | wall ÷ ideal | client CPU per call | server CPU per call "
        "| max in flight | wrong answers |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in rows.values():
        print(
            f"| {r.label} | {r.ratio} | {r.cpu_ms:.2f} ms | {r.server_ms} | {r.max_in_flight} "
            f"| {r.wrong} |"
        )
    bad = [r.name for r in rows.values() if r.wrong or r.max_in_flight > args.concurrency]
    if bad:
        print(f"\nWRONG ANSWERS OR TOO MANY IN FLIGHT: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
