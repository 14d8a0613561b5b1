"""The hand-built FetchResponse (records read from the segment files straight into the serialized
answer) is wire-compatible: byte for byte what protobuf serialized from the message the Fetch
handler used to build, for consumer and follower fetches, errors, diverging epochs, no records;
and records that cannot be read answer KAFKA_STORAGE_ERROR."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.replication.replica_manager import ACKS_ALL, ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from broker.services.fetch_response import serialize_fetch_response, varint
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.file_slice import FileSlice
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

REG = PartitionRegistration(
    replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=3, partition_epoch=3
)


def leader(dir: Path) -> BrokerServicer:
    """A leader of t-0 (three batches, two committed), t-1 (empty) and u-0 (one big batch,
    committed)."""
    replicas = ReplicaManager(
        LogManager([dir], LogConfig(), now_ms=0), node_id=1, clock_ms=lambda: 0
    )
    for topic, partition in (("t", 0), ("t", 1), ("u", 0)):
        replicas.apply_registration(topic, partition, f"id-{topic}", LogConfig(), REG, now_ms=0)
    for i in range(3):
        batch = encode_batch([(b"k%d" % i, b"v" * (100 + i), (), 1000 + i)] * (i + 1))
        assert replicas.append("t", 0, batch, ACKS_ALL, 0).error_code == 0
    assert (
        replicas.append("u", 0, encode_batch([(None, b"x" * 70_000, (), 5)]), 1, 0).error_code == 0
    )
    replicas.read_for_follower("t", 0, 2, 3, 3, 3, 1 << 20, 0)  # the HW moves to 3: 2 batches
    replicas.read_for_follower("u", 0, 2, 1, 3, 3, 1 << 20, 0)  # and to 1: the big batch
    return BrokerServicer(
        replicas,
        metadata=None,
        channel=None,
        cluster_id="c",
        clock_ms=lambda: 0,
        monotonic_ms=lambda: 0,
    )


def old_read(servicer: BrokerServicer, request: pb.FetchRequest) -> pb.FetchResponse:
    """What the Fetch handler built before: a message holding the records."""
    remaining = request.max_bytes if request.max_bytes > 0 else 50 * 1024 * 1024
    total, topics = 0, []
    for topic in request.topics:
        answers = []
        for part in topic.partitions:
            limit = min(part.partition_max_bytes or remaining, remaining)
            if request.replica_id >= 0:
                result = servicer.replicas.read_for_follower(
                    topic.topic,
                    part.partition,
                    request.replica_id,
                    part.fetch_offset,
                    part.last_fetched_epoch,
                    part.current_leader_epoch,
                    limit,
                    0,
                    min_one_batch=total == 0,
                )
            else:
                result = servicer.replicas.read(
                    topic.topic,
                    part.partition,
                    part.fetch_offset,
                    limit,
                    current_leader_epoch=part.current_leader_epoch,
                    min_one_batch=total == 0,
                )
            total += len(result.records)
            remaining = max(remaining - len(result.records), 0)
            answer = pb.FetchPartitionResponse(
                partition=part.partition,
                error_code=result.error_code,
                error_message=result.error_message,
                high_watermark=result.high_watermark,
                last_stable_offset=result.high_watermark,
                log_start_offset=result.log_start_offset,
                records=result.records,
            )
            if result.diverging_epoch is not None:
                answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset = (
                    result.diverging_epoch
                )
            answers.append(answer)
        topics.append(pb.FetchTopicResponse(topic=topic.topic, partitions=answers))
    return pb.FetchResponse(topics=topics)


def fetch(
    replica_id: int, parts: list[tuple[str, int, int, int]], max_bytes: int = 0
) -> pb.FetchRequest:
    """parts: (topic, partition, fetch_offset, last_fetched_epoch)."""
    topics: dict[str, list] = {}
    for topic, partition, offset, epoch in parts:
        topics.setdefault(topic, []).append(
            pb.FetchPartition(
                partition=partition,
                fetch_offset=offset,
                last_fetched_epoch=epoch,
                current_leader_epoch=3 if replica_id >= 0 else -1,
            )
        )
    return pb.FetchRequest(
        replica_id=replica_id,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=max_bytes,
        topics=[pb.FetchTopic(topic=t, partitions=p) for t, p in topics.items()],
    )


CASES = {
    # a consumer: committed batches, nothing yet, the big batch, an offset out of range, an
    # unknown partition
    "consumer": fetch(
        -1,
        [("t", 0, 0, -1), ("t", 1, 0, -1), ("u", 0, 0, -1), ("t", 0, 99, -1), ("nope", 0, 0, -1)],
    ),
    "consumer, max_bytes cuts": fetch(-1, [("t", 0, 0, -1), ("u", 0, 0, -1)], max_bytes=300),
    "consumer, first batch bigger than max_bytes": fetch(
        -1, [("u", 0, 0, -1), ("t", 0, 0, -1)], max_bytes=10
    ),
    # a follower: all three batches, a diverging epoch, an empty log, the big batch
    "follower": fetch(2, [("t", 0, 0, -1), ("t", 0, 3, 2), ("t", 1, 0, -1), ("u", 0, 0, -1)]),
    "follower, nothing new": fetch(2, [("t", 1, 0, -1)]),
}


@pytest.mark.parametrize("case", CASES)
async def test_hand_built_bytes_are_the_old_message(tmp_path, case):
    request = CASES[case]
    expected = old_read(leader(tmp_path / "old"), request)
    got = await leader(tmp_path / "new").fetch_serialized(request)
    assert pb.FetchResponse.FromString(got) == expected
    assert got == expected.SerializeToString()  # same bytes, not just an equal message
    assert any(p.records for t in expected.topics for p in t.partitions) or "nothing" in case


def test_the_cases_cover_errors_diverging_epochs_and_empty_records(tmp_path):
    expected = [old_read(leader(tmp_path / case), r) for case, r in CASES.items()]
    parts = [p for response in expected for t in response.topics for p in t.partitions]
    assert any(p.error_code for p in parts)
    assert any(p.HasField("diverging_epoch") for p in parts)
    assert any(not p.records and not p.error_code for p in parts)
    assert any(len(p.records) > 65_536 for p in parts)  # a length needing a 3-byte varint


def test_varint_and_plain_bytes_records():
    assert [varint(n) for n in (0, 127, 128, 300, 1 << 21)] == [
        b"\x00",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
        b"\x80\x80\x80\x01",
    ]
    head = pb.FetchPartitionResponse(partition=4, high_watermark=9).SerializeToString()
    built = serialize_fetch_response(
        [(pb.FetchTopicResponse(topic="t").SerializeToString(), [(head, b"abc"), (head, b"")])]
    )
    assert (
        built
        == pb.FetchResponse(
            topics=[
                pb.FetchTopicResponse(
                    topic="t",
                    partitions=[
                        pb.FetchPartitionResponse(partition=4, high_watermark=9, records=b"abc"),
                        pb.FetchPartitionResponse(partition=4, high_watermark=9),
                    ],
                )
            ]
        ).SerializeToString()
    )


# A fetch whose records cannot be read into the answer (an I/O error from preadv) answers
# KAFKA_STORAGE_ERROR and takes the log dir offline, as any read error does: the request neither
# fails nor hangs.
async def test_an_unreadable_segment_answers_storage_error(tmp_path, monkeypatch):
    servicer = leader(tmp_path)
    calls = []

    def failing(self, view):
        calls.append(self)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(FileSlice, "read_into", failing)
    response = await servicer.Fetch(fetch(-1, [("t", 0, 0, -1)]))
    [answer] = response.topics[0].partitions
    assert calls
    assert answer.error_code == ErrorCode.KAFKA_STORAGE_ERROR
    assert not answer.records
    assert servicer.replicas.get("t", 0) is None  # offline: no longer served
    monkeypatch.undo()
    # An I/O error fails the whole log dir, as Kafka does: its other logs answer the same error,
    # and the broker goes on answering.
    other = await servicer.Fetch(fetch(-1, [("u", 0, 0, -1)]))
    assert other.topics[0].partitions[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR


async def test_the_served_bytes_pass_the_request_checks_too(tmp_path):
    # The gRPC server serves fetch_serialized, not Fetch: a bad request is refused there as well.
    request = fetch(-1, [("t", 0, 0, -1)], max_bytes=-5)
    answer = pb.FetchResponse.FromString(await leader(tmp_path).fetch_serialized(request))
    assert answer.error_code == ErrorCode.INVALID_REQUEST
    assert "max_bytes=-5 is negative" in answer.error_message
    assert not answer.topics
