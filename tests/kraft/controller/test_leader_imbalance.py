"""Automatic preferred-leader balancing, Kafka's rule: a broker led elsewhere on more than
leader.imbalance.per.broker.percentage of the partitions it prefers gets those back, where it is
live and in sync; the ElectLeaders(PREFERRED) made of them moves exactly those."""

import pytest
from controller_helpers import Harness

from kraft.controller.messages import ElectionType, ElectLeadersRequest
from kraft.controller.replication_control import imbalanced_partitions
from kraft.controller.result import ControllerResult
from kraft.metadata.records import NO_LEADER, BrokerRegistrationChangeRecord, PartitionChangeRecord

BALANCED = ((1, 2, 3), (1, 2, 3), 1)  # replicas, isr, leader: the preferred replica leads


def cluster(states, fenced=()):
    """A topic 'orders' with one partition per (replicas, isr, leader), brokers 1-4."""
    h = Harness()
    h.add_brokers([1, 2, 3, 4])
    h.create_topic("orders", partitions=len(states), rf=3)
    topic_id = h.image.topic("orders").topic_id
    h.commit(
        ControllerResult(
            [
                PartitionChangeRecord(
                    topic_id, p, isr=tuple(isr), leader=leader, replicas=tuple(replicas)
                )
                for p, (replicas, isr, leader) in enumerate(states)
            ]
        )
    )
    h.commit(
        ControllerResult(
            [BrokerRegistrationChangeRecord(b, h.broker_epochs[b], fenced=True) for b in fenced]
        )
    )
    return h


# partition states, fenced brokers, percentage, partitions expected back with their preferred
CASES = {
    "balanced": ([BALANCED] * 3, (), 10, []),
    "one of one led elsewhere": ([((1, 2, 3), (1, 2, 3), 2)], (), 10, [0]),
    "1 of 10 at 10% is not over the threshold": (
        [((1, 2, 3), (1, 2, 3), 2)] + [BALANCED] * 9,
        (),
        10,
        [],
    ),
    "1 of 10 at 9% is": ([((1, 2, 3), (1, 2, 3), 2)] + [BALANCED] * 9, (), 9, [0]),
    "the ratio is per preferred broker, not cluster-wide": (
        [((1, 2, 3), (1, 2, 3), 2)] + [((2, 3, 4), (2, 3, 4), 2)] * 19,
        (),
        10,
        [0],
    ),
    "only partitions whose preferred replica is in sync": (
        [((1, 2, 3), (1, 2, 3), 2), ((1, 2, 3), (2, 3), 2), BALANCED, BALANCED],
        (),
        10,
        [0],
    ),
    "a fenced preferred replica is left alone": ([((1, 2, 3), (1, 2, 3), 2)], (1,), 10, []),
    "a leaderless partition counts as led elsewhere": ([((1, 2, 3), (1,), NO_LEADER)], (), 10, [0]),
    "100% never rebalances": ([((1, 2, 3), (1, 2, 3), 2)], (), 100, []),
    "0% moves any partition led elsewhere": (
        [((1, 2, 3), (1, 2, 3), 2)] + [BALANCED] * 30,
        (),
        0,
        [0],
    ),
    "several brokers at once, in partition order": (
        [((2, 3, 4), (2, 3, 4), 3), ((1, 2, 3), (1, 2, 3), 3), ((3, 4, 1), (3, 4, 1), 3)],
        (),
        10,
        [0, 1],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_imbalanced_partitions(name):
    states, fenced, percentage, expected = CASES[name]
    h = cluster(states, fenced)
    assert imbalanced_partitions(h.image, percentage) == [("orders", p) for p in expected]


def test_a_preferred_election_of_them_restores_balance():
    h = cluster([((1, 2, 3), (1, 2, 3), 2), ((2, 3, 1), (2, 3, 1), 3), ((3, 1, 2), (1, 2), 1)])
    wanted = imbalanced_partitions(h.image, 10)
    assert wanted == [("orders", 0), ("orders", 1)]  # replica 3 is out of sync on partition 2
    response = h.commit(
        h.controller.handle_elect_leaders(
            ElectLeadersRequest(ElectionType.PREFERRED, tuple(wanted)), 0
        )
    )
    assert [r.error_code for r in response.results] == [0, 0]
    assert [h.partition("orders", p).leader for p in range(3)] == [1, 2, 1]
    assert imbalanced_partitions(h.image, 10) == []
