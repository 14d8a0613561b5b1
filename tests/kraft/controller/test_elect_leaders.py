"""ElectLeaders: PREFERRED hands leadership back to the first replica when it is live and in sync;
UNCLEAN gives a leaderless partition a live ISR member, else any live replica with an ISR of one."""

import pytest
from controller_helpers import Harness

from clients.errors import ErrorCode
from kraft.controller.messages import ElectionType, ElectLeadersRequest, ElectLeadersResult
from kraft.controller.result import ControllerResult
from kraft.metadata.records import NO_LEADER, BrokerRegistrationChangeRecord, PartitionChangeRecord

PREFERRED, UNCLEAN = ElectionType.PREFERRED, ElectionType.UNCLEAN
OK = ErrorCode.NONE
NOT_NEEDED = ErrorCode.ELECTION_NOT_NEEDED


def force(h, topic, partition, replicas, isr, leader):
    """Put a partition in any state, bypassing the controller's rules, to test from it."""
    topic_id = h.image.topic(topic).topic_id
    h.commit(
        ControllerResult(
            [
                PartitionChangeRecord(
                    topic_id, partition, isr=tuple(isr), leader=leader, replicas=tuple(replicas)
                )
            ]
        )
    )


def fence(h, *brokers):
    h.commit(
        ControllerResult(
            [BrokerRegistrationChangeRecord(b, h.broker_epochs[b], fenced=True) for b in brokers]
        )
    )


def cluster(replicas, isr, leader, fenced=(), partitions=1):
    h = Harness()
    h.add_brokers([1, 2, 3, 4])
    h.create_topic("orders", partitions=partitions, rf=3)
    for p in range(partitions):
        force(h, "orders", p, replicas, isr, leader)
    fence(h, *fenced)
    return h


def elect(h, election_type, partitions=(("orders", 0),)):
    return h.controller.handle_elect_leaders(ElectLeadersRequest(election_type, partitions), 0)


