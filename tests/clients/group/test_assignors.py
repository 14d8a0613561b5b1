"""Range, round-robin and sticky assignors: every subscribed partition assigned exactly once and
only to a subscriber, balance, stickiness for sticky, determinism; plus Kafka's worked examples."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clients.group.assignors import (
    ASSIGNORS,
    assign,
    range_assign,
    round_robin_assign,
    sticky_assign,
)
from clients.group.protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from clients.types import TopicPartition as TP

TOPICS = ("t0", "t1", "t2", "t3")


def subs(**members):
    return {m: Subscription(tuple(topics)) for m, topics in members.items()}


@st.composite
def groups(draw, equal=False):
    topics = {
        t: draw(st.integers(0, 12)) for t in draw(st.sets(st.sampled_from(TOPICS), min_size=1))
    }
    members = draw(
        st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=1, max_size=8, unique=True)
    )
    everyone = tuple(draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
    return topics, {
        m: Subscription(
            everyone if equal else tuple(draw(st.sets(st.sampled_from(TOPICS), min_size=1)))
        )
        for m in members
    }


def check_valid(topics, subscriptions, result):
    assert set(result) == set(subscriptions)
    given_out = [tp for tps in result.values() for tp in tps]
    assert len(given_out) == len(set(given_out))  # at most once
    wanted = {
        TP(t, p)
        for s in subscriptions.values()
        for t in s.topics
        if t in topics
        for p in range(topics[t])
    }
    assert set(given_out) == wanted  # at least once
    for m, tps in result.items():
        assert all(tp.topic in subscriptions[m].topics for tp in tps)  # only to subscribers


def check_balanced(subscriptions, result):
    """Kafka's isBalanced: nobody holds 2+ more than a member that could take one of its."""
    for a, mine in result.items():
        for b, theirs in result.items():
            if len(mine) >= len(theirs) + 2:
                assert not any(tp.topic in subscriptions[b].topics for tp in mine), (a, b)


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups())
def test_every_partition_exactly_once_to_a_subscriber(name, group):
    topics, subscriptions = group
    check_valid(topics, subscriptions, assign(name, topics, subscriptions))


@pytest.mark.parametrize("name", ["roundrobin", "sticky"])
@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups(equal=True))
def test_equal_subscriptions_are_balanced_within_one(name, group):
    topics, subscriptions = group
    counts = [len(tps) for tps in assign(name, topics, subscriptions).values()]
    assert max(counts) - min(counts) <= 1


@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups(equal=True))
def test_range_is_balanced_within_one_per_topic(group):
    topics, subscriptions = group
    for topic in topics:
        counts = [
            sum(tp.topic == topic for tp in tps)
            for tps in range_assign(topics, subscriptions).values()
        ]
        assert max(counts) - min(counts) <= 1


@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups())
def test_sticky_is_balanced_with_any_subscriptions(group):
    topics, subscriptions = group
    check_balanced(subscriptions, sticky_assign(topics, subscriptions))


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups(), seed=st.integers(0, 2**32))
def test_result_does_not_depend_on_input_order(name, group, seed):
    topics, subscriptions = group
    rng = random.Random(seed)
    shuffled_members = list(subscriptions.items())
    rng.shuffle(shuffled_members)
    shuffled_topics = list(topics.items())
    rng.shuffle(shuffled_topics)
    assert assign(name, dict(shuffled_topics), dict(shuffled_members)) == assign(
        name, topics, subscriptions
    )


@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups())
def test_sticky_run_again_on_its_own_result_changes_nothing(group):
    topics, subscriptions = group
    first = sticky_assign(topics, subscriptions)
    again = {m: Subscription(s.topics, tuple(first[m]), 3) for m, s in subscriptions.items()}
    assert sticky_assign(topics, again) == first


