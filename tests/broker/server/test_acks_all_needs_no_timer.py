"""acks=all end to end through the Broker servicer with trio's clock standing still: an append
wakes the follower's parked fetch at once with the new batch, and the follower's next fetch
moves the high watermark that answers the producer. No step waits for a timer or a poll."""

from __future__ import annotations

import trio
import trio.testing

from broker.replication.replica_manager import ACKS_ALL, ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

REG = PartitionRegistration(
    replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=1, partition_epoch=1
)


def follower_fetch(offset: int) -> pb.FetchRequest:
    return pb.FetchRequest(
        replica_id=2,
        max_wait_ms=500,
        min_bytes=1,
        topics=[
            pb.FetchTopic(
                topic="t",
                partitions=[
                    pb.FetchPartition(
                        partition=0,
                        fetch_offset=offset,
                        last_fetched_epoch=1 if offset else -1,
                        current_leader_epoch=1,
                    )
                ],
            )
        ],
    )


async def test_an_append_wakes_the_follower_and_its_next_fetch_answers_the_producer(
    tmp_path, mock_clock
):
    replicas = ReplicaManager(
        LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1, clock_ms=lambda: 0
    )
    replicas.apply_registration("t", 0, "id", LogConfig(), REG, now_ms=0)
    servicer = BrokerServicer(
        replicas,
        metadata=None,
        channel=None,
        cluster_id="c",
        clock_ms=lambda: 0,
        monotonic_ms=lambda: 0,
    )
    produced, fetched = [], []
    start = trio.current_time()

    async def produce():
        produced.append(
            await servicer.Produce(
                pb.ProduceRequest(
                    acks=ACKS_ALL,
                    timeout_ms=30_000,
                    topics=[
                        pb.TopicProduceData(
                            name="t",
                            partitions=[
                                pb.PartitionProduceData(
                                    partition=0, records=encode_batch([(None, b"v", (), 1)])
                                )
                            ],
                        )
                    ],
                )
            )
        )

    async def fetch(offset):
        fetched.append(await servicer.Fetch(follower_fetch(offset)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetch, 0)  # the follower's fetch parks: nothing yet
        await trio.testing.wait_all_tasks_blocked()
        assert not fetched
        nursery.start_soon(produce)
        await trio.testing.wait_all_tasks_blocked()
        [answer] = fetched  # woken by the append, with the batch
        assert answer.topics[0].partitions[0].records
        assert not produced  # the follower has not confirmed it yet
        nursery.start_soon(fetch, 1)  # the follower's next fetch: it holds 1
        await trio.testing.wait_all_tasks_blocked()
        [response] = produced
        assert response.topics[0].partitions[0].error_code == 0
        assert trio.current_time() == start  # the clock stands still: no timer could fire
        assert replicas.get("t", 0).log.high_watermark == 1
        nursery.cancel_scope.cancel()  # the second fetch parks: nothing new
