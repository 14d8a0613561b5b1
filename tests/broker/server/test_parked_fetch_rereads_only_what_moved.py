"""A follower's fetch parked on many partitions, woken by an append to one of them, reads only
that one again (the others' answers still hold); its answer is the one a full read gives. At its
deadline, with nothing new, it reads every partition again."""

from __future__ import annotations

import trio
import trio.testing

from broker.replication.replica_manager import ReplicaManager
from broker.services.broker_servicer import BrokerServicer
from clients.record.codec import encode_batch
from clients.wire import broker_pb2 as pb
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

PARTITIONS = 20
REG = PartitionRegistration(
    replicas=(1, 2), isr=(1, 2), leader=1, leader_epoch=1, partition_epoch=1
)


def follower_fetch() -> pb.FetchRequest:
    return pb.FetchRequest(
        replica_id=2,
        max_wait_ms=500,
        min_bytes=1,
        topics=[
            pb.FetchTopic(
                topic="t",
                partitions=[
                    pb.FetchPartition(
                        partition=p, fetch_offset=0, last_fetched_epoch=-1, current_leader_epoch=1
                    )
                    for p in range(PARTITIONS)
                ],
            )
        ],
    )


def _cluster(tmp_path):
    replicas = ReplicaManager(
        LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1, clock_ms=lambda: 0
    )
    for p in range(PARTITIONS):
        replicas.apply_registration("t", p, "id", LogConfig(), REG, now_ms=0)
    servicer = BrokerServicer(
        replicas,
        metadata=None,
        channel=None,
        cluster_id="c",
        clock_ms=lambda: 0,
        monotonic_ms=lambda: 0,
    )
    reads: list[int] = []
    real = replicas.read_for_follower

    def counting(topic, partition, *args, **kwargs):
        reads.append(partition)
        return real(topic, partition, *args, **kwargs)

    replicas.read_for_follower = counting
    return replicas, servicer, reads


async def test_a_wake_by_one_partition_rereads_only_it(tmp_path, mock_clock):
    replicas, servicer, reads = _cluster(tmp_path)
    fetched = []

    async def fetch():
        fetched.append(await servicer.Fetch(follower_fetch()))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetch)
        await trio.testing.wait_all_tasks_blocked()
        assert not fetched and sorted(reads) == list(range(PARTITIONS))
        reads.clear()
        result = replicas.append("t", 7, encode_batch([(None, b"v", (), 1)]), 1, 0)
        assert result.error_code == 0
        await trio.testing.wait_all_tasks_blocked()
    assert reads == [7]
    [answer] = fetched
    parts = answer.topics[0].partitions
    assert [p.partition for p in parts] == list(range(PARTITIONS))
    assert [bool(p.records) for p in parts] == [p == 7 for p in range(PARTITIONS)]
    assert all(p.error_code == 0 for p in parts)
    # The same request read in full now gives the same answer (the follower is still at 0).
    assert await servicer.Fetch(follower_fetch()) == answer


async def test_at_the_deadline_every_partition_is_read_again(tmp_path, mock_clock):
    mock_clock.autojump_threshold = 0
    _, servicer, reads = _cluster(tmp_path)
    answer = await servicer.Fetch(follower_fetch())
    assert sorted(reads) == sorted(list(range(PARTITIONS)) * 2)
    assert not any(p.records for p in answer.topics[0].partitions)
