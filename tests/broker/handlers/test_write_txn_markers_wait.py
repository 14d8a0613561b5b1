"""How long WriteTxnMarkers waits (broker/handlers/write_txn_markers.py): a partition whose
in-sync follower stopped fetching cannot commit its marker, and the request answers within
MARKER_TIMEOUT_MS (well before the coordinator's own request timeout) with the committed
partitions NONE and that one REQUEST_TIMED_OUT; the coordinator's retry writes no second marker
and is answered as soon as the first one is committed."""

from __future__ import annotations

import trio

from broker.handlers.write_txn_markers import MARKER_TIMEOUT_MS, TxnMarkerWriter
from broker.replication.replica_manager import ReplicaManager
from broker.security.request_authorizer import OPEN
from broker.transaction.markers import REQUEST_TIMEOUT_S
from clients.errors import ErrorCode as E
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

PID = 77


def registration(replicas: tuple[int, ...]) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=replicas, isr=replicas, leader=1, leader_epoch=1, partition_epoch=1
    )


def abort_markers() -> pb.WriteTxnMarkersRequest:
    return pb.WriteTxnMarkersRequest(
        markers=[
            pb.TxnMarker(
                producer_id=PID,
                producer_epoch=0,
                committed=False,
                coordinator_epoch=1,
                topics=[
                    pb.TopicPartitions(topic="fast", partitions=[0]),
                    pb.TopicPartitions(topic="stuck", partitions=[0]),
                ],
            )
        ]
    )


def answered(response) -> dict:
    return {p.topic: p.error_code for p in response.markers[0].partitions}


async def test_a_partition_that_cannot_commit_answers_retriable_in_time_and_the_retry_reuses_it(
    tmp_path, autojump_clock
):
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    replicas.apply_registration("fast", 0, "id-fast", LogConfig(), registration((1,)))
    # Broker 2 is in the ISR but never fetches: the high watermark cannot pass the marker.
    replicas.apply_registration("stuck", 0, "id-stuck", LogConfig(), registration((1, 2)))
    heard = []
    writer = TxnMarkerWriter(replicas, OPEN, lambda *a: heard.append(a), clock_ms=lambda: 0)
    stuck_log = replicas.get("stuck", 0).log

    started = trio.current_time()
    first = await writer.write_txn_markers(abort_markers())
    took = trio.current_time() - started
    assert answered(first) == {"fast": E.NONE, "stuck": E.REQUEST_TIMED_OUT}
    assert took <= MARKER_TIMEOUT_MS / 1000 < REQUEST_TIMEOUT_S / 2
    assert stuck_log.log_end_offset == 1

    async def follower_catches_up_later():
        await trio.sleep(1)
        fetched = replicas.read_for_follower(
            "stuck",
            0,
            2,
            fetch_offset=1,
            last_fetched_epoch=1,
            current_leader_epoch=1,
            max_bytes=1 << 20,
            now_ms=0,
        )
        assert fetched.error_code == 0

    async with trio.open_nursery() as nursery:
        nursery.start_soon(follower_catches_up_later)
        started = trio.current_time()
        retry = await writer.write_txn_markers(abort_markers())
        took = trio.current_time() - started
    assert answered(retry) == {"fast": E.NONE, "stuck": E.NONE}
    assert took < 1.5  # answered once the follower had the marker, not at the timeout
    assert stuck_log.log_end_offset == 1  # the first marker, not a second one
    assert heard == []  # neither is __consumer_offsets
