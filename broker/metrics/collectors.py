"""prometheus_client collectors that read a node's state when scraped, nothing on the hot path:
the replicas this broker hosts, its traffic counters, its seat on the metadata quorum, the
metadata image, its group coordinators, its listeners' connections (docs/metrics.md)."""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import Callable, Mapping

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from broker.metrics.request_stats import RequestStats
from kraft.latency_histogram import LatencyHistogram


def _gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value)


def _histogram(
    family: HistogramMetricFamily, labels: list[str], histogram: LatencyHistogram
) -> None:
    buckets, total, _count = histogram.snapshot()
    family.add_metric(labels, buckets, total)


class RequestCollector:
    """Kafka's RequestMetrics: requests, errors and total time per API and listener."""

    def __init__(self, stats: RequestStats) -> None:
        self.stats = stats

    def collect(self):
        # dict() copies in one step under the GIL: the asyncio thread may add a key meanwhile.
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests",
            "Requests answered, per API and listener (RequestsPerSec)",
            labels=["request", "listener"],
        )
        for (api, listener), n in sorted(dict(self.stats.requests).items()):
            requests.add_metric([api, listener], n)
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Error codes in answers, one per partition "
            "where the answer has one per partition; NONE included (ErrorsPerSec)",
            labels=["request", "listener", "error"],
        )
        for (api, listener, error), n in sorted(dict(self.stats.errors).items()):
            errors.add_metric([api, listener, error], n)
        total = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from the request's arrival "
            "at the handler to its answer, parked time included (TotalTimeMs)",
            labels=["request", "listener"],
        )
        for (api, listener), histogram in sorted(dict(self.stats.total_time).items()):
            _histogram(total, [api, listener], histogram)
        parts = []
        for name, doc, histograms in (
            (
                "requestqueuetime",
                "Waiting for the node's loop to take the request up (RequestQueueTimeMs)",
                self.stats.queue_time,
            ),
            (
                "localtime",
                "Handled, neither queued nor parked (LocalTimeMs)",
                self.stats.local_time,
            ),
            (
                "remotetime",
                (
                    "Parked until a partition moved: acks=all waiting for the ISR, a fetch for "
                    "data (RemoteTimeMs)"
                ),
                self.stats.remote_time,
            ),
        ):
            family = HistogramMetricFamily(
                f"kafka_network_requestmetrics_{name}_seconds", doc, labels=["request", "listener"]
            )
            for (api, listener), histogram in sorted(dict(histograms).items()):
                _histogram(family, [api, listener], histogram)
            parts.append(family)
        return [requests, errors, total, *parts]


