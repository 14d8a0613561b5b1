"""The ordering a Kafka connection relies on: ProduceHandler calls `appended()` once the
records are in the leader's log and before its acks=all wait, so the connection can read the
next request while this one waits for the followers."""

from __future__ import annotations

import trio

from broker.handlers.produce import (
    PartitionData,
    ProduceHandler,
    ProduceRequest,
    TopicData,
)
from broker.replication.replica_manager import ReplicaManager
from clients.record.codec import encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

# Two in-sync replicas: the follower never fetches here, so acks=all waits.
REG = PartitionRegistration(
    replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=1, partition_epoch=1
)


async def test_appended_comes_after_the_append_and_before_the_acks_wait(tmp_path):
    replicas = ReplicaManager(
        LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1, clock_ms=lambda: 0
    )
    replicas.apply_registration("orders", 0, "o" * 32, LogConfig(), REG, now_ms=0)
    handler = ProduceHandler(replicas, clock_ms=lambda: 0)
    batch = encode_batch([(b"k", b"v", (), 1000)])
    request = ProduceRequest(
        acks=-1,
        timeout_ms=60_000,
        topics=[TopicData("orders", [PartitionData(0, memoryview(batch))])],
    )
    seen = []
    finished = trio.Event()

    async def produce():
        await handler.handle(
            request, appended=lambda: seen.append(replicas.get("orders", 0).log.log_end_offset)
        )
        finished.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(produce)
        with trio.fail_after(5):
            while not seen:
                await trio.sleep(0.01)
        assert seen == [1]  # the record is in the log when appended() runs...
        await trio.sleep(0.2)
        assert not finished.is_set()  # ...and the answer still waits for the follower
        nursery.cancel_scope.cancel()
