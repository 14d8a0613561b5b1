"""AllocateProducerIds hands out consecutive blocks of 1000; AlterPartition changes an ISR only
for the current leader with the current broker, leader and partition epochs."""

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.messages import (
    AllocateProducerIdsRequest,
    AlterPartitionRequest,
    PartitionIsrChange,
)


def test_producer_id_blocks_never_overlap():
    h = Harness()
    h.add_brokers([1, 2])
    a = h.call("handle_allocate_producer_ids", AllocateProducerIdsRequest(1, h.broker_epochs[1]))
    b = h.call("handle_allocate_producer_ids", AllocateProducerIdsRequest(2, h.broker_epochs[2]))
    assert (a.producer_id_start, a.producer_id_len) == (0, 1000)
    assert (b.producer_id_start, b.producer_id_len) == (1000, 1000)
    assert h.image.next_producer_id == 2000


@pytest.mark.parametrize(
    "broker_id, epoch_delta, fragment",
    [(1, 1, "sent broker epoch"), (9, 0, "broker 9 is not registered")],
)
def test_producer_ids_need_the_current_broker_epoch(broker_id, epoch_delta, fragment):
    h = Harness()
    h.add_brokers([1])
    result = h.controller.handle_allocate_producer_ids(
        AllocateProducerIdsRequest(broker_id, h.broker_epochs[1] + epoch_delta), 0
    )
    assert result.records == []
    assert result.response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert fragment in result.response.error_message


def setup():
    h = Harness()
    h.add_brokers([1, 2, 3])
    h.create_topic("orders", partitions=1, rf=3)
    t = h.image.topic("orders")
    return h, t.topic_id, t.partitions[0]


def change(
    h,
    broker,
    topic_id,
    reg,
    isr,
    leader_epoch=None,
    partition_epoch=None,
    broker_epoch=None,
    partition=0,
):
    req = AlterPartitionRequest(
        broker,
        h.broker_epochs[broker] if broker_epoch is None else broker_epoch,
        (
            PartitionIsrChange(
                topic_id,
                partition,
                reg.leader_epoch if leader_epoch is None else leader_epoch,
                reg.partition_epoch if partition_epoch is None else partition_epoch,
                tuple(isr),
            ),
        ),
    )
    return h.controller.handle_alter_partition(req, 0)


def test_the_leader_shrinks_and_expands_the_isr():
    h, topic_id, reg = setup()
    follower = next(b for b in reg.replicas if b != reg.leader)
    shrunk = tuple(b for b in reg.isr if b != follower)
    resp = h.commit(change(h, reg.leader, topic_id, reg, shrunk))
    out = resp.partitions[0]
    assert (out.error_code, out.isr, out.partition_epoch, out.leader_epoch) == (0, shrunk, 1, 0)
    now = h.partition("orders")
    assert (now.isr, now.partition_epoch, now.leader_epoch) == (shrunk, 1, 0)
    resp = h.commit(change(h, reg.leader, topic_id, now, reg.isr))
    assert resp.partitions[0].error_code == 0 and h.partition("orders").isr == reg.isr


def test_an_unchanged_isr_writes_nothing():
    h, topic_id, reg = setup()
    result = change(h, reg.leader, topic_id, reg, reg.isr)
    assert result.records == [] and result.response.partitions[0].error_code == 0


def _other(reg):
    return next(b for b in reg.replicas if b != reg.leader)


