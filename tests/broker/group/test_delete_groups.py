"""DeleteGroups: only a group without members goes; its offsets and record become tombstones,
answered once they are committed; a failed append leaves the group as it was."""

from group_harness import Harness

from broker.group.messages import OffsetFetchRequest
from broker.group.records import GroupMetadataKey, OffsetCommitKey, decode_key
from clients.errors import ErrorCode as E
from clients.types import TopicPartition

G = "consumers"
TP0, TP1 = TopicPartition("orders", 0), TopicPartition("orders", 1)


def emptied_group_with_offsets() -> Harness:
    h = Harness()
    (a, b), gen = h.form_group(G, 2)
    h.commit(G, {TP0: 5, TP1: 7}, gen, a)
    h.leave(G, a, b)
    assert h.state(G) == "Empty"
    return h


def test_an_empty_group_is_deleted_with_tombstones_for_its_offsets_and_record():
    h = emptied_group_with_offsets()
    before = len(h.log)
    assert h.answer(h.delete(G)) == E.NONE
    tombstones = h.log[before:]
    assert all(value is None for _, value in tombstones)
    assert [decode_key(k) for k, _ in tombstones] == [
        OffsetCommitKey(G, "orders", 0),
        OffsetCommitKey(G, "orders", 1),
        GroupMetadataKey(G),
    ]
    assert h.state(G) == "Dead" and h.fetch(G).partitions == {}
    assert G not in {g.group_id for g in h.c.list_groups().groups}
    # A failover replays the tombstones: the group stays gone.
    fresh = h.fresh()
    assert fresh.describe_group(G).state == "Dead" and fresh.list_groups().groups == ()


def test_a_group_with_members_is_refused_and_an_unknown_one_not_found():
    h = Harness()
    h.form_group(G, 1)
    before = len(h.log)
    assert h.answer(h.delete(G)) == E.NON_EMPTY_GROUP
    assert h.answer(h.delete("nobody")) == E.GROUP_ID_NOT_FOUND
    assert len(h.log) == before and h.state(G) == "Stable"


def test_a_group_being_deleted_refuses_joins_and_a_failed_delete_leaves_it_empty():
    h = emptied_group_with_offsets()
    h.auto_commit = False
    handle = h.delete(G)
    assert h.answer(handle) is None  # waits for its tombstones
    assert h.answer(h.join(G)).error == E.COORDINATOR_NOT_AVAILABLE
    assert h.answer(h.delete(G)) == E.COORDINATOR_NOT_AVAILABLE
    h.complete_appends(E.NOT_LEADER_OR_FOLLOWER)
    assert h.answer(handle) == E.NOT_COORDINATOR
    assert h.state(G) == "Empty" and h.fetch(G).partitions[TP0].offset == 5


def test_resigning_answers_a_pending_delete_not_coordinator():
    h = emptied_group_with_offsets()
    h.auto_commit = False
    handle = h.delete(G)
    h.run(h.c.resign())
    assert h.answer(handle) == E.NOT_COORDINATOR


def test_deleting_a_group_drops_its_pending_transactional_offsets():
    """Kafka's deleteAllOffsets: a deleted group's offsets held by open transactions go too (a
    tombstone for each, also where no offset was in effect), so a COMMIT marker arriving after
    the deletion brings none of them back, nor does a coordinator loading the log."""
    h = Harness()
    h.commit(G, {TP0: 5})
    h.txn_commit(G, {TP0: 10, TP1: 3}, 7)
    h.txn_commit("other", {TP0: 4}, 7)
    before = len(h.log)
    assert h.answer(h.delete(G)) == E.NONE
    assert [decode_key(k) for k, _ in h.log[before:]] == [
        OffsetCommitKey(G, "orders", 0),
        OffsetCommitKey(G, "orders", 1),
        GroupMetadataKey(G),
    ]
    assert h.c.pending_txn_offsets.partitions_of(G) == set()
    h.marker(7, committed=True)
    assert h.fetch(G, (TP0, TP1)).partitions[TP0].offset == -1
    assert h.fetch(G, (TP0, TP1)).partitions[TP1].offset == -1
    assert h.fetch("other", (TP0,)).partitions[TP0].offset == 4  # another group's stay
    fresh = h.fresh()
    got = fresh.handle_offset_fetch(OffsetFetchRequest(G, (TP0, TP1))).partitions
    assert {tp: f.offset for tp, f in got.items()} == {TP0: -1, TP1: -1}
