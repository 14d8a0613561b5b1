"""Replaying records through a MetadataDelta builds the next image, leaves the old image as it
was, bumps partition and leader epochs by the rules, and answers the brokers' queries."""

import pytest

from kraft.metadata import records as r
from kraft.metadata.delta import MetadataDelta, MetadataReplayError, replay_all
from kraft.metadata.image import EMPTY_IMAGE, TOPIC_RESOURCE

T = "a" * 32


def cluster(*extra):
    return replay_all(
        EMPTY_IMAGE,
        [
            r.RegisterBrokerRecord(1, "i1", 10, "h1", 9092, "r1", fenced=False),
            r.RegisterBrokerRecord(2, "i2", 11, "h2", 9092, "r2", fenced=False),
            r.RegisterBrokerRecord(3, "i3", 12, "h3", 9092, None, fenced=True),
            r.TopicRecord("orders", T),
            r.PartitionRecord(T, 0, (1, 2), (1, 2), 1),
            r.PartitionRecord(T, 1, (2, 3), (2,), 2),
            *extra,
        ],
        last_offset=20,
        epoch=2,
    )


def test_replay_builds_brokers_topics_and_partitions():
    image = cluster()
    assert (image.offset, image.epoch) == (20, 2)
    assert [b.broker_id for b in image.live_brokers()] == [1, 2]
    assert image.topic("orders").topic_id == T and image.topic_by_id(T).name == "orders"
    assert image.partition("orders", 1).isr == (2,)
    assert image.topic("nope") is None and image.partition("orders", 9) is None


def test_queries_find_partitions_by_leader_and_by_replica():
    image = cluster()
    assert [(tp.topic, tp.partition) for tp in image.partitions_led_by(2)] == [("orders", 1)]
    assert [tp.partition for tp in image.partitions_replicated_on(2)] == [0, 1]
    assert [tp.partition for tp in image.partitions_replicated_on(3)] == [1]
    assert [tp.partition for tp in image.partitions_in_isr_of(3)] == []
    assert image.partitions_led_by(3) == []


def test_an_isr_change_bumps_the_partition_epoch_only():
    p = cluster(r.PartitionChangeRecord(T, 0, isr=(1,))).partition("orders", 0)
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)


def test_a_leader_change_bumps_both_epochs():
    p = cluster(r.PartitionChangeRecord(T, 0, isr=(2,), leader=2)).partition("orders", 0)
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((2,), 2, 1, 1)


def test_a_replica_change_keeps_the_leader():
    p = cluster(r.PartitionChangeRecord(T, 0, replicas=(1, 2, 3))).partition("orders", 0)
    assert (p.replicas, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2, 3), 1, 0, 1)


def test_the_old_image_does_not_change_when_the_delta_applies():
    before = cluster()
    delta = MetadataDelta(before)
    delta.replay(r.PartitionChangeRecord(T, 0, leader=2), offset=21)
    delta.replay(r.BrokerRegistrationChangeRecord(1, 10, fenced=True))
    after = delta.apply()
    assert before.partition("orders", 0).leader == 1 and not before.broker(1).fenced
    assert after.partition("orders", 0).leader == 2 and after.broker(1).fenced
    assert after.offset == 21 and before.offset == 20
    with pytest.raises(TypeError):
        before.brokers[9] = None


def test_apply_can_be_called_again_as_records_keep_coming():
    delta = MetadataDelta(cluster())
    delta.replay(r.PartitionChangeRecord(T, 0, isr=(1,)))
    first = delta.apply()
    delta.replay(r.PartitionChangeRecord(T, 0, isr=(1, 2)))
    second = delta.apply()
    assert first.partition("orders", 0).isr == (1,)
    assert second.partition("orders", 0).partition_epoch == 2


def test_removing_a_topic_drops_its_partitions_and_configs():
    image = cluster(
        r.ConfigRecord(TOPIC_RESOURCE, "orders", "retention.ms", "5"), r.RemoveTopicRecord(T)
    )
    assert image.topic("orders") is None and image.topic_by_id(T) is None
    assert dict(image.topic_configs("orders")) == {}
    assert image.partitions_replicated_on(1) == []
    again = replay_all(image, [r.TopicRecord("orders", "b" * 32)])
    assert again.topic("orders").topic_id == "b" * 32


def test_configs_are_set_and_deleted():
    image = cluster(
        r.ConfigRecord(TOPIC_RESOURCE, "orders", "retention.ms", "5"),
        r.ConfigRecord(TOPIC_RESOURCE, "orders", "cleanup.policy", "compact"),
        r.ConfigRecord(TOPIC_RESOURCE, "orders", "retention.ms", None),
    )
    assert dict(image.topic_configs("orders")) == {"cleanup.policy": "compact"}


def test_producer_ids_move_forward_only():
    image = cluster(r.ProducerIdsRecord(1, 10, 1000))
    assert image.next_producer_id == 1000
    with pytest.raises(MetadataReplayError, match="handed out twice"):
        replay_all(image, [r.ProducerIdsRecord(2, 11, 500)])


def test_unregistering_removes_the_broker():
    image = cluster(r.UnregisterBrokerRecord(3, 12))
    assert image.broker(3) is None


def test_leader_change_and_noop_only_move_the_offset():
    before = cluster()
    after = replay_all(
        before, [r.NoOpRecord(), r.LeaderChangeRecord(1, 3, (1, 2, 3))], last_offset=22, epoch=3
    )
    assert after.offset == 22 and after.epoch == 3
    assert after == replay_all(before, [], last_offset=22, epoch=3)


@pytest.mark.parametrize(
    "record, fragment",
    [
        (r.PartitionRecord("f" * 32, 0, (1,), (1,), 1), "unknown topic id"),
        (r.PartitionChangeRecord(T, 7, isr=(1,)), "has no partition 7"),
        (r.TopicRecord("orders", "c" * 32), "topic 'orders' already exists"),
        (r.TopicRecord("other", T), "already exists"),
        (r.RemoveTopicRecord("f" * 32), "unknown topic id"),
        (r.BrokerRegistrationChangeRecord(1, 9, fenced=True), "broker 1 epoch 9 is not registered"),
        (r.UnregisterBrokerRecord(8, 1), "broker 8 epoch 1 is not registered"),
    ],
)
def test_records_that_do_not_fit_the_image_are_refused(record, fragment):
    with pytest.raises(MetadataReplayError) as info:
        replay_all(cluster(), [record])
    assert fragment in str(info.value)