@pytest.mark.parametrize(
    "case, code, fragment",
    [
        ("stale broker epoch", ErrorCode.STALE_BROKER_EPOCH, "sent broker epoch"),
        ("old leader epoch", ErrorCode.FENCED_LEADER_EPOCH, "leader epoch -1 is not the current 0"),
        (
            "future leader epoch",
            ErrorCode.FENCED_LEADER_EPOCH,
            "leader epoch 1 is not the current 0",
        ),
        (
            "old partition epoch",
            ErrorCode.INVALID_UPDATE_VERSION,
            "partition epoch 5 is not the current 0",
        ),
        ("not the leader", ErrorCode.NOT_LEADER_OR_FOLLOWER, "is not the leader"),
        ("unknown topic id", ErrorCode.UNKNOWN_TOPIC_ID, "no topic has id"),
        ("unknown partition", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "has no partition 4"),
        ("empty isr", ErrorCode.INVALID_REQUEST, "including the leader"),
        ("isr without leader", ErrorCode.INVALID_REQUEST, "including the leader"),
        ("non replica", ErrorCode.INVALID_REQUEST, "are not replicas"),
        ("fenced member", ErrorCode.INELIGIBLE_REPLICA, "cannot join the ISR"),
    ],
)
def test_alter_partition_errors(case, code, fragment):
    h, topic_id, reg = setup()
    leader, other = reg.leader, _other(reg)
    kwargs, isr, broker = {}, reg.isr, leader
    if case == "stale broker epoch":
        kwargs["broker_epoch"] = h.broker_epochs[leader] - 1
    elif case == "old leader epoch":
        kwargs["leader_epoch"] = -1
    elif case == "future leader epoch":
        kwargs["leader_epoch"] = 1
    elif case == "old partition epoch":
        kwargs["partition_epoch"] = 5
    elif case == "not the leader":
        broker = other
    elif case == "unknown topic id":
        topic_id = "f" * 32
    elif case == "unknown partition":
        kwargs["partition"] = 4
    elif case == "empty isr":
        isr = ()
    elif case == "isr without leader":
        isr = (other,)
    elif case == "non replica":
        h.add_brokers([4])
        isr = (leader, 4)
    elif case == "fenced member":
        h.commit(change(h, leader, topic_id, reg, (leader,)))
        reg = h.partition("orders")
        h.heartbeat(other, want_fence=True)
        isr = (leader, other)
    result = change(h, broker, topic_id, reg, isr, **kwargs)
    errors = (
        [result.response.error_code, result.response.error_message]
        if result.response.error_code
        else [result.response.partitions[0].error_code, result.response.partitions[0].error_message]
    )
    assert errors[0] == code and fragment in errors[1], errors
    assert result.records == []


def test_a_member_that_restarted_since_the_leader_saw_it_may_not_join_kip_903():
    h, topic_id, reg = setup()
    follower = _other(reg)
    shrunk = tuple(b for b in reg.isr if b != follower)
    h.commit(change(h, reg.leader, topic_id, reg, shrunk))
    now = h.partition("orders")
    seen_epoch = h.broker_epochs[follower]
    h.register(follower, incarnation="restarted", now_ms=20_000)  # a new process, new epoch
    h.heartbeat(follower, now_ms=20_001)  # caught up, unfenced again
    epochs = tuple(seen_epoch if b == follower else -1 for b in reg.isr)
    stale = h.controller.handle_alter_partition(
        AlterPartitionRequest(
            reg.leader,
            h.broker_epochs[reg.leader],
            (
                PartitionIsrChange(
                    topic_id, 0, now.leader_epoch, now.partition_epoch, reg.isr, epochs
                ),
            ),
        ),
        0,
    )
    assert stale.records == []
    assert stale.response.partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    assert "restarted since the leader saw them" in stale.response.partitions[0].error_message
    current = tuple(h.broker_epochs[follower] if b == follower else -1 for b in reg.isr)
    ok = h.commit(
        h.controller.handle_alter_partition(
            AlterPartitionRequest(
                reg.leader,
                h.broker_epochs[reg.leader],
                (
                    PartitionIsrChange(
                        topic_id, 0, now.leader_epoch, now.partition_epoch, reg.isr, current
                    ),
                ),
            ),
            0,
        )
    )
    assert ok.partitions[0].error_code == 0 and h.partition("orders").isr == reg.isr
