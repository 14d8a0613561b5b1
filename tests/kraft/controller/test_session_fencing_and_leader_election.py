"""A broker silent for broker.session.timeout.ms is fenced: it leaves every ISR, its partitions
get the first live ISR replica as leader, and only topics with unclean.leader.election.enable
may elect an out-of-sync replica. The last ISR member is kept so it can lead again."""

from controller_helpers import Harness

from kraft.controller.controller_config import ControllerConfig
from kraft.controller.messages import (
    AlterConfigOp,
    AlterConfigOpType,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kraft.metadata.records import PartitionChangeRecord

TIMEOUT = 9000


def cluster(n=3, **config):
    h = Harness(ControllerConfig(broker_session_timeout_ms=TIMEOUT, **config))
    h.add_brokers(range(1, n + 1), now_ms=0)
    return h


def keep_alive(h, brokers, now_ms):
    for b in brokers:
        h.heartbeat(b, now_ms=now_ms)


def fence(h, now_ms):
    return h.commit(h.controller.maybe_fence_stale_brokers(now_ms))


def test_nobody_is_fenced_before_the_session_ends():
    h = cluster()
    assert fence(h, TIMEOUT - 1) == ()
    assert len(h.image.live_brokers()) == 3


def test_a_silent_broker_is_fenced_and_leaves_the_isr():
    h = cluster()
    h.create_topic("orders", partitions=3, rf=3)
    keep_alive(h, [1, 2], 5000)
    assert fence(h, TIMEOUT) == (3,)
    assert h.image.broker(3).fenced and not h.image.broker(1).fenced
    for p in range(3):
        reg = h.partition("orders", p)
        assert 3 not in reg.isr and reg.leader != 3 and reg.leader in reg.isr


def test_the_new_leader_is_the_first_live_isr_replica():
    h = cluster()
    h.create_topic("orders", partitions=3, rf=3)
    keep_alive(h, [1, 2], 5000)
    led_by_3 = [tp for tp in h.image.partitions_led_by(3)]
    fence(h, TIMEOUT)
    for tp in led_by_3:
        reg = h.partition("orders", tp.partition)
        expected = next(b for b in tp.registration.replicas if b != 3)
        assert reg.leader == expected
        assert reg.leader_epoch == tp.registration.leader_epoch + 1


def test_fencing_moves_leadership_off_every_stale_broker_at_once():
    h = cluster()
    h.create_topic("orders", partitions=3, rf=3)
    keep_alive(h, [1], 5000)
    assert fence(h, TIMEOUT) == (2, 3)
    for p in range(3):
        reg = h.partition("orders", p)
        assert (reg.leader, reg.isr) == (1, (1,))


def test_the_next_deadline_is_the_oldest_live_session():
    h = cluster()
    keep_alive(h, [1, 2], 4000)
    assert h.controller.next_deadline_ms() == TIMEOUT
    keep_alive(h, [3], 4500)
    assert h.controller.next_deadline_ms() == 4000 + TIMEOUT


def test_the_last_isr_member_stays_and_leads_again_when_it_returns():
    h = cluster(n=2)
    h.create_topic("solo", partitions=1, rf=1)
    owner = h.partition("solo").leader
    other = 3 - owner
    keep_alive(h, [other], 5000)
    fence(h, TIMEOUT)
    reg = h.partition("solo")
    assert (reg.leader, reg.isr) == (-1, (owner,))
    resp = h.heartbeat(owner, now_ms=TIMEOUT + 1)
    assert not resp.is_fenced
    reg = h.partition("solo")
    assert (reg.leader, reg.isr) == (owner, (owner,))


def test_without_unclean_election_a_partition_waits_for_its_isr():
    h = cluster(n=2)
    h.create_topic("orders", partitions=1, rf=2)
    leader = h.partition("orders").leader
    follower = 3 - leader
    # The follower fell behind: the leader dropped it from the ISR.
    h.commit(h.controller.handle_alter_partition(_shrink(h, "orders", leader), 1000))
    keep_alive(h, [follower], 5000)
    fence(h, TIMEOUT)
    reg = h.partition("orders")
    assert (reg.leader, reg.isr) == (-1, (leader,))


def test_unclean_election_picks_a_live_out_of_sync_replica_when_configured():
    h = cluster(n=2)
    h.create_topic("orders", partitions=1, rf=2, configs={"unclean.leader.election.enable": "true"})
    leader = h.partition("orders").leader
    follower = 3 - leader
    h.commit(h.controller.handle_alter_partition(_shrink(h, "orders", leader), 1000))
    keep_alive(h, [follower], 5000)
    fence(h, TIMEOUT)
    reg = h.partition("orders")
    assert (reg.leader, reg.isr) == (follower, (follower,))


def test_turning_unclean_election_on_revives_a_leaderless_partition():
    h = cluster(n=2)
    h.create_topic("orders", partitions=1, rf=2)
    leader = h.partition("orders").leader
    follower = 3 - leader
    h.commit(h.controller.handle_alter_partition(_shrink(h, "orders", leader), 1000))
    keep_alive(h, [follower], 5000)
    fence(h, TIMEOUT)
    assert h.partition("orders").leader == -1
    h.call(
        "handle_incremental_alter_configs",
        IncrementalAlterConfigsRequest(
            (
                AlterConfigsResource(
                    "topic",
                    "orders",
                    (
                        AlterConfigOp(
                            "unclean.leader.election.enable", AlterConfigOpType.SET, "true"
                        ),
                    ),
                ),
            )
        ),
    )
    reg = h.partition("orders")
    assert (reg.leader, reg.isr) == (follower, (follower,))


def test_an_out_of_sync_replica_coming_back_leads_only_with_unclean_election():
    for unclean, expected in (("false", -1), ("true", "follower")):
        h = cluster(n=2)
        h.create_topic(
            "orders", partitions=1, rf=2, configs={"unclean.leader.election.enable": unclean}
        )
        leader = h.partition("orders").leader
        follower = 3 - leader
        h.commit(h.controller.handle_alter_partition(_shrink(h, "orders", leader), 1000))
        h.heartbeat(follower, want_fence=True, now_ms=2000)
        fence(h, TIMEOUT)  # both silent: the leader is fenced, the follower already was
        assert h.partition("orders").leader == -1
        h.heartbeat(follower, now_ms=TIMEOUT + 1)
        assert h.partition("orders").leader == (follower if expected == "follower" else -1)


def test_broker_unfencing_alone_does_not_change_led_partitions():
    h = cluster()
    h.create_topic("orders", partitions=3, rf=3)
    before = {p: h.partition("orders", p) for p in range(3)}
    h.heartbeat(1, want_fence=True)
    n = len(h.log)
    h.heartbeat(1)
    changes = [r for r in h.log[n:] if isinstance(r, PartitionChangeRecord)]
    assert (
        changes == []
    )  # partitions with a leader keep it; broker 1 rejoins the ISR via its leaders
    assert all(h.partition("orders", p).leader != -1 for p in before)


def _shrink(h, topic, leader):
    from kraft.controller.messages import AlterPartitionRequest, PartitionIsrChange

    t = h.image.topic(topic)
    reg = t.partitions[0]
    return AlterPartitionRequest(
        leader,
        h.broker_epochs[leader],
        (PartitionIsrChange(t.topic_id, 0, reg.leader_epoch, reg.partition_epoch, (leader,)),),
    )
