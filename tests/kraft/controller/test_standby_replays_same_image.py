"""A standby controller (or a broker) that replays the active controller's committed records
reaches the same image, one by one, in batches, or from a snapshot plus the rest of the log;
and commands alone never change a controller's state."""

import random

from controller_helpers import EPOCH, Harness

from kraft.controller.controller import QuorumController
from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    AllocateProducerIdsRequest,
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
)
from kraft.metadata import records as r
from kraft.metadata.snapshot import decode_snapshot, encode_snapshot

CONFIG = ControllerConfig(broker_session_timeout_ms=9000)


def busy_history(seed: int) -> Harness:
    rng = random.Random(seed)
    h = Harness(CONFIG, seed=seed)
    h.add_brokers([1, 2, 3, 4], racks=["a", "b", "a", "b"])
    for i in range(5):
        h.create_topic(
            f"t{i}",
            partitions=rng.randint(1, 6),
            rf=rng.randint(1, 3),
            configs={"retention.ms": str(rng.randint(1, 10**6))},
        )
    h.call("handle_create_partitions", CreatePartitionsRequest((CreatePartitionsTopic("t0", 8),)))
    h.call("handle_delete_topics", DeleteTopicsRequest(("t1",)))
    h.call(
        "handle_incremental_alter_configs",
        IncrementalAlterConfigsRequest(
            (
                AlterConfigsResource(
                    "topic",
                    "t2",
                    (
                        AlterConfigOp(
                            "unclean.leader.election.enable", AlterConfigOpType.SET, "true"
                        ),
                    ),
                ),
            )
        ),
    )
    h.call("handle_allocate_producer_ids", AllocateProducerIdsRequest(2, h.broker_epochs[2]))
    for b in (1, 2, 3):
        h.heartbeat(b, now_ms=5000)
    h.commit(h.controller.maybe_fence_stale_brokers(9000))  # broker 4 goes
    h.register(4, rack="b", now_ms=10_000)  # and comes back
    h.heartbeat(4, now_ms=10_001)
    return h


def test_a_standby_replaying_record_by_record_reaches_the_same_image():
    for seed in range(5):
        active = busy_history(seed)
        standby = QuorumController(CONFIG)
        for offset, record in enumerate(active.log):
            standby.replay(r.decode(r.encode(record)), offset, EPOCH)
        assert standby.image == active.image
        assert standby.image.offset == len(active.log) - 1
        assert standby.image.broker(4).fenced is False


def test_a_standby_loading_a_snapshot_then_the_tail_reaches_the_same_image():
    active = busy_history(7)
    cut = len(active.log) // 2
    first = QuorumController(CONFIG)
    first.replay_batch(active.log[:cut], 0, EPOCH)
    standby = QuorumController(
        CONFIG, image=decode_snapshot(encode_snapshot(first.image), cut - 1, EPOCH)
    )
    standby.replay_batch(active.log[cut:], cut, EPOCH)
    assert standby.image == active.image


def test_a_standby_that_becomes_active_keeps_going():
    active = busy_history(3)
    standby = QuorumController(CONFIG)
    standby.replay_batch(active.log, 0, EPOCH)
    standby.become_active(now_ms=50_000)
    # Sessions start afresh at the failover: nobody is fenced until a full timeout passes.
    assert standby.maybe_fence_stale_brokers(58_999).records == []
    fenced = standby.maybe_fence_stale_brokers(59_000)
    assert set(fenced.response) == {1, 2, 3, 4}


def test_commands_never_change_state_only_replay_does():
    h = busy_history(1)
    c = h.controller
    before = c.image
    results = [
        c.handle_create_partitions(CreatePartitionsRequest((CreatePartitionsTopic("t0", 9),)), 0),
        c.handle_delete_topics(DeleteTopicsRequest(("t0",)), 0),
        c.handle_allocate_producer_ids(AllocateProducerIdsRequest(1, h.broker_epochs[1]), 0),
        c.maybe_fence_stale_brokers(10**9),
    ]
    assert all(res.records for res in results)
    assert c.image is before and c.image.topic("t0") is not None
    assert len(before.topic("t0").partitions) == 8
