"""The collectors read a node's state when scraped: a real ReplicaManager's partitions, ISR
changes, traffic and purgatory; a quorum seat; a controller's image; groups; connections."""

from __future__ import annotations

import functools
import socket
from types import SimpleNamespace

import trio
import trio.testing
from prometheus_client import CollectorRegistry, generate_latest

from broker.metrics.collectors import (
    ConnectionCollector,
    ControllerCollector,
    GroupCollector,
    QuorumCollector,
    ReplicaCollector,
    established_by_port,
)
from broker.replication.replica_manager import ReplicaManager
from clients.metrics_view import one, parse, total
from clients.quorum_info import QuorumInfo, ReplicaInfo
from clients.record.codec import encode_batch
from kraft.latency_histogram import LatencyHistogram
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import (
    BrokerRegistration,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)

MIN_ISR_3 = LogConfig(min_insync_replicas=3)


def scrape(*collectors):
    registry = CollectorRegistry()
    for c in collectors:
        registry.register(c)
    return parse(generate_latest(registry).decode())


def reg(isr, *, leader=1, leader_epoch=4, partition_epoch=4) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2, 3),
        isr=tuple(isr),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
    )


def leading(tmp_path) -> ReplicaManager:
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    replicas.apply_registration("t", 0, "topic-id", MIN_ISR_3, reg((1, 2, 3)), now_ms=0)
    return replicas


def test_produce_and_fetch_move_the_topic_counters_and_log_size(tmp_path):
    replicas = leading(tmp_path)
    batch = encode_batch([(None, b"v", (), 1)] * 5)
    assert replicas.append("t", 0, batch, 1, 0).error_code == 0
    replicas.read_for_follower("t", 0, 2, 0, -1, 4, 1 << 20, now_ms=1)
    s = scrape(ReplicaCollector(replicas))
    assert total(s, "kafka_server_brokertopicmetrics_bytesin_total", topic="t") == len(batch)
    assert total(s, "kafka_server_brokertopicmetrics_messagesin_total", topic="t") == 5
    assert total(s, "kafka_server_brokertopicmetrics_replicationbytesout_total", topic="t") == len(
        batch
    )
    assert total(s, "kafka_server_brokertopicmetrics_bytesout_total") == 0
    assert total(s, "kafka_log_log_size", topic="t", partition="0") == len(batch)
    assert total(s, "kafka_log_log_logendoffset", topic="t", partition="0") == 5
    assert one(s, "kafka_server_replicamanager_produceridcount") == 0  # not idempotent
    replicas.read_for_follower("t", 0, 3, 5, 4, 4, 1 << 20, now_ms=2)  # HW 5: readable
    replicas.read_for_follower("t", 0, 2, 5, 4, 4, 1 << 20, now_ms=2)
    replicas.read("t", 0, 0, 1 << 20)
    s = scrape(ReplicaCollector(replicas))
    assert total(s, "kafka_server_brokertopicmetrics_bytesout_total", topic="t") == len(batch)


