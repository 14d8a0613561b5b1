"""The Produce RPC's acks=all answers as the producer reads them: an append whose wait ends in an
error (leadership moved, the wait timed out) must reach the producer as that error, never as
success at the offset where it was written. Pins a chaos finding: the error was set on a protobuf
message after it had been copied into the response, so a deposed leader "acknowledged" writes
the new leader then overwrote."""

from __future__ import annotations

import trio

from broker.replication.replica_manager import ACKS_ALL, ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from clients.errors import ErrorCode
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration


def registration(leader: int, leader_epoch: int) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2),
        isr=(1, 2),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=leader_epoch,
    )


def leader_and_servicer(tmp_path) -> tuple[ReplicaManager, BrokerServicer]:
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    replicas.apply_registration("t", 0, "topic-id", LogConfig(), registration(1, 1))
    servicer = BrokerServicer(
        replicas, metadata=None, channel=None, cluster_id="c", clock_ms=lambda: 0
    )
    return replicas, servicer


def produce(timeout_ms: int = 30_000) -> pb.ProduceRequest:
    batch = encode_batch([(None, b"v", (), 1000)])
    return pb.ProduceRequest(
        acks=ACKS_ALL,
        timeout_ms=timeout_ms,
        topics=[
            pb.TopicProduceData(
                name="t", partitions=[pb.PartitionProduceData(partition=0, records=batch)]
            )
        ],
    )


async def answer_after(servicer: BrokerServicer, event) -> pb.PartitionProduceResponse:
    """The answer to an acks=all produce that is waiting when `event()` happens."""
    answers = []

    async def send():
        answers.append(await servicer.Produce(produce()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.testing.wait_all_tasks_blocked()
        assert not answers  # waiting for follower 2 to fetch the batch
        event()
    [answer] = answers[0].topics[0].partitions
    return answer


async def test_a_deposed_leader_answers_not_leader_not_success(tmp_path):
    replicas, servicer = leader_and_servicer(tmp_path)
    answer = await answer_after(
        servicer,
        lambda: replicas.apply_registration("t", 0, "topic-id", LogConfig(), registration(2, 2)),
    )
    assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert "written at offset 0 but not acknowledged" in answer.error_message


async def test_a_wait_past_the_timeout_answers_request_timed_out(tmp_path, autojump_clock):
    _replicas, servicer = leader_and_servicer(tmp_path)
    response = await servicer.Produce(produce(timeout_ms=200))
    [answer] = response.topics[0].partitions
    assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert "did not all fetch offset 0 within 200 ms" in answer.error_message


async def test_a_committed_batch_is_answered_with_its_offset(tmp_path):
    replicas, servicer = leader_and_servicer(tmp_path)
    answer = await answer_after(
        servicer,
        lambda: replicas.read_for_follower(
            "t",
            0,
            2,
            fetch_offset=1,
            last_fetched_epoch=1,
            current_leader_epoch=1,
            max_bytes=1 << 20,
            now_ms=0,
        ),
    )
    assert (answer.error_code, answer.base_offset) == (0, 0)