# replicas, isr, leader, fenced, type, expected code, expected leader, expected isr
CASES = {
    "preferred already leads": ((1, 2, 3), (1, 2, 3), 1, (), PREFERRED, NOT_NEEDED, 1, (1, 2, 3)),
    "preferred in sync takes over": ((1, 2, 3), (1, 2, 3), 2, (), PREFERRED, OK, 1, (1, 2, 3)),
    "preferred takes over a leaderless partition": (
        (1, 2, 3),
        (1,),
        NO_LEADER,
        (),
        PREFERRED,
        OK,
        1,
        (1,),
    ),
    "preferred out of sync": (
        (1, 2, 3),
        (2, 3),
        2,
        (),
        PREFERRED,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        2,
        (2, 3),
    ),
    "preferred fenced": (
        (1, 2, 3),
        (1, 2, 3),
        2,
        (1,),
        PREFERRED,
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        2,
        (1, 2, 3),
    ),
    "unclean with a leader": ((1, 2, 3), (2, 3), 2, (), UNCLEAN, NOT_NEEDED, 2, (2, 3)),
    "unclean picks a live isr member first": (
        (1, 2, 3),
        (1, 3),
        NO_LEADER,
        (1,),
        UNCLEAN,
        OK,
        3,
        (1, 3),
    ),
    "unclean falls back to a live out-of-sync replica": (
        (1, 2, 3),
        (1,),
        NO_LEADER,
        (1,),
        UNCLEAN,
        OK,
        2,
        (2,),
    ),
    "unclean with every replica fenced": (
        (1, 2, 3),
        (1,),
        NO_LEADER,
        (1, 2, 3),
        UNCLEAN,
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        NO_LEADER,
        (1,),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_election_table(case):
    replicas, isr, leader, fenced, election_type, code, new_leader, new_isr = CASES[case]
    h = cluster(replicas, isr, leader, fenced)
    before = h.partition("orders")
    result = elect(h, election_type)
    [answer] = result.response.results
    assert (answer.topic, answer.partition, answer.error_code) == ("orders", 0, code)
    assert bool(answer.error_message) == (code != OK)
    assert (len(result.records) == 1) == (code == OK)
    h.commit(result)
    after = h.partition("orders")
    assert (after.leader, after.isr, after.replicas) == (new_leader, new_isr, before.replicas)
    moved = after.leader != before.leader
    assert after.leader_epoch == before.leader_epoch + moved
    assert after.partition_epoch == before.partition_epoch + (code == OK)


def test_unclean_election_after_the_last_in_sync_replica_is_fenced():
    h = Harness()
    h.add_brokers([1, 2])
    h.create_topic("orders", partitions=1, rf=2)
    leader = h.partition("orders").leader
    follower = 3 - leader
    h.heartbeat(follower, want_fence=True)  # leaves the ISR
    h.heartbeat(follower)  # back, but out of sync
    h.heartbeat(leader, want_fence=True)  # the last ISR member: kept, but cannot lead
    assert (h.partition("orders").leader, h.partition("orders").isr) == (NO_LEADER, (leader,))
    # Whichever replica is preferred, it is fenced or out of sync.
    assert (
        elect(h, PREFERRED).response.results[0].error_code
        == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    )
    answer = h.commit(elect(h, UNCLEAN)).results[0]
    assert answer.error_code == OK
    assert (h.partition("orders").leader, h.partition("orders").isr) == (follower, (follower,))


def test_unknown_topics_and_partitions_do_not_stop_the_others():
    h = cluster((1, 2, 3), (1, 2, 3), 2)
    resp = h.commit(elect(h, PREFERRED, (("nope", 0), ("orders", 7), ("orders", 0))))
    codes = [(r.topic, r.partition, r.error_code) for r in resp.results]
    assert codes == [
        ("nope", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("orders", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("orders", 0, OK),
    ]
    assert "kraft topic create nope" in resp.results[0].error_message
    assert "no partition 7" in resp.results[1].error_message
    assert h.partition("orders").leader == 1


def test_every_partition_reports_only_elections_that_did_or_could_not_happen():
    h = cluster((1, 2, 3), (1, 2, 3), 1, partitions=3)
    force(h, "orders", 1, (1, 2, 3), (1, 2, 3), 3)  # preferred 1 can take over
    force(h, "orders", 2, (4, 2, 3), (2, 3), 2)  # preferred 4 is out of sync
    result = elect(h, PREFERRED, None)
    assert result.response.results == (
        ElectLeadersResult("orders", 1),
        ElectLeadersResult(
            "orders",
            2,
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            result.response.results[1].error_message,
        ),
    )
    assert result.records == [PartitionChangeRecord(h.image.topic("orders").topic_id, 1, leader=1)]


def test_a_partition_named_twice_is_elected_once():
    h = cluster((1, 2, 3), (1, 2, 3), 3)
    result = elect(h, PREFERRED, (("orders", 0), ("orders", 0)))
    assert len(result.records) == 1
    assert result.response.results == (ElectLeadersResult("orders", 0),)


def test_an_unknown_election_type_is_refused_for_the_whole_request():
    h = cluster((1, 2, 3), (1, 2, 3), 3)
    result = elect(h, 7)
    assert result.records == [] and result.response.results == ()
    assert result.response.error_code == ErrorCode.INVALID_REQUEST
    assert "0 (PREFERRED) or 1 (UNCLEAN)" in result.response.error_message


def test_a_standby_replaying_the_records_reaches_the_same_image():
    h = cluster((1, 2, 3), (1, 2, 3), 3)
    standby = Harness()
    standby.controller.replay_batch(h.log, 0, 1)
    result = elect(h, PREFERRED)
    h.commit(result)
    standby.controller.replay_batch(result.records, len(h.log) - len(result.records), 1)
    assert (
        standby.image.partition("orders", 0) == h.partition("orders")
        and h.partition("orders").leader == 1
    )