def test_a_shrunk_isr_is_under_replicated_and_under_min_isr_and_counts_a_shrink(tmp_path):
    replicas = leading(tmp_path)
    s = scrape(ReplicaCollector(replicas))
    assert (
        one(s, "kafka_server_replicamanager_leadercount"),
        one(s, "kafka_server_replicamanager_partitioncount"),
        one(s, "kafka_server_replicamanager_underreplicatedpartitions"),
        one(s, "kafka_server_replicamanager_underminisrpartitioncount"),
    ) == (1, 1, 0, 0)
    replicas.apply_registration(
        "t", 0, "topic-id", MIN_ISR_3, reg((1, 2), partition_epoch=5), now_ms=1
    )
    s = scrape(ReplicaCollector(replicas))
    assert one(s, "kafka_server_replicamanager_underreplicatedpartitions") == 1
    assert one(s, "kafka_server_replicamanager_underminisrpartitioncount") == 1
    assert (
        one(s, "kafka_server_replicamanager_isrshrinks_total"),
        one(s, "kafka_server_replicamanager_isrexpands_total"),
    ) == (1, 0)
    replicas.apply_registration(
        "t", 0, "topic-id", MIN_ISR_3, reg((1, 2, 3), partition_epoch=6), now_ms=2
    )
    s = scrape(ReplicaCollector(replicas))
    assert one(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert one(s, "kafka_server_replicamanager_isrexpands_total") == 1


def test_a_new_leader_epoch_is_no_shrink_and_a_follower_counts_nothing(tmp_path):
    replicas = leading(tmp_path)
    # Leadership moves away and back with a smaller ISR: each leader's start, not a shrink.
    replicas.apply_registration(
        "t",
        0,
        "topic-id",
        MIN_ISR_3,
        reg((2, 3), leader=2, leader_epoch=5, partition_epoch=5),
        now_ms=1,
    )
    s = scrape(ReplicaCollector(replicas))
    assert one(s, "kafka_server_replicamanager_leadercount") == 0
    assert one(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0  # not led here
    replicas.apply_registration(
        "t",
        0,
        "topic-id",
        MIN_ISR_3,
        reg((1, 3), leader=1, leader_epoch=6, partition_epoch=6),
        now_ms=2,
    )
    s = scrape(ReplicaCollector(replicas))
    assert one(s, "kafka_server_replicamanager_isrshrinks_total") == 0
    assert one(s, "kafka_server_replicamanager_underreplicatedpartitions") == 1


async def test_parked_requests_are_counted_once_each_by_what_they_wait_on(tmp_path):
    replicas = leading(tmp_path)
    purgatory = replicas.purgatory
    async with trio.open_nursery() as nursery:
        # A consumer's fetch on two partitions, a follower's fetch on one.
        nursery.start_soon(purgatory.wait_moved, [("t", 0), ("t", 1)], trio.current_time() + 60)
        nursery.start_soon(
            functools.partial(
                purgatory.wait_which_moved, [("t", 0)], trio.current_time() + 60, log_end=True
            )
        )
        await trio.testing.wait_all_tasks_blocked()
        s = scrape(ReplicaCollector(replicas))
        assert (
            total(
                s,
                "kafka_server_delayedoperationpurgatory_purgatorysize",
                delayedOperation="HighWatermark",
            )
            == 1
        )
        assert (
            total(
                s, "kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="LogEnd"
            )
            == 1
        )
        purgatory.moved("t", 0)
        await trio.testing.wait_all_tasks_blocked()
        assert purgatory.parked() == (0, 0)


def quorum(info: QuorumInfo, latency: LatencyHistogram | None = None):
    driver = SimpleNamespace(describe=lambda: info, commit_latency=latency or LatencyHistogram())
    return SimpleNamespace(driver=driver)


def test_the_raft_leader_reports_its_epoch_watermark_and_each_replicas_lag():
    info = QuorumInfo(
        1,
        "Leader",
        1,
        7,
        120,
        125,
        voters=(ReplicaInfo(1, 125, 0), ReplicaInfo(2, 125, 3), ReplicaInfo(3, 100, 9)),
        observers=(ReplicaInfo(4, 118, 5),),
    )
    latency = LatencyHistogram()
    latency.observe(0.004)
    s = scrape(QuorumCollector(quorum(info, latency), 1, lambda: 119, True))
    assert one(s, "kafka_server_raftmetrics_current_epoch") == 7
    assert one(s, "kafka_server_raftmetrics_current_leader") == 1
    assert one(s, "kafka_server_raftmetrics_high_watermark") == 120
    assert one(s, "kafka_server_raftmetrics_log_end_offset") == 125
    assert total(s, "kafka_server_raftmetrics_current_state", state="leader") == 1
    assert one(s, "kafka_server_raftmetrics_commit_latency_seconds_count") == 1
    assert one(s, "kafka_controller_kafkacontroller_lastappliedrecordoffset") == 119
    assert one(s, "kraft_metadata_applied_lag_records") == 0
    lags = {
        (labels["replica"], labels["kind"]): v for labels, v in s["kraft_raft_replica_lag_records"]
    }
    assert lags == {("1", "voter"): 0, ("2", "voter"): 0, ("3", "voter"): 25, ("4", "observer"): 7}


def test_a_broker_behind_on_metadata_shows_its_lag_and_no_replica_lags():
    info = QuorumInfo(4, "Observer", 1, 7, 120, 110, voters=(), observers=())
    s = scrape(QuorumCollector(quorum(info), 4, lambda: 100, False))
    assert one(s, "kafka_server_brokermetadatametrics_last_applied_record_offset") == 100
    assert one(s, "kraft_metadata_applied_lag_records") == 19
    assert "kraft_raft_replica_lag_records" not in s
    assert "kafka_controller_kafkacontroller_lastappliedrecordoffset" not in s


def test_the_controller_counts_fenced_brokers_and_offline_partitions():
    def broker(i, fenced):
        return BrokerRegistration(i, "x", 1, "h", 9000 + i, None, fenced)

    parts = {0: reg((1, 2, 3)), 1: PartitionRegistration((2, 3), (), -1, 5, 5)}
    image = MetadataImage(
        offset=9,
        brokers={1: broker(1, False), 2: broker(2, True), 3: broker(3, True)},
        topics_by_id={"id": TopicImage("t", "id", parts)},
    )
    active = SimpleNamespace(image=lambda: image)
    s = scrape(ControllerCollector(active, lambda: True))
    assert one(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert one(s, "kafka_controller_kafkacontroller_fencedbrokercount") == 2
    assert one(s, "kafka_controller_kafkacontroller_activebrokercount") == 1
    assert one(s, "kafka_controller_kafkacontroller_offlinepartitionscount") == 1
    assert one(s, "kafka_controller_kafkacontroller_globalpartitioncount") == 2
    assert one(s, "kafka_controller_kafkacontroller_globaltopiccount") == 1
    standby = scrape(ControllerCollector(active, lambda: False))
    assert one(standby, "kafka_controller_kafkacontroller_activecontrollercount") == 0


def test_groups_are_summed_over_the_coordinators():
    groups = SimpleNamespace(
        drivers=lambda: [SimpleNamespace(core=SimpleNamespace(num_groups=n)) for n in (2, 3)]
    )
    assert (
        one(
            scrape(GroupCollector(groups)), "kafka_coordinator_group_groupmetadatamanager_numgroups"
        )
        == 5
    )


def test_connections_are_counted_per_listener_from_this_process_sockets():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        accepted = [server.accept()[0] for _ in range(2)]  # the third still queued
        try:
            counts = established_by_port()
            assert counts.get(port) == 2  # the listener itself has no peer: not counted
            assert all(counts.get(c.getsockname()[1]) == 1 for c in clients)
            s = scrape(ConnectionCollector({"PLAINTEXT": port, "SSL": 1}))
            by_listener = {
                labels["listener"]: v
                for labels, v in s["kafka_server_socketservermetrics_connection_count"]
            }
            assert by_listener == {"PLAINTEXT": 2, "SSL": 0}
        finally:
            for c in clients + accepted:
                c.close()
    assert established_by_port("/nonexistent") == {}
