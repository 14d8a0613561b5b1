"""The idempotent producer against the fake broker over real gRPC: it gets a producer id, numbers
each partition's batches from 0, a retry goes out with the same bytes and sequence (and the
leader's duplicate answer is a success with the original offset), a sequence error fails the
batch and bumps the epoch, and the configuration rules are Kafka's."""

from __future__ import annotations

import pathlib
import sys

import pytest

from clients.errors import ErrorCode, KraftError
from clients.producer import AsyncProducer
from clients.record.batch_header import iter_valid_batches
from clients.wire import broker_pb2 as bp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


class RecordingBroker(FakeBroker):
    """Keeps the record bytes of every Produce, per partition, as they arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: dict[tuple, list[bytes]] = {}
        self.duplicate_answers: list[int] = []  # answer the next Produce(s) with these offsets

    def Produce(self, req, ctx):
        for t in req.topics:
            for p in t.partitions:
                self.sent.setdefault((t.name, p.partition), []).append(bytes(p.records))
        if self.duplicate_answers:
            offset = self.duplicate_answers.pop(0)
            return bp.ProduceResponse(
                topics=[
                    bp.TopicProduceResponse(
                        name=t.name,
                        partitions=[
                            bp.PartitionProduceResponse(
                                partition=p.partition,
                                base_offset=offset,
                                error_code=ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in req.topics
                ]
            )
        return super().Produce(req, ctx)


@pytest.fixture
def broker():
    b = RecordingBroker().start()
    yield b
    b.stop()


def stored_headers(broker, topic, partition):
    log = broker.topics[topic][partition]
    return [h for _, h in iter_valid_batches(bytes(log.data))]


async def test_each_partition_counts_its_own_sequences_from_zero(broker):
    broker.create("t", 2)
    async with AsyncProducer(broker.address, acks="all", linger_ms=0, batch_size=120) as p:
        for i in range(12):
            await p.send_and_wait("t", b"value-%02d" % i, partition=i % 2)
        for i in range(30):
            await p.send("t", b"v%02d" % i, partition=0)
        await p.flush()
    assert len(broker.init_requests) == 1 and not broker.init_requests[0].HasField("producer_id")
    for partition in (0, 1):
        headers = stored_headers(broker, "t", partition)
        assert {(h.producer_id, h.producer_epoch) for h in headers} == {(1001, 0)}
        expected = 0
        for h in headers:  # dense: each batch starts where the previous one ended
            assert h.base_sequence == expected
            expected += h.records_count
        assert expected == sum(h.records_count for h in headers) == (36 if partition == 0 else 6)


async def test_a_retry_resends_the_same_bytes_and_gets_the_original_offset(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, acks="all", retry_backoff_ms=10) as p:
        await p.send_and_wait("t", b"first")
        broker.lost_answers.append(ErrorCode.REQUEST_TIMED_OUT)  # appended, answer lost
        meta = await p.send_and_wait("t", b"second")
    assert meta.offset == 1
    first_try, retry = broker.sent[("t", 0)][1:]
    assert first_try == retry
    assert [h.base_sequence for h in stored_headers(broker, "t", 0)] == [0, 1]  # one copy


async def test_a_duplicate_answer_is_a_success_with_the_original_offset(broker):
    broker.create("t", 1)
    broker.duplicate_answers.append(41)
    async with AsyncProducer(broker.address, acks="all") as p:
        meta = await p.send_and_wait("t", b"again")
    assert meta.offset == 41


async def test_out_of_order_fails_the_batch_then_the_epoch_is_bumped(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, acks="all", retry_backoff_ms=10) as p:
        await p.send_and_wait("t", b"a")
        broker.produce_errors.append(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        with pytest.raises(KraftError) as info:
            await p.send_and_wait("t", b"b")
        assert info.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert "t-0" in info.value.message
        meta = await p.send_and_wait("t", b"c")
    assert meta.offset == 1
    bump = broker.init_requests[-1]
    assert (bump.producer_id, bump.producer_epoch) == (1001, 0)
    last = stored_headers(broker, "t", 0)[-1]
    assert (last.producer_id, last.producer_epoch, last.base_sequence) == (1001, 1, 0)


async def test_a_batch_refused_before_the_append_gives_its_sequence_back(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, acks="all") as p:
        await p.send_and_wait("t", b"a")
        broker.produce_errors.append(ErrorCode.MESSAGE_TOO_LARGE)
        with pytest.raises(KraftError):
            await p.send_and_wait("t", b"b")
        await p.send_and_wait("t", b"c")
    assert [h.base_sequence for h in stored_headers(broker, "t", 0)] == [0, 1]
    assert len(broker.init_requests) == 1  # no epoch bump needed


async def test_init_producer_id_is_retried_on_retriable_errors(broker):
    broker.create("t", 1)
    broker.init_errors.extend([ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 2)
    async with AsyncProducer(broker.address, acks="all", retry_backoff_ms=10) as p:
        meta = await p.send_and_wait("t", b"v")
    assert meta.offset == 0 and len(broker.init_requests) == 3


async def test_no_producer_id_fails_the_sends_with_a_way_out(broker):
    broker.create("t", 1)
    broker.init_errors.append(ErrorCode.INVALID_REQUEST)
    async with AsyncProducer(broker.address, acks="all", retry_backoff_ms=10) as p:
        with pytest.raises(KraftError) as info:
            await p.send_and_wait("t", b"v")
    assert "enable_idempotence=False" in info.value.message


async def test_idempotence_is_kafkas_default_with_acks_all_only(broker):
    broker.create("t", 1)
    async with AsyncProducer(broker.address, acks=1) as p:
        await p.send_and_wait("t", b"plain")
    async with AsyncProducer(broker.address, acks="all", enable_idempotence=False) as p:
        await p.send_and_wait("t", b"plain too")
    assert broker.init_requests == []
    assert {h.producer_id for h in stored_headers(broker, "t", 0)} == {-1}
    with pytest.raises(ValueError, match="enable_idempotence=True needs acks='all'"):
        AsyncProducer(broker.address, acks=1, enable_idempotence=True)
    with pytest.raises(ValueError, match="retries"):
        AsyncProducer(broker.address, acks="all", enable_idempotence=True, retries=0)
