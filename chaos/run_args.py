"""`chaos/run.sh`'s command line: the parser with its examples, and the duration and nemesis-list
values it reads (chaos/run.py runs what it parses)."""

from __future__ import annotations

import argparse
import os
import pathlib
import re

from chaos import docker_cluster
from chaos.nemeses.injectors import DOCKER_NEMESES
from chaos.nemesis import DEFAULT_NEMESES, NEMESES
from chaos.txn_workload import IN_TOPIC, OUT_TOPIC

EXAMPLES = """examples:
  chaos/run.sh --duration 60s --nemesis kill,pause,partition --seed 7 --out /tmp/chaos-7
  chaos/run.sh --duration 2m --nemesis all              # every fault, docs/chaos.md says what
  chaos/run.sh --duration 60s --nemesis net,clock,disk-full,corrupt
  chaos/run.sh --duration 60s --nemesis power          # power cuts: unsynced writes dropped
  chaos/run.sh --duration 5m --interval 10s --nemesis partition --rate 200
  chaos/run.sh --docker --duration 60s --out /tmp/chaos-docker     # after docker/build-images.sh
  chaos/run.sh --secure --duration 60s --out /tmp/chaos-secure     # TLS, mTLS, SCRAM, ACLs on
  chaos/run.sh --transactional 2 --duration 60s   # plus exactly-once consume-transform-produce

OUT then holds history.jsonl, txn_history.jsonl (with --transactional), faults.jsonl (one line per
fault window), nemesis.log (what each fault did), summary.json, nodes/node-<id>/
(server.properties, node.log, data/) and, when the audit ran, its report.json / report.html. With
--docker the nodes are docker-compose.yml's containers (compose project kraft-chaos-<hex>, settings
in OUT/docker-compose.chaos.json), their data dirs, configs and logs are copied into OUT/nodes/ at
the end, and the project is removed (down -v) whatever happens. With --secure, OUT/secure/ holds
the dev CA and certificates and the admin's settings (client.properties: kraft ... --command-config
OUT/secure/client.properties); nodes call each other over mTLS and the workload signs in over
SASL_SSL as admin. Exit code: the audit's (0 clean, 1 violations), or 1 when the cluster did not
recover (drain incomplete, no acknowledged write after the heal); 2 when the run could not be set
up."""


def duration(text: str) -> float:
    """'60s', '2m', '500ms', '1h' or plain seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 60s, 2m, 500ms)")
    return float(m.group(1)) * {"ms": 0.001, "s": 1, None: 1, "m": 60, "h": 3600}[m.group(2)]


def nemesis_list(text: str) -> list[str]:
    """A comma-separated mix of NEMESES; `all` stands for every one."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    names = list(dict.fromkeys(m for n in names for m in (NEMESES if n == "all" else (n,))))
    bad = [n for n in names if n not in NEMESES]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown nemesis {', '.join(bad) or '(none)'}; choose from {', '.join(NEMESES)} or all"
        )
    return names


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="chaos/run.sh",
        epilog=EXAMPLES,
        description="Run a kraft cluster (3 controllers, 3 brokers) under a "
        "workload while a nemesis injects faults, then audit it.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--duration", type=duration, default=60.0, help="the faulty phase (default 60s)")
    p.add_argument(
        "--nemesis",
        type=nemesis_list,
        default=list(DEFAULT_NEMESES),
        help=f"comma-separated faults to draw from: {', '.join(NEMESES)}, or all "
        f"(default {','.join(DEFAULT_NEMESES)}; --docker runs only "
        f"{', '.join(DOCKER_NEMESES)})",
    )
    p.add_argument(
        "--interval",
        type=duration,
        default=5.0,
        help="mean gap between faults and mean fault length (default 5s)",
    )
    p.add_argument("--seed", type=int, help="schedule and workload seed (default: random, printed)")
    p.add_argument(
        "--out", type=pathlib.Path, help="output dir, new or empty (default chaos-out/<time>)"
    )
    p.add_argument(
        "--docker",
        action="store_true",
        help="use the docker compose cluster: docker kill/pause, iptables in the "
        "containers' network namespaces",
    )
    p.add_argument(
        "--image",
        default=os.environ.get("KRAFT_IMAGE", docker_cluster.DEFAULT_IMAGE),
        help="--docker: the kraft image (default $KRAFT_IMAGE or "
        f"{docker_cluster.DEFAULT_IMAGE}; build it with docker/build-images.sh)",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="certificates for every node, mTLS between nodes, ACLs on, and the "
        "workload over SASL_SSL (SCRAM) as the super user admin",
    )
    p.add_argument(
        "--quiet",
        type=duration,
        default=10.0,
        help="fault-free time after the heal, workload still running (default 10s)",
    )
    p.add_argument(
        "--rate", type=float, default=100.0, help="sends per second in all (default 100)"
    )
    p.add_argument("--producers", type=int, default=3, help="producer clients (default 3)")
    p.add_argument(
        "--slots",
        type=int,
        default=3,
        help="logical processes per producer client, each with one send out (default 3)",
    )
    p.add_argument(
        "--batch-size",
        type=int,
        metavar="BYTES",
        help="the producers' batch.size; 1 makes each record a full batch, so up to 5 "
        "requests per partition are in flight (default: the client's 16384)",
    )
    p.add_argument("--consumers", type=int, default=2, help="consumer clients (default 2)")
    p.add_argument(
        "--group-members",
        type=int,
        default=2,
        help="members of the consumer group chaos-group, committing as they poll (default 2)",
    )
    p.add_argument(
        "--recreate",
        type=duration,
        default=10.0,
        help="each client is replaced after about this long (default 10s)",
    )
    p.add_argument("--partitions", type=int, default=3, help="partitions of the topic (default 3)")
    p.add_argument(
        "--transactional",
        type=int,
        default=0,
        metavar="N",
        help=f"N exactly-once processors (transactional producer + read_committed group "
        f"member) copying {IN_TOPIC} to {OUT_TOPIC}, checked by the audit's txn- "
        f"checks (default 0: off)",
    )
    p.add_argument(
        "--drain-timeout", type=duration, default=60.0, help="final drain limit (default 60s)"
    )
    p.add_argument("--no-audit", action="store_true", help="skip `kraft audit` at the end")
    return p
