"""A real node process over real gRPC: every kind of bad input gets its Kafka error code, nothing
is appended, and the broker keeps serving afterwards."""

from __future__ import annotations

import struct
import threading
import time

import google_crc32c
import pytest

from clients.bridge import open_channel
from clients.errors import ErrorCode
from clients.record.codec import decode_records, encode_batch
from clients.wire import broker_pb2 as bpb
from clients.wire import broker_pb2_grpc, controller_pb2_grpc
from clients.wire import controller_pb2 as cpb

pytestmark = pytest.mark.e2e


class Raw:
    def __init__(self, address: str) -> None:
        channel = open_channel(address)
        self.broker = broker_pb2_grpc.BrokerStub(channel)
        self.controller = controller_pb2_grpc.ControllerStub(channel)

    def create(self, name: str, partitions: int = 1, rf: int = -1, **configs: str):
        req = cpb.CreateTopicsRequest(
            topics=[
                cpb.CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=rf,
                    configs={k.replace("_", "."): v for k, v in configs.items()},
                )
            ]
        )
        return self.controller.CreateTopics(req, timeout=10).topics[0]

    def produce(self, topic: str, records: bytes, acks: int = 1, partition: int = 0):
        req = bpb.ProduceRequest(
            acks=acks,
            timeout_ms=5000,
            topics=[
                bpb.TopicProduceData(
                    name=topic,
                    partitions=[bpb.PartitionProduceData(partition=partition, records=records)],
                )
            ],
        )
        return self.broker.Produce(req, timeout=10).topics[0].partitions[0]

    def fetch(self, topic: str, offset: int, max_wait_ms: int = 0, min_bytes: int = 1):
        req = bpb.FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=min_bytes,
            max_bytes=1 << 20,
            topics=[
                bpb.FetchTopic(
                    topic=topic,
                    partitions=[
                        bpb.FetchPartition(
                            partition=0,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        )
        return self.broker.Fetch(req, timeout=30).topics[0].partitions[0]

    def log_end(self, topic: str) -> int:
        req = bpb.ListOffsetsRequest(
            replica_id=-1,
            topics=[
                bpb.ListOffsetsTopic(
                    name=topic,
                    partitions=[
                        bpb.ListOffsetsPartition(partition=0, current_leader_epoch=-1, timestamp=-1)
                    ],
                )
            ],
        )
        answer = self.broker.ListOffsets(req, timeout=10).topics[0].partitions[0]
        assert answer.error_code == 0, answer.error_message
        return answer.offset


def batch(n: int = 3, size: int = 10) -> bytes:
    return encode_batch([(b"k%d" % i, b"v" * size, (), 1_700_000_000_000 + i) for i in range(n)])


def corrupt_variants() -> dict[str, bytes]:
    good = batch()
    flipped = bytearray(good)
    flipped[-1] ^= 0xFF  # inside the CRC-covered records
    longer = bytearray(good)
    struct.pack_into(">i", longer, 8, len(good))  # batchLength claims more than follows
    magic = bytearray(good)
    magic[16] = 1  # magic 1 (a v1 message set)
    return {
        "wrong CRC": bytes(flipped),
        "wrong length": bytes(longer),
        "truncated body": good[:-7],
        "unknown magic": bytes(magic),
        "good then corrupt": good + bytes(flipped),
        "trailing garbage": good + b"\x00\x01\x02",
    }


@pytest.mark.parametrize("name", list(corrupt_variants()))
def test_corrupt_batch_is_rejected_whole(node, name):
    raw = Raw(node.address)
    assert raw.create("t").error_code == 0
    assert raw.produce("t", batch()).error_code == 0
    before = raw.log_end("t")

    answer = raw.produce("t", corrupt_variants()[name])

    assert answer.error_code == ErrorCode.CORRUPT_MESSAGE, answer
    assert answer.error_message
    assert raw.log_end("t") == before
    assert raw.produce("t", batch()).base_offset == before  # still serving, nothing skipped


def crc_fixed(data) -> bytes:
    out = bytearray(data)
    struct.pack_into(">I", out, 17, google_crc32c.value(bytes(out[21:])))
    return bytes(out)


def invalid_record_variants() -> dict[str, bytes]:
    """Intact batches (their CRC recomputed) whose records do not match their header."""
    lie = bytearray(batch(n=1))
    struct.pack_into(">i", lie, 23, 2**31 - 2)  # lastOffsetDelta
    struct.pack_into(">i", lie, 57, 2**31 - 1)  # recordsCount
    cut = bytearray(batch()[:-4])
    struct.pack_into(">i", cut, 8, len(cut) - 12)  # batchLength fits what is left
    garbage = bytearray(batch(n=1)[:61] + b"not zstd at all" * 3)
    struct.pack_into(">i", garbage, 8, len(garbage) - 12)
    struct.pack_into(">h", garbage, 21, 4)  # attributes: zstd
    snappy = bytearray(batch(n=1))
    struct.pack_into(">h", snappy, 21, 2)  # snappy, records left uncompressed
    return {
        "count that lies": crc_fixed(lie),
        "cut short": crc_fixed(cut),
        "garbage zstd": crc_fixed(garbage),
        "garbage snappy": crc_fixed(snappy),
    }


def test_intact_batches_whose_records_do_not_walk_are_refused(node):
    raw = Raw(node.address)
    assert raw.create("walked").error_code == 0
    assert raw.produce("walked", batch()).error_code == 0
    for name, bad in invalid_record_variants().items():
        answer = raw.produce("walked", bad)
        assert answer.error_code == ErrorCode.INVALID_RECORD, (name, answer)
        assert "nothing was appended" in answer.error_message
        assert raw.log_end("walked") == 3, name
    fetched = raw.fetch("walked", 0)
    assert len(decode_records(fetched.records)) == 3  # consumers read on
    assert raw.produce("walked", batch()).base_offset == 3


def test_each_bad_request_gets_its_error_and_the_broker_keeps_serving(node):
    raw = Raw(node.address)
    assert raw.create("small", max_message_bytes="200").error_code == 0

    assert raw.produce("small", batch(n=1, size=500)).error_code == ErrorCode.MESSAGE_TOO_LARGE
    assert raw.log_end("small") == 0
    assert raw.produce("nope", batch()).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert raw.produce("small", batch(n=1), acks=2).error_code == ErrorCode.INVALID_REQUIRED_ACKS
    assert raw.create("bad name!").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert raw.create("small").error_code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert raw.create("rf", rf=3).error_code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert raw.create("zero", partitions=0).error_code == ErrorCode.INVALID_PARTITIONS
    assert raw.create("bad-config", retention_ms="soon").error_code == ErrorCode.INVALID_CONFIG
    assert raw.fetch("small", 1000).error_code == ErrorCode.OFFSET_OUT_OF_RANGE

    meta = raw.broker.Metadata(bpb.MetadataRequest(topics=["bad name!", "missing"]), timeout=10)
    assert [t.error_code for t in meta.topics] == [
        ErrorCode.INVALID_TOPIC_EXCEPTION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]

    assert raw.produce("small", batch(n=2, size=5)).base_offset == 0


def test_metadata_auto_creates_a_topic_when_allowed(node):
    raw = Raw(node.address)
    meta = raw.broker.Metadata(
        bpb.MetadataRequest(topics=["fresh"], allow_auto_topic_creation=True), timeout=10
    )
    assert meta.topics[0].error_code == 0
    assert len(meta.topics[0].partitions) == 1
    assert raw.produce("fresh", batch()).error_code == 0


def test_fetch_long_polls_until_data_arrives(node):
    raw = Raw(node.address)
    raw.create("poll")
    started = time.monotonic()
    empty = raw.fetch("poll", 0, max_wait_ms=400)
    assert empty.error_code == 0 and empty.records == b""
    assert time.monotonic() - started >= 0.35

    result = {}
    waiter = threading.Thread(
        target=lambda: result.update(answer=raw.fetch("poll", 0, max_wait_ms=20_000))
    )
    started = time.monotonic()
    waiter.start()
    time.sleep(0.3)
    raw.produce("poll", batch())
    waiter.join(15)
    assert result["answer"].records.startswith(struct.pack(">q", 0))
    assert time.monotonic() - started < 10


def test_acks_all_is_refused_when_the_isr_is_below_min_insync_replicas(node):
    raw = Raw(node.address)
    assert raw.create("strict", min_insync_replicas="2").error_code == 0

    refused = raw.produce("strict", batch(), acks=-1)

    assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert "min.insync.replicas=2" in refused.error_message
    assert raw.log_end("strict") == 0
    assert (
        raw.produce("strict", batch(), acks=1).error_code == 0
    )  # acks=1 does not wait for the ISR


def test_follower_fetches_from_strangers_or_stale_epochs_are_refused_and_change_nothing(node):
    raw = Raw(node.address)
    assert raw.create("guarded").error_code == 0
    assert raw.produce("guarded", batch()).error_code == 0
    before = raw.log_end("guarded")

    def follower_fetch(replica_id: int, leader_epoch: int, offset: int = 0):
        req = bpb.FetchRequest(
            replica_id=replica_id,
            max_wait_ms=0,
            min_bytes=1,
            max_bytes=1 << 20,
            topics=[
                bpb.FetchTopic(
                    topic="guarded",
                    partitions=[
                        bpb.FetchPartition(
                            partition=0,
                            current_leader_epoch=leader_epoch,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        )
        return raw.broker.Fetch(req, timeout=10).topics[0].partitions[0]

    meta = raw.broker.Metadata(bpb.MetadataRequest(topics=["guarded"]), timeout=10)
    epoch = meta.topics[0].partitions[0].leader_epoch
    stranger = follower_fetch(replica_id=99, leader_epoch=epoch)
    assert stranger.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert "replica 99 is not assigned" in stranger.error_message and not stranger.records
    # (A stale epoch, FENCED_LEADER_EPOCH, needs a leader change: tests/broker/replication.)
    future = follower_fetch(replica_id=99, leader_epoch=epoch + 1)
    assert future.error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
    # The leader's view is untouched: the high watermark and log end stay where the producer left them.
    assert raw.log_end("guarded") == before
    assert raw.fetch("guarded", 0).records
