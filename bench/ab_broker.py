"""Broker A/B: the same client (this checkout's `kraft bench`) against nodes run from two
checkouts, in interleaved pairs, so the ratio says what the broker change cost or gained.

    python bench/ab_broker.py --base /path/to/old/checkout [--pairs 3] [--records 300000]
        [--shape single|cluster] [--record-size 100] [--partitions 3] [--controllers 3]
        [--own-client]

`single`: one `kraft dev` node, acks=1 produce then consume; `cluster`: `kraft dev
--controllers N --brokers 3`, RF=3 acks=all produce then consume. The old checkout may name the
command module differently (broker.cli before the rooms); it is found by file. Ratios are of
records/s (the same as of MiB/s: both runs send the same records). --own-client runs each
tree's own `kraft bench`, so client changes count too.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parents[1]


def command_module(tree: pathlib.Path) -> str:
    return "entry.main" if (tree / "entry" / "main.py").exists() else "broker.cli"


def kraft(tree: pathlib.Path, *args: str, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", command_module(tree), *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        **kw,
    )


def client(*args: str, tree: pathlib.Path = HERE) -> dict:
    done = kraft(tree, *args, "--format", "json", timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"kraft {' '.join(args)}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def start_single(tree: pathlib.Path, data: pathlib.Path) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", command_module(tree), "dev", "--data", str(data), "--port", "0"],
        cwd=tree,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            line = proc.stdout.readline().decode()
            if "listening on" in line:
                return proc, line.split("listening on ", 1)[1].split(",", 1)[0]
    proc.kill()
    raise RuntimeError(f"the node from {tree} did not start")


def one_run(
    tree: pathlib.Path,
    shape: str,
    records: int,
    size: int = 100,
    partitions: int = 3,
    controllers: int = 3,
    own_client: bool = False,
) -> dict:
    client_tree = tree if own_client else HERE
    data = pathlib.Path(tempfile.mkdtemp(prefix="ab-"))
    try:
        if shape == "single":
            proc, address = start_single(tree, data / "d")
            acks, rf = "1", "1"
        else:
            done = kraft(
                tree,
                "dev",
                "--controllers",
                str(controllers),
                "--brokers",
                "3",
                "--port",
                "0",
                "--controller-port",
                "0",
                "--detach",
                "--data",
                str(data / "d"),
                timeout=180,
            )
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-2000:])
            nodes = json.loads((data / "d" / "cluster.json").read_text())["nodes"]
            address = ",".join(n["address"] for n in nodes if "broker" in n["roles"])
            proc, acks, rf = None, "all", "3"
        try:
            produced = client(
                "bench",
                "produce",
                "--bootstrap-server",
                address,
                "--acks",
                acks,
                "--num-records",
                str(records),
                "--replication-factor",
                rf,
                "--partitions",
                str(partitions),
                "--record-size",
                str(size),
                tree=client_tree,
            )
            consumed = client(
                "bench",
                "consume",
                "--bootstrap-server",
                address,
                "--num-records",
                str(records),
                tree=client_tree,
            )
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(30)
            else:
                kraft(tree, "dev", "--stop", "--data", str(data / "d"), timeout=120)
        return {
            "produce": _rate(produced),
            "consume": _rate(consumed),
            "produce_mib_s": produced["mb_per_sec"],
            "consume_mib_s": consumed["mb_per_sec"],
        }
    finally:
        shutil.rmtree(data, ignore_errors=True)


def _rate(doc: dict) -> float:
    return float(doc["records_per_sec"])  # kraft bench produce|consume --format json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, type=pathlib.Path)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--shape", choices=("single", "cluster"), default="single")
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--controllers", type=int, default=3, help="cluster shape only")
    parser.add_argument(
        "--own-client",
        action="store_true",
        help="each run's `kraft bench` from its own tree (client changes count too)",
    )
    args = parser.parse_args(argv)
    ratios = {"produce": [], "consume": []}
    for pair in range(args.pairs):
        order = [("base", args.base), ("head", HERE)]
        if pair % 2:
            order.reverse()
        runs = {
            name: one_run(
                tree,
                args.shape,
                args.records,
                args.record_size,
                args.partitions,
                args.controllers,
                args.own_client,
            )
            for name, tree in order
        }
        for what in ratios:
            ratios[what].append(runs["head"][what] / runs["base"][what])
        print(json.dumps({"pair": pair, **runs}), flush=True)
    print(
        json.dumps(
            {
                "shape": args.shape,
                "records": args.records,
                "record_size": args.record_size,
                **{f"{k}_ratio_median": round(statistics.median(v), 3) for k, v in ratios.items()},
                **{f"{k}_ratios": [round(r, 3) for r in v] for k, v in ratios.items()},
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
