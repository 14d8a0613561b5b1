"""A/B of two checkouts' clients against one running broker: runs a `kraft bench` command with
each checkout's code in turn (interleaved pairs, so both see the same machine load) and prints
each run's figure and the B/A ratio of the medians.
Usage: python bench/client_ab.py A_DIR B_DIR --pairs 3 --metric p50_ms -- bench e2e ..."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys


def run(checkout: str, command: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": checkout}
    out = subprocess.run(
        [sys.executable, "-m", "entry.main", *command, "--format", "json", "-q"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out[out.index("{") :])


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--metric", action="append", required=True)
    cut = sys.argv.index("--")
    args, command = p.parse_args(sys.argv[1:cut]), sys.argv[cut + 1 :]
    got: dict[str, list[dict]] = {"A": [], "B": []}
    for i in range(args.pairs):
        for side, checkout in (
            (("A", args.a), ("B", args.b)) if i % 2 == 0 else (("B", args.b), ("A", args.a))
        ):
            got[side].append(run(checkout, command))
            print(side, {m: got[side][-1][m] for m in args.metric}, flush=True)
    for m in args.metric:
        a = statistics.median(r[m] for r in got["A"])
        b = statistics.median(r[m] for r in got["B"])
        print(
            f"{m}: A {[r[m] for r in got['A']]} B {[r[m] for r in got['B']]} "
            f"medians A {a} B {b} B/A {b / a:.2f}"
        )


if __name__ == "__main__":
    main()
