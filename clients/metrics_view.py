"""What `kraft top` shows, from the nodes' metrics endpoints: one scrape of a node reduced to the
numbers a person watches (pure but for `scrape`), and the rates between two scrapes."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import urllib.error
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[str, list[tuple[dict[str, str], float]]]  # sample name -> [(labels, value)]


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def scrape(address: str, timeout: float = 2.0) -> Samples:
    """GET http://address/metrics; raises OSError (with the address) when it cannot."""
    try:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=timeout) as answer:
            return parse(answer.read().decode())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise OSError(f"{address}: {reason}") from None


def total(samples: Samples, name: str, **match: str) -> float:
    return sum(
        v
        for labels, v in samples.get(name, ())
        if all(labels.get(k) == want for k, want in match.items())
    )


def one(samples: Samples, name: str) -> float | None:
    values = samples.get(name)
    return values[0][1] if values else None


@dataclasses.dataclass(frozen=True)
class NodeTarget:
    node_id: int | None
    roles: tuple[str, ...]
    metrics_address: str


def targets_from_cluster_json(data: pathlib.Path) -> list[NodeTarget]:
    """The nodes of the kraft dev cluster in `data` that serve metrics."""
    path = pathlib.Path(data) / "cluster.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(
            f"{path} does not exist; start a cluster with kraft dev --data {data}, "
            "or name the endpoints with --metrics host:port,..."
        ) from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path} is unreadable ({exc})") from None
    targets = [
        NodeTarget(n.get("id"), tuple(n.get("roles", ())), n["metrics_address"])
        for n in doc.get("nodes", [])
        if n.get("metrics_address")
    ]
    if not targets:
        raise ValueError(
            f"no node in {path} records a metrics_address; restart the cluster with "
            "this version of kraft dev, or give --metrics host:port,..."
        )
    return targets


def targets_from_addresses(text: str) -> list[NodeTarget]:
    addresses = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in addresses if ":" not in a]
    if not addresses or bad:
        raise ValueError(f"--metrics {text!r}: give host:port[,host:port...] of metrics endpoints")
    return [NodeTarget(None, (), a) for a in addresses]


# The counters `kraft top` turns into rates: field -> (sample name, labels to match).
RATE_COUNTERS = {
    "requests_per_s": ("kafka_network_requestmetrics_requests_total", {}),
    "produce_per_s": ("kafka_network_requestmetrics_requests_total", {"request": "Produce"}),
    "bytes_in_per_s": ("kafka_server_brokertopicmetrics_bytesin_total", {}),
    "records_in_per_s": ("kafka_server_brokertopicmetrics_messagesin_total", {}),
    "bytes_out_per_s": ("kafka_server_brokertopicmetrics_bytesout_total", {}),
}


def node_view(
    target: NodeTarget,
    samples: Samples | None,
    error: str | None,
    before: Samples | None,
    seconds: float,
) -> dict[str, Any]:
    """One node's row: its id and state, gauges as scraped, rates since `before`."""
    view: dict[str, Any] = {
        "node_id": target.node_id,
        "roles": list(target.roles),
        "metrics_address": target.metrics_address,
        "up": samples is not None,
    }
    if samples is None:
        view["error"] = error
        return view
    for labels, _ in samples.get("kafka_server_app_info", ())[:1]:  # the node says who it is
        view["node_id"] = int(labels["node_id"])
        view["roles"] = labels["roles"].split(",")
    state = [
        labels.get("state")
        for labels, v in samples.get("kafka_server_raftmetrics_current_state", ())
        if v == 1
    ]
    view.update(
        {
            "raft_state": state[0] if state else None,
            "raft_epoch": one(samples, "kafka_server_raftmetrics_current_epoch"),
            "raft_high_watermark": one(samples, "kafka_server_raftmetrics_high_watermark"),
            "metadata_lag": one(samples, "kraft_metadata_applied_lag_records"),
            "active_controller": one(
                samples, "kafka_controller_kafkacontroller_activecontrollercount"
            )
            == 1,
            "partitions": one(samples, "kafka_server_replicamanager_partitioncount"),
            "leaders": one(samples, "kafka_server_replicamanager_leadercount"),
            "under_replicated": one(
                samples, "kafka_server_replicamanager_underreplicatedpartitions"
            ),
            "under_min_isr": one(samples, "kafka_server_replicamanager_underminisrpartitioncount"),
            "groups": one(samples, "kafka_coordinator_group_groupmetadatamanager_numgroups"),
            "parked": total(samples, "kafka_server_delayedoperationpurgatory_purgatorysize"),
            "connections": total(samples, "kafka_server_socketservermetrics_connection_count"),
            "rss_bytes": one(samples, "process_resident_memory_bytes"),
            "open_fds": one(samples, "process_open_fds"),
            "fenced_brokers": one(samples, "kafka_controller_kafkacontroller_fencedbrokercount"),
            "offline_partitions": one(
                samples, "kafka_controller_kafkacontroller_offlinepartitionscount"
            ),
        }
    )
    for field, (name, match) in RATE_COUNTERS.items():
        if before is None or seconds <= 0:
            view[field] = None
        else:
            view[field] = (
                max(0.0, total(samples, name, **match) - total(before, name, **match)) / seconds
            )
    return view


def cluster_view(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The cluster as its active controller sees it, plus sums over the brokers."""
    up = [n for n in nodes if n["up"]]
    active = [n for n in up if n.get("active_controller")]
    controller = active[0] if active else None

    def sum_of(field: str) -> float | None:
        values = [n[field] for n in up if n.get(field) is not None]
        return sum(values) if values else None

    return {
        "nodes": len(nodes),
        "nodes_up": len(up),
        "active_controller": controller["node_id"] if controller else None,
        "fenced_brokers": controller["fenced_brokers"] if controller else None,
        "offline_partitions": controller["offline_partitions"] if controller else None,
        "under_replicated": sum_of("under_replicated"),
        "under_min_isr": sum_of("under_min_isr"),
        **{field: sum_of(field) for field in RATE_COUNTERS},
    }
