"""NestToM benchmark: item generation throughput and the cost of answering a chain.

Run: ``python bench/bench_nesttom.py`` (one core; takes about half a minute).

1. **Items per second with the adversarial filter on**, for B1's design (12-event, 4-agent
   stories; every depth, both belief types, every mechanism and form), measured side by side
   with two baselines in the same run:

   - *no filter*: the same stories drawn once each and asked a random chain of the depth
     (no adversarial selection, no decisive-mechanism preference) — what the filter costs;
   - *item floor*: rendering, truth re-derivation and hashing of already-drawn stories only
     (the part every item pays whatever the generator does).

2. **Answering one chain as the story grows** (6 … 1000 events): time per call and per event,
   on a compiled story (observer sets precomputed) and from the story's JSON form (validate,
   compile, answer: what ``mindledger nesttom answer`` does). Linear cost shows as a flat
   per-event time and a log–log growth exponent near 1.

Timings are CPU time of this process (one core), the best of several repeats, so that other
load on a shared machine inflates them as little as possible.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from mindledger.canonical import content_hash
from nesttom import (
    BELIEF_TYPES,
    DEPTH_N,
    DEPTHS,
    FORMS,
    MECHANISMS,
    Design,
    Drawn,
    Story,
    answer_chain,
    validate_story,
)
from nesttom._drafts import draw_draft, name_draft
from nesttom._generator import (
    _cell_rng,
    _item,
    _KeptStory,
    cell_of,
    generate_items,
    generate_story,
)

SEED = 20261002
N_ITEMS = 960  # one B1 at its default size
REPEATS = 3


def best_of(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    """The least CPU time (of this process: one core) of ``repeats`` runs of ``fn``."""
    best = math.inf
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def answer_compiled(story: Story, chain: tuple[str, ...], obj: str, reps: int) -> None:
    for _ in range(reps):
        answer_chain(story, chain, obj)


def answer_from_json(raw: dict[str, Any], chain: tuple[str, ...], obj: str, reps: int) -> None:
    for _ in range(reps):
        answer_chain(validate_story(raw), chain, obj)


def b1_cells(n: int) -> list[tuple[tuple[str, str, str, int, int], str, bool]]:
    return [
        cell_of(
            i,
            depths=DEPTHS,
            belief_types=BELIEF_TYPES,
            mechanisms=MECHANISMS,
            forms=FORMS,
            lengths=(12,),
            agents=(4,),
        )
        for i in range(n)
    ]


def unfiltered(n: int) -> None:
    """Baseline: one story per item, a random chain of the depth, the same item building."""
    for i, (cell, form, _) in enumerate(b1_cells(n)):
        depth, _, mechanism, length, agents = cell
        rng = _cell_rng(SEED, 9, i, cell)
        hidden_ok = mechanism == "secret-observation" or depth == "R3-loop"
        draft = None
        while draft is None:
            draft = draw_draft(rng, agents, length, mechanism, hidden_ok, depth == "R2-self")
        story = name_draft(draft, rng, agents)
        chain: list[str] = []
        names = [a for a in story.agents if a != "you"]
        for _ in range(DEPTH_N[depth]):
            chain.append(str(rng.choice([a for a in names if not chain or a != chain[-1]])))
        if depth == "R2-self":
            chain = [chain[0], "you"]
        drawn = _drawn(story, tuple(chain), story.objects[0][0], depth, mechanism)
        story_dict = story.to_dict(questions=False)
        _item(
            _KeptStory(drawn, SEED, form, story_dict, content_hash(story_dict)),
            params={"index": i},
            chain=tuple(chain),
            question="belief",
            selection="none",
        )


def _drawn(story: Story, chain: tuple[str, ...], obj: str, depth: str, mechanism: str) -> Drawn:
    return Drawn(story, chain, obj, depth, "false", mechanism, None, (), 0.0)


def main() -> None:
    print(f"NestToM benchmark (CPU time of one process, best of {REPEATS})\n")

    # -- 1. generation throughput -----------------------------------------------------------
    generate_items(SEED, 64)  # warm caches (chain groups, thresholds)
    t_filter = best_of(lambda: generate_items(SEED, N_ITEMS))
    t_plain = best_of(lambda: unfiltered(N_ITEMS))
    drawn = [
        generate_story(_cell_rng(SEED, 0, i, c), depth=c[0], belief=c[1], mechanism=c[2])
        for i, (c, _, _) in enumerate(b1_cells(N_ITEMS))
    ]
    forms = [f for _, f, _ in b1_cells(N_ITEMS)]

    def floor() -> None:
        for i, (d, form) in enumerate(zip(drawn, forms, strict=True)):
            # a fresh Story, so its compiled form is rebuilt as in generation
            story = validate_story(d.story.to_dict(questions=False))
            sd = story.to_dict(questions=False)
            d2 = _drawn(story, d.chain, d.object, d.depth, d.mechanism)
            _item(
                _KeptStory(d2, SEED, form, sd, content_hash(sd)),
                params={"index": i},
                chain=d.chain,
                question="belief",
                selection="x",
            )

    t_floor = best_of(floor)
    rate = N_ITEMS / t_filter
    print("1. items generated per second, B1 design (12 events, 4 agents, all cells)")
    print(
        f"   adversarial filter on : {rate:8.0f} items/s   ({1e6 / rate:6.0f} us/item)   goal >= 2000"
    )
    print(
        f"   no filter (baseline)  : {N_ITEMS / t_plain:8.0f} items/s   filter costs x{t_filter / t_plain:.2f}"
    )
    print(
        f"   item floor (render, re-derive truth, hash): {N_ITEMS / t_floor:8.0f} items/s   "
        f"generation = {t_filter / t_floor:.2f} x floor"
    )
    per_depth = []
    for depth in DEPTHS:
        t = best_of(partial(generate_items, SEED + 1, 64, Design(depths=(depth,))), 2)
        per_depth.append(f"{depth} {64 / t:.0f}")
    print("   by depth (items/s): " + ", ".join(per_depth))

    # -- 2. answering one chain vs story length ----------------------------------------------
    print("\n2. answering one chain (R3) as the story grows")
    print("   events | compiled: us/call  ns/event | from JSON: us/call  ns/event")
    rows = []
    for length in (6, 12, 20, 50, 100, 200, 500, 1000):
        d = generate_story(
            np.random.default_rng(length),
            depth="R3",
            belief="false",
            mechanism="absence",
            length=length,
            agents=4,
        )
        story = d.story
        answer_chain(story, d.chain, d.object)  # compile once
        raw = story.to_dict(questions=False)
        reps, reps_j = max(20, 20000 // length), max(5, 4000 // length)
        t_c = best_of(partial(answer_compiled, story, d.chain, d.object, reps), 5) / reps
        t_j = best_of(partial(answer_from_json, raw, d.chain, d.object, reps_j), 5) / reps_j
        rows.append((length, t_c, t_j))
        print(
            f"   {length:6d} | {t_c * 1e6:10.2f} {t_c * 1e9 / length:9.1f} | "
            f"{t_j * 1e6:10.2f} {t_j * 1e9 / length:9.1f}"
        )

    def exponent(col: int) -> float:
        xs = [math.log(r[0]) for r in rows if r[0] >= 50]
        ys = [math.log(r[col]) for r in rows if r[0] >= 50]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
            (x - mx) ** 2 for x in xs
        )

    by = {r[0]: r for r in rows}
    print(
        f"   per-event cost, 1000 events vs 50 events: compiled x{by[1000][1] / 1000 / (by[50][1] / 50):.2f}, "
        f"from JSON x{by[1000][2] / 1000 / (by[50][2] / 50):.2f}   (1.00 = linear)"
    )
    print(
        f"   log-log growth exponent, 50..1000 events: compiled {exponent(1):.2f}, "
        f"from JSON {exponent(2):.2f}   (1.00 = linear, 2.00 = quadratic)"
    )


if __name__ == "__main__":
    main()
