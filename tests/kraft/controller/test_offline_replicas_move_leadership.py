"""A broker's heartbeat lists its offline replicas (failed log dir, damaged files): the controller
drops it from those ISRs and moves their leadership away, as for a fenced broker but only for
those partitions; they stay out of ISRs and leadership until the broker registers again."""

from controller_helpers import Harness

from kraft.controller.messages import AlterPartitionRequest, PartitionIsrChange
from kraft.metadata.snapshot import image_to_records, records_to_image


def cluster():
    h = Harness()
    h.add_brokers([1, 2, 3])
    return h


def _led_by(h, topic, broker):
    return [
        p
        for p in range(len(h.image.topic(topic).partitions))
        if h.partition(topic, p).leader == broker
    ]


def test_offline_replicas_leave_isr_and_leadership_only_for_those_partitions():
    h = cluster()
    h.create_topic("orders", partitions=6, rf=3)
    topic_id = h.image.topic("orders").topic_id
    led = _led_by(h, "orders", 2)
    assert led
    offline = tuple((topic_id, p) for p in led)
    resp = h.heartbeat(2, offline_replicas=offline)
    assert resp.error_code == 0 and resp.is_fenced is False
    for p in range(6):
        reg = h.partition("orders", p)
        if p in led:
            assert reg.leader not in (2, -1) and 2 not in reg.isr
        else:
            assert 2 in reg.isr  # the broker's other replicas are untouched
    assert h.image.broker(2).offline_replicas == frozenset(offline)
    # The same report again changes nothing.
    before = len(h.log)
    h.heartbeat(2, offline_replicas=offline)
    assert len(h.log) == before


def test_a_sole_replica_that_goes_offline_leaves_the_partition_leaderless():
    h = cluster()
    h.create_topic("single", partitions=1, rf=1)
    reg = h.partition("single")
    topic_id = h.image.topic("single").topic_id
    h.heartbeat(reg.leader, offline_replicas=((topic_id, 0),))
    after = h.partition("single")
    assert after.leader == -1 and after.isr == reg.isr  # the ISR never empties


def test_an_offline_replica_cannot_lead_or_rejoin_the_isr_until_it_registers_again():
    h = cluster()
    h.create_topic("orders", partitions=1, rf=3)
    topic_id = h.image.topic("orders").topic_id
    reg = h.partition("orders")
    victim = [b for b in reg.replicas if b != reg.leader][0]
    h.heartbeat(victim, offline_replicas=((topic_id, 0),))
    reg = h.partition("orders")
    assert victim not in reg.isr
    change = PartitionIsrChange(
        topic_id, 0, reg.leader_epoch, reg.partition_epoch, reg.isr + (victim,)
    )
    refused = h.call(
        "handle_alter_partition",
        AlterPartitionRequest(reg.leader, h.broker_epochs[reg.leader], (change,)),
    )
    assert refused.partitions[0].error_code != 0
    assert "offline" in refused.partitions[0].error_message
    # Fence the others: the offline replica is not elected even though it is live.
    for b in reg.replicas:
        if b != victim:
            h.heartbeat(b, want_fence=True)
    assert h.partition("orders").leader == -1
    # A restart (new registration) brings the replica back.
    assert h.register(victim, now_ms=10**9).error_code == 0
    assert h.image.broker(victim).offline_replicas == frozenset()


def test_offline_replicas_survive_a_snapshot():
    h = cluster()
    h.create_topic("orders", partitions=2, rf=3)
    topic_id = h.image.topic("orders").topic_id
    h.heartbeat(3, offline_replicas=((topic_id, 1),))
    image = records_to_image(image_to_records(h.image), h.image.offset, 1)
    assert image.broker(3).offline_replicas == frozenset({(topic_id, 1)})