class ReplicaCollector:
    """Kafka's ReplicaManager, BrokerTopicMetrics, Log and DelayedOperationPurgatory MBeans, from
    the broker's ReplicaManager. Runs on the node's loop, which owns everything read here."""

    def __init__(self, replicas) -> None:
        self.replicas = replicas

    def collect(self):
        replicas, stats = self.replicas, self.replicas.topic_stats
        partitions = replicas.partitions()
        leaders = [p for p in partitions if p.is_leader]
        under_replicated = sum(1 for p in leaders if len(p.state.isr) < len(p.state.replicas))
        under_min_isr = sum(
            1 for p in leaders if len(p.state.isr) < p.state.config.min_insync_replicas
        )
        out = [
            _gauge(
                "kafka_server_replicamanager_partitioncount",
                "Partitions hosted here",
                len(partitions),
            ),
            _gauge("kafka_server_replicamanager_leadercount", "Partitions led here", len(leaders)),
            _gauge(
                "kafka_server_replicamanager_underreplicatedpartitions",
                "Partitions led here whose ISR is smaller than their replica set",
                under_replicated,
            ),
            _gauge(
                "kafka_server_replicamanager_underminisrpartitioncount",
                "Partitions led here whose ISR is below min.insync.replicas",
                under_min_isr,
            ),
        ]
        shrinks = CounterMetricFamily(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions led here (IsrShrinksPerSec)",
        )
        shrinks.add_metric([], stats.isr_shrinks)
        expands = CounterMetricFamily(
            "kafka_server_replicamanager_isrexpands",
            "ISR expands of partitions led here (IsrExpandsPerSec)",
        )
        expands.add_metric([], stats.isr_expands)
        out += [shrinks, expands]
        for name, doc, counts in (
            ("bytesin", "Bytes appended as leader (BytesInPerSec)", stats.bytes_in),
            ("messagesin", "Records appended as leader (MessagesInPerSec)", stats.messages_in),
            ("bytesout", "Bytes read by consumers' fetches (BytesOutPerSec)", stats.bytes_out),
            (
                "replicationbytesout",
                "Bytes read by followers' fetches (ReplicationBytesOutPerSec)",
                stats.replication_bytes_out,
            ),
        ):
            family = CounterMetricFamily(
                f"kafka_server_brokertopicmetrics_{name}", doc, labels=["topic"]
            )
            for topic, n in sorted(counts.items()):
                family.add_metric([topic], n)
            out.append(family)
        size = GaugeMetricFamily(
            "kafka_log_log_size",
            "Bytes of the partition's log segments",
            labels=["topic", "partition"],
        )
        end = GaugeMetricFamily(
            "kafka_log_log_logendoffset",
            "The partition's log end offset",
            labels=["topic", "partition"],
        )
        for p in sorted(partitions, key=lambda p: (p.topic, p.partition)):
            labels = [p.topic, str(p.partition)]
            size.add_metric(labels, p.log.size_in_bytes())
            end.add_metric(labels, p.log.log_end_offset)
        out += [size, end]
        producers = sum(len(state.producers) for state in replicas.producer_state_managers())
        out.append(
            _gauge(
                "kafka_server_replicamanager_produceridcount",
                "Producer ids whose state the hosted partitions keep (ProducerIdCount)",
                producers,
            )
        )
        parked = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests parked until a partition moves (PurgatorySize): acks=all produces and "
            "consumers' fetches wait on the high watermark, followers' fetches on the log end",
            labels=["delayedOperation"],
        )
        on_hw, on_log_end = replicas.purgatory.parked()
        parked.add_metric(["HighWatermark"], on_hw)
        parked.add_metric(["LogEnd"], on_log_end)
        out.append(parked)
        return out


class QuorumCollector:
    """Kafka's raft-metrics (every seat on the metadata quorum) and, on the Raft leader, each
    voter's and observer's lag (what `kafka-metadata-quorum describe --replication` shows)."""

    def __init__(
        self, quorum, node_id: int, applied_offset: Callable[[], int], is_controller: bool
    ) -> None:
        self.quorum, self.node_id = quorum, node_id
        self.applied_offset = applied_offset
        self.is_controller = is_controller

    def collect(self):
        driver = self.quorum.driver
        info = driver.describe()
        leader = -1 if info.leader_id is None else info.leader_id
        out = [
            _gauge(
                "kafka_server_raftmetrics_current_epoch",
                "The quorum's epoch as this node knows it",
                info.leader_epoch,
            ),
            _gauge(
                "kafka_server_raftmetrics_current_leader",
                "The quorum leader's id, -1 if unknown",
                leader,
            ),
            _gauge(
                "kafka_server_raftmetrics_high_watermark",
                "The metadata log's high watermark as this node knows it",
                info.high_watermark,
            ),
            _gauge(
                "kafka_server_raftmetrics_log_end_offset",
                "This node's metadata log end",
                info.log_end_offset,
            ),
        ]
        state = GaugeMetricFamily(
            "kafka_server_raftmetrics_current_state",
            "1 for this node's role on the quorum",
            labels=["state"],
        )
        state.add_metric([info.role.lower()], 1)
        out.append(state)
        commit = HistogramMetricFamily(
            "kafka_server_raftmetrics_commit_latency_seconds",
            "From this node's proposal to its commit (commit-latency)",
        )
        _histogram(commit, [], driver.commit_latency)
        out.append(commit)
        applied = self.applied_offset()
        out.append(
            _gauge(
                "kafka_server_brokermetadatametrics_last_applied_record_offset"
                if not self.is_controller
                else "kafka_controller_kafkacontroller_lastappliedrecordoffset",
                "The last metadata record this node's image replayed",
                applied,
            )
        )
        out.append(
            _gauge(
                "kraft_metadata_applied_lag_records",
                "Metadata records committed "
                "but not yet replayed here (high watermark - 1 - applied offset)",
                max(0, info.high_watermark - 1 - applied),
            )
        )
        if info.voters or info.observers:  # filled in on the leader only
            lag = GaugeMetricFamily(
                "kraft_raft_replica_lag_records",
                "On the quorum leader: records each replica's metadata log is behind the leader's",
                labels=["replica", "kind"],
            )
            for kind, replicas in (("voter", info.voters), ("observer", info.observers)):
                for r in replicas:
                    lag.add_metric(
                        [str(r.replica_id), kind], max(0, info.log_end_offset - r.log_end_offset)
                    )
            out.append(lag)
        return out


