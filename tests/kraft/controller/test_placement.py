"""Replica placement spreads leaders evenly over brokers, never puts two replicas of a
partition on one broker, and uses distinct racks for a partition when there are enough."""

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraft.controller.placement import PlacementError, UsableBroker, place_replicas, rack_alternated


def brokers(n, racks=None):
    return [UsableBroker(i, racks[i % len(racks)] if racks else None) for i in range(n)]


@pytest.mark.parametrize("n, partitions", [(3, 3), (3, 12), (5, 10), (4, 7)])
def test_leaders_spread_evenly(n, partitions):
    leaders = Counter(rs[0] for rs in place_replicas(brokers(n), partitions, 2, start_index=1))
    assert max(leaders.values()) - min(leaders.values(), default=0) <= 1
    assert len(leaders) == min(n, partitions)


def test_followers_also_spread():
    counts = Counter(b for rs in place_replicas(brokers(4), 8, 3, start_index=0) for b in rs)
    assert set(counts.values()) == {6}


def test_the_start_index_moves_partition_zero():
    first = {place_replicas(brokers(3), 1, 1, start_index=s)[0][0] for s in range(3)}
    assert first == {0, 1, 2}


def test_added_partitions_continue_the_round_robin():
    whole = place_replicas(brokers(3), 6, 2, start_index=2)
    assert place_replicas(brokers(3), 3, 2, start_index=2, first_partition=3) == whole[3:]


def test_replicas_of_a_partition_sit_on_distinct_racks():
    racks = ["a", "a", "b", "b", "c", "c"]
    placed = place_replicas([UsableBroker(i, racks[i]) for i in range(6)], 12, 3, start_index=0)
    for replicas in placed:
        assert len({racks[b] for b in replicas}) == 3, replicas


def test_with_fewer_racks_than_replicas_every_rack_is_used_first():
    racks = {0: "a", 1: "a", 2: "a", 3: "b"}
    placed = place_replicas([UsableBroker(b, r) for b, r in racks.items()], 8, 3, start_index=0)
    for replicas in placed:
        assert {racks[b] for b in replicas} == {"a", "b"}


def test_rack_alternated_order_interleaves_racks():
    order = rack_alternated(
        [UsableBroker(1, "x"), UsableBroker(2, "x"), UsableBroker(3, "y"), UsableBroker(4, "y")]
    )
    assert [b.broker_id for b in order] == [1, 3, 2, 4]


@pytest.mark.parametrize(
    "n, rf, message",
    [
        (2, 3, "replication factor 3 is larger than the 2 available brokers"),
        (1, 2, "replication factor 2 is larger than the 1 available broker"),
        (3, 0, "replication factor 0 must be at least 1"),
    ],
)
def test_impossible_placements_say_why(n, rf, message):
    with pytest.raises(PlacementError) as info:
        place_replicas(brokers(n), 1, rf)
    assert str(info.value) == message


@given(
    n=st.integers(1, 8),
    rf=st.integers(1, 8),
    partitions=st.integers(1, 30),
    start=st.integers(0, 100),
    racks=st.sampled_from([None, ["a"], ["a", "b"], ["a", "b", "c"]]),
)
def test_every_placement_is_valid(n, rf, partitions, start, racks):
    if rf > n:
        return
    pool = brokers(n, racks)
    placed = place_replicas(pool, partitions, rf, start)
    assert len(placed) == partitions
    rack_count = len({b.rack for b in pool})
    for replicas in placed:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert len({pool[b].rack for b in replicas}) == min(rf, rack_count)
