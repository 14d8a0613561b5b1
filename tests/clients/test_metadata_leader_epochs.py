"""KIP-320 on the client: metadata never moves a partition back to an older leader epoch (a
broker just back from a pause still names the deposed leader), and consumer fetches carry the
epoch they know, so a deposed leader refuses them rather than answering OFFSET_OUT_OF_RANGE
from its shorter log (seen in a 30-minute chaos run: a consumer jumped back to offset 0)."""

from __future__ import annotations

import pathlib
import sys

import trio

from clients.cluster import MetadataCache
from clients.consumer import AsyncConsumer
from clients.types import TopicPartition
from clients.wire import broker_pb2 as bp

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # pytest runs with --import-mode=importlib
from test_cluster_fakebroker import FakeBroker  # noqa: E402


def answer(leader: int, epoch: int, topic_id: str = "id-1") -> bp.MetadataResponse:
    return bp.MetadataResponse(
        topics=[
            bp.TopicMetadata(
                name="t",
                topic_id=topic_id,
                partitions=[bp.PartitionMetadata(partition=0, leader=leader, leader_epoch=epoch)],
            )
        ]
    )


def test_an_older_leader_epoch_does_not_replace_a_newer_one():
    cache = MetadataCache()
    cache.update(answer(leader=5, epoch=3))
    cache.update(answer(leader=6, epoch=2))  # from a broker whose image lags
    assert (cache.leader_for(("t", 0)), cache.leader_epoch(("t", 0))) == (5, 3)
    cache.update(answer(leader=4, epoch=4))
    assert (cache.leader_for(("t", 0)), cache.leader_epoch(("t", 0))) == (4, 4)


def test_a_recreated_topic_starts_its_epochs_over():
    cache = MetadataCache()
    cache.update(answer(leader=5, epoch=3))
    cache.update(answer(leader=6, epoch=0, topic_id="id-2"))
    assert (cache.leader_for(("t", 0)), cache.leader_epoch(("t", 0))) == (6, 0)
    assert cache.leader_epoch(("t", 9)) == cache.leader_epoch(("u", 0)) == -1


async def test_consumer_fetches_carry_the_known_leader_epoch():
    broker = FakeBroker().start()
    try:
        broker.create("t", 1)
        broker.leader_epoch = 7
        async with AsyncConsumer(broker.address, auto_offset_reset="earliest") as c:
            c.assign([TopicPartition("t", 0)])
            with trio.fail_after(5):
                while not broker.fetch_epochs:
                    await c.poll(timeout_ms=50)
        assert set(broker.fetch_epochs) == {7}
    finally:
        broker.stop()
