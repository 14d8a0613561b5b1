"""OffsetCommit and OffsetFetch: who may commit in which state and generation, answers only after
the record is committed, append failures mapped as Kafka maps them, lag in DescribeGroups."""

import pytest
from group_harness import CONFIG, Harness

from broker.group.messages import OffsetAndMetadata
from clients.errors import ErrorCode as E
from clients.types import TopicPartition

G = "consumers"
TP = TopicPartition("orders", 0)


def committed(h, group=G, tp=TP):
    return h.fetch(group, (tp,)).partitions[tp].offset


def stable():
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    return h, a, b, gen


def test_member_commit_is_fetched_back_with_epoch_and_metadata():
    h, a, b, gen = stable()
    h.commit(G, {TP: OffsetAndMetadata(42, 3, "checkpoint")}, gen, a)
    got = h.fetch(G, (TP, ("orders", 1))).partitions
    assert (got[TP].offset, got[TP].leader_epoch, got[TP].metadata) == (42, 3, "checkpoint")
    assert got[TopicPartition("orders", 1)].offset == -1  # never committed
    assert h.fetch(G).partitions.keys() == {TP}  # None: every partition


COMMITS = [
    # who, generation offset, expected
    ("a", 0, E.NONE),
    ("a", -1, E.ILLEGAL_GENERATION),  # a zombie from the previous generation
    ("a", 1, E.ILLEGAL_GENERATION),
    ("ghost", 0, E.UNKNOWN_MEMBER_ID),
    ("", None, E.UNKNOWN_MEMBER_ID),  # generation -1, no member: only for Empty groups
]


@pytest.mark.parametrize("who, generation, expected", COMMITS)
def test_commit_validation_in_a_stable_group(who, generation, expected):
    h, a, b, gen = stable()
    member = {"a": a}.get(who, who)
    g = -1 if generation is None else gen + generation
    answer = h.answer(h.commit(G, {TP: 7}, g, member))
    assert answer.partitions == {TP: expected}
    assert committed(h) == (7 if expected == E.NONE else -1)


def test_commit_during_preparing_rebalance_is_allowed_with_the_current_generation():
    h, a, b, gen = stable()
    h.join_new(G)
    assert h.answer(h.commit(G, {TP: 9}, gen, a)).partitions == {TP: E.NONE}


def test_commit_during_completing_rebalance_is_rebalance_in_progress():
    h, a, b, gen = stable()
    h.join(G, a)
    h.join(G, b)
    assert h.state(G) == "CompletingRebalance"
    assert h.answer(h.commit(G, {TP: 9}, gen + 1, a)).partitions == {TP: E.REBALANCE_IN_PROGRESS}
    assert h.answer(h.commit(G, {TP: 9}, gen, a)).partitions == {TP: E.ILLEGAL_GENERATION}


def test_commit_outside_group_management():
    h = Harness()
    assert h.answer(h.commit("simple", {TP: 5})).partitions == {TP: E.NONE}
    assert committed(h, "simple") == 5
    assert h.c.describe_group("simple").state == "Empty"
    gen_given = h.answer(h.commit("unknown", {TP: 5}, generation=1, member_id="m"))
    assert gen_given.partitions == {TP: E.ILLEGAL_GENERATION}
    assert h.answer(h.commit("", {TP: 5})).partitions == {TP: E.INVALID_GROUP_ID}


def test_admin_reset_is_allowed_once_the_group_is_empty():
    h, a, b, gen = stable()
    h.leave(G, a, b)
    assert h.state(G) == "Empty"
    assert h.answer(h.commit(G, {TP: 0})).partitions == {TP: E.NONE}


def test_oversized_metadata_is_refused_per_partition():
    h, a, b, gen = stable()
    big = "x" * (CONFIG.offset_metadata_max_bytes + 1)
    other = TopicPartition("orders", 1)
    answer = h.answer(h.commit(G, {TP: OffsetAndMetadata(1, -1, big), other: 2}, gen, a))
    assert answer.partitions == {TP: E.OFFSET_METADATA_TOO_LARGE, other: E.NONE}
    assert committed(h) == -1 and committed(h, tp=other) == 2


def test_commit_is_answered_and_visible_only_once_its_record_is_committed():
    h, a, b, gen = stable()
    h.auto_commit = False
    c = h.commit(G, {TP: 11}, gen, a)
    assert h.answer(c) is None and committed(h) == -1
    h.complete_appends()
    assert h.answer(c).partitions == {TP: E.NONE} and committed(h) == 11


@pytest.mark.parametrize(
    "append_error, told",
    [
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
        (E.REQUEST_TIMED_OUT, E.REQUEST_TIMED_OUT),
    ],
)
def test_failed_append_is_mapped_and_changes_nothing(append_error, told):
    h, a, b, gen = stable()
    h.auto_commit = False
    c = h.commit(G, {TP: 11}, gen, a)
    h.complete_appends(append_error)
    assert h.answer(c).partitions == {TP: told} and committed(h) == -1


def test_failed_assignment_append_starts_another_rebalance():
    h, a, b, gen = stable()
    h.join(G, a)
    h.join(G, b)
    h.auto_commit = False
    follower = h.sync(G, b, gen + 1)
    leader = h.sync(G, a, gen + 1, {a: b"x", b: b"y"})
    h.complete_appends(E.NOT_ENOUGH_REPLICAS)
    assert h.answer(leader).error == h.answer(follower).error == E.COORDINATOR_NOT_AVAILABLE
    assert h.state(G) == "PreparingRebalance"


def test_describe_shows_committed_offsets_and_lag():
    h, a, b, gen = stable()
    other = TopicPartition("orders", 1)
    h.commit(G, {TP: 40, other: 7}, gen, a)
    desc = h.c.describe_group(G, end_offsets={TP: 100})
    assert [(o.partition, o.offset, o.lag) for o in desc.offsets] == [
        (TP, 40, 60),
        (other, 7, None),
    ]


def test_later_commit_wins():
    h, a, b, gen = stable()
    h.auto_commit = False
    h.commit(G, {TP: 1}, gen, a)
    h.commit(G, {TP: 2}, gen, b)
    h.complete_appends()
    assert committed(h) == 2
