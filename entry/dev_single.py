"""Plain `kraft dev`: one combined broker,controller node with its data in --data, in the
foreground or (--detach) as a background process; `--port 0` reuses the ports it had before."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import TextIO

import trio

from broker.server.config import load_config
from broker.server.node import NodeReady, run_until_signalled
from chaos.node_logs import ROOT, log_tail
from entry.dev_cluster import (
    DevClusterError,
    is_kraft_process,
    ports_free,
    read_cluster_json,
    write_cluster_json,
)
from entry.log_format import announcer

COMBINED = ["broker", "controller"]
LOG_NAME = "node.log"


def _previous_node(data: pathlib.Path) -> dict | None:
    doc = read_cluster_json(data) or {}
    nodes = [n for n in doc.get("nodes", []) if n.get("roles") == COMBINED]
    return nodes[0] if nodes else None


def check_not_running(data: pathlib.Path) -> None:
    node = _previous_node(data)
    if node is not None and node.get("pid") != os.getpid() and is_kraft_process(node.get("pid")):
        raise DevClusterError(
            f"a kraft dev node is already running from {data} (pid {node['pid']}, "
            f"{node.get('address')}); stop it with: kraft dev --stop --data {data}"
        )


# Kafka's clients expect a broker on 9092 (`kcat -b 127.0.0.1:9092 -L`): the Kafka wire
# listener takes it, kraft's own gRPC listener the next free pair after Kafka's 9093-9094.
DEFAULT_KAFKA_PORT = 9092
DEFAULT_PORT = 9095


def node_ports(
    data: pathlib.Path, host: str, port: int, kafka_port: int | None = None
) -> tuple[int, int, int]:
    """(broker port, controller port, Kafka port). The controller next to the broker (9095 ->
    9096); the Kafka listener on 9092 when the broker port is the default one, else where
    --kafka-port says or on a free port. Port 0 reuses the ports this data dir's node had,
    when all are free, so addresses saved from the last run still work; otherwise 0 (the OS
    picks)."""
    if kafka_port is None:
        kafka_port = DEFAULT_KAFKA_PORT if port == DEFAULT_PORT else 0
    if port:
        return port, port + 1, kafka_port
    node = _previous_node(data) or {}
    try:
        recorded = [
            int(str(node[k]).rpartition(":")[2])
            for k in ("address", "controller_address", "kafka_address")
        ]
    except (KeyError, ValueError):
        return 0, 0, kafka_port
    return tuple(recorded) if ports_free(host, recorded) else (0, 0, kafka_port)


def run_foreground(args, format_node: Callable) -> int:
    data = pathlib.Path(args.data)
    check_not_running(data)
    broker_port, controller_port, kafka_port = node_ports(
        data, args.host, args.port, getattr(args, "kafka_port", None)
    )
    overrides = [
        "node.id=1",
        "process.roles=broker,controller",
        (
            f"listeners=PLAINTEXT://{args.host}:{broker_port},"
            f"CONTROLLER://{args.host}:{controller_port},KAFKA://{args.host}:{kafka_port}"
        ),
        f"log.dirs={data}",
        f"metrics.listener=http://{args.host}:0",
        *args.override,
    ]
    config = load_config(None, overrides)
    format_node(config, uuid.uuid4().hex)

    def record(ready: NodeReady) -> None:
        """cluster.json, as a multi-node kraft dev writes it, plus the controller's address."""
        node = {
            "id": ready.node_id,
            "roles": list(ready.roles),
            "address": ready.addresses[0],
            "pid": os.getpid(),
            "data_dir": str(data.resolve()),
        }
        if len(ready.addresses) > 1:
            node["controller_address"] = ready.addresses[1]
        node["metrics_address"] = ready.metrics_address
        if ready.kafka_address:
            node["kafka_address"] = ready.kafka_address
        write_cluster_json(data, {"cluster_id": ready.cluster_id, "nodes": [node]})

    trio.run(run_until_signalled, config, announcer(args.log_format), record)
    return 0


def run_detached(args, out: TextIO | None = None) -> int:
    """Start plain `kraft dev` as a process of its own session, logging to DATA/node.log; return
    once it listens, printing where it is and how to stop it."""
    out = out or sys.stdout
    data = pathlib.Path(args.data).resolve()
    check_not_running(data)
    data.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "entry.main",
        "dev",
        "--data",
        str(data),
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--log-format",
        args.log_format,
    ]
    if getattr(args, "kafka_port", None) is not None:
        command += ["--kafka-port", str(args.kafka_port)]
    for o in args.override:
        command += ["--override", o]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    log_path = data / LOG_NAME
    with open(log_path, "ab") as log:
        offset = log.tell()
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path},
        )
    deadline = time.monotonic() + args.wait_timeout

    def recorded() -> dict | None:  # the node writes cluster.json once it serves
        node = _previous_node(data)
        return node if node is not None and node.get("pid") == proc.pid else None

    while recorded() is None:
        if proc.poll() is not None:
            raise DevClusterError(
                f"kraft dev exited with code {proc.returncode} before it was ready; "
                f"read its log: {log_path}{log_tail(log_path, offset)}"
            )
        if time.monotonic() > deadline:
            proc.terminate()
            raise DevClusterError(
                f"kraft dev is not listening after {args.wait_timeout:g} s; read its "
                f"log: {log_path}{log_tail(log_path, offset)}"
            )
        time.sleep(0.1)
    node = recorded()
    kafka = f", Kafka clients on {node['kafka_address']}" if node.get("kafka_address") else ""
    print(
        f"kraft dev: node 1 (broker,controller) on {node.get('address')}{kafka}, pid {proc.pid}; log: "
        f"{log_path}\nexport KRAFT_BOOTSTRAP={node.get('address')}\n"
        f"kraft dev: running; stop with: kraft dev --stop --data {data}",
        file=out,
        flush=True,
    )
    return 0