class ControllerCollector:
    """Kafka's KafkaController MBeans from a controller's image; ActiveControllerCount is 1 on
    the active controller only, so a cluster's sum is 1 when it has one."""

    def __init__(self, active, is_active: Callable[[], bool]) -> None:
        self.active, self.is_active = active, is_active

    def collect(self):
        image = self.active.image()
        brokers = list(image.brokers.values())
        fenced = sum(1 for b in brokers if b.fenced)
        regs = [reg for t in image.topics_by_id.values() for reg in t.partitions.values()]
        offline = sum(1 for reg in regs if not reg.has_leader)
        return [
            _gauge(
                "kafka_controller_kafkacontroller_activecontrollercount",
                "1 on the active controller",
                1 if self.is_active() else 0,
            ),
            _gauge(
                "kafka_controller_kafkacontroller_fencedbrokercount",
                "Registered brokers that are fenced",
                fenced,
            ),
            _gauge(
                "kafka_controller_kafkacontroller_activebrokercount",
                "Registered brokers that are not fenced",
                len(brokers) - fenced,
            ),
            _gauge(
                "kafka_controller_kafkacontroller_offlinepartitionscount",
                "Partitions without a leader",
                offline,
            ),
            _gauge(
                "kafka_controller_kafkacontroller_globalpartitioncount",
                "Partitions in the cluster",
                len(regs),
            ),
            _gauge(
                "kafka_controller_kafkacontroller_globaltopiccount",
                "Topics in the cluster",
                len(image.topics_by_id),
            ),
        ]


class GroupCollector:
    """Kafka's GroupMetadataManager NumGroups: the groups this broker coordinates."""

    def __init__(self, groups) -> None:
        self.groups = groups

    def collect(self):
        return [
            _gauge(
                "kafka_coordinator_group_groupmetadatamanager_numgroups",
                "Consumer groups coordinated here",
                sum(d.core.num_groups for d in self.groups.drivers()),
            )
        ]


def established_by_port(fd_dir: str = "/proc/self/fd") -> dict[int, int]:
    """This process's connected TCP sockets per local port ({} where there is no /proc);
    `fd_dir` lists this process's file descriptors.

    Why not /proc/net/tcp: the kernel walks its whole connection hash table to write it, 50 ms
    per read on a large machine, on the node's loop; asking each of our own sockets (a dup,
    getsockname, getpeername) costs microseconds each, and sees only this node's."""
    out: dict[int, int] = {}
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return out
    for name in names:
        try:
            fd = int(name)
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):  # a node holds many segment files
                continue
            copy = os.dup(fd)  # closing our copy leaves grpcio's socket alone
        except (OSError, ValueError):
            continue  # closed meanwhile
        try:
            sock = socket.socket(fileno=copy)
        except OSError:
            os.close(copy)
            continue
        try:
            if sock.type == socket.SOCK_STREAM and sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.getpeername()  # a listening socket has no peer: OSError
                port = sock.getsockname()[1]
                out[port] = out.get(port, 0) + 1
        except OSError:
            pass
        finally:
            sock.close()
    return out


class ConnectionCollector:
    """Kafka's socket-server-metrics connection-count per listener: the connections to each
    listener's port (grpcio does not say how many it holds; its sockets do)."""

    def __init__(
        self,
        listener_ports: Mapping[str, int],
        count: Callable[[], dict[int, int]] = established_by_port,
    ) -> None:
        self.listener_ports, self.count = listener_ports, count

    def collect(self):
        by_port = self.count()
        family = GaugeMetricFamily(
            "kafka_server_socketservermetrics_connection_count",
            "Established connections to the listener",
            labels=["listener"],
        )
        for name, port in sorted(dict(self.listener_ports).items()):
            family.add_metric([name], by_port.get(port, 0))
        return [family]