@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups(equal=True), leaving=st.data())
def test_sticky_member_leaving_moves_only_its_partitions(group, leaving):
    topics, subscriptions = group
    before = sticky_assign(topics, subscriptions)
    gone = leaving.draw(st.sampled_from(sorted(before)))
    rest = {
        m: Subscription(s.topics, tuple(before[m]), 1)
        for m, s in subscriptions.items()
        if m != gone
    }
    if not rest:
        return
    after = sticky_assign(topics, rest)
    for m in rest:
        assert set(before[m]) <= set(after[m])  # the others keep everything they had


@pytest.mark.slow  # 100 examples
@settings(max_examples=100, deadline=None)
@given(group=groups(equal=True))
def test_sticky_member_joining_takes_no_more_than_balance_needs(group):
    topics, subscriptions = group
    before = sticky_assign(topics, subscriptions)
    everyone = next(iter(subscriptions.values())).topics
    grown = {m: Subscription(everyone, tuple(before[m]), 1) for m in subscriptions}
    grown["zz-new"] = Subscription(everyone)
    after = sticky_assign(topics, grown)
    total = sum(len(v) for v in before.values())
    low, high = divmod(total, len(grown))[0], -(-total // len(grown))
    for m in subscriptions:
        kept = len(set(before[m]) & set(after[m]))
        assert kept >= min(len(before[m]), low)  # nobody loses more than it must
        assert len(after[m]) <= high
    moved = sum(len(before[m]) - len(set(before[m]) & set(after[m])) for m in subscriptions)
    assert moved == len(after["zz-new"])  # only what the newcomer needed moved


def test_sticky_drops_stale_and_contested_ownership():
    topics = {"t0": 4}
    subscriptions = {
        "a": Subscription(("t0",), (TP("t0", 0), TP("t0", 1)), generation=5),
        "b": Subscription(("t0",), (TP("t0", 1), TP("t0", 2)), generation=5),
        "c": Subscription(("t0",), (TP("t0", 3), TP("t0", 0)), generation=4),  # stale
    }
    result = sticky_assign(topics, subscriptions)
    assert TP("t0", 0) in result["a"] and TP("t0", 2) in result["b"]
    check_valid(topics, subscriptions, result)


# Kafka's documented examples (RangeAssignor / RoundRobinAssignor javadoc).
def test_range_kafka_example():
    result = range_assign({"t0": 3, "t1": 3}, subs(C0=("t0", "t1"), C1=("t0", "t1")))
    assert result == {
        "C0": [TP("t0", 0), TP("t0", 1), TP("t1", 0), TP("t1", 1)],
        "C1": [TP("t0", 2), TP("t1", 2)],
    }


def test_round_robin_kafka_example():
    result = round_robin_assign(
        {"t0": 1, "t1": 2, "t2": 3}, subs(C0=("t0",), C1=("t0", "t1"), C2=("t0", "t1", "t2"))
    )
    assert result == {
        "C0": [TP("t0", 0)],
        "C1": [TP("t1", 0)],
        "C2": [TP("t1", 1), TP("t2", 0), TP("t2", 1), TP("t2", 2)],
    }


def test_static_members_are_ordered_by_instance_id_so_a_restart_keeps_its_range():
    first = {
        "m-9": Subscription(("t0",), group_instance_id="i-1"),
        "m-1": Subscription(("t0",), group_instance_id="i-2"),
    }
    restarted = {
        "m-0": Subscription(("t0",), group_instance_id="i-1"),
        "m-1": Subscription(("t0",), group_instance_id="i-2"),
    }
    assert range_assign({"t0": 4}, first)["m-9"] == range_assign({"t0": 4}, restarted)["m-0"]


def test_unknown_assignor_name_says_which_exist():
    with pytest.raises(ValueError, match="range, roundrobin, sticky"):
        assign("cooperative", {}, {})


def test_consumer_protocol_round_trip():
    sub = Subscription(("a", "b"), (TP("a", 1), TP("b", 0)), 7, b"ud")
    assert decode_subscription(encode_subscription(sub)) == sub
    asg = Assignment((TP("a", 0), TP("a", 2)), b"x")
    assert decode_assignment(encode_assignment(asg)) == asg
    assert decode_assignment(b"") == Assignment()
