"""TxnOffsetCommit in the group coordinator's core: offsets written in a transactional batch stay
out of OffsetFetch until the transaction's COMMIT marker, vanish on ABORT, are checked against
the member and generation like OffsetCommit, and a coordinator loading the log ends up the same."""

import pytest
from group_harness import Harness

from clients.errors import ErrorCode as E
from clients.types import TopicPartition

G = "consumers"
TP = TopicPartition("orders", 0)
TP1 = TopicPartition("orders", 1)
PID, OTHER = 7, 8


def committed(h, tp=TP, group=G):
    return h.fetch(group, (tp,)).partitions[tp].offset


def test_offsets_are_pending_until_the_commit_marker():
    h = Harness()
    h.commit(G, {TP: 5})
    answer = h.answer(h.txn_commit(G, {TP: 10, TP1: 3}, PID))
    assert dict(answer.partitions) == {TP: E.NONE, TP1: E.NONE}
    assert h.pending == [] and h.producer_of  # written as the producer's batch
    assert (committed(h), committed(h, TP1)) == (5, -1)  # only applied offsets are shown
    h.marker(PID, committed=True)
    assert (committed(h), committed(h, TP1)) == (10, 3)


def test_require_stable_answers_unstable_while_a_transaction_holds_offsets():
    """KIP-447: a read_committed consumer taking over a partition must not read the offset in
    effect while the previous owner's transaction, holding a newer one, may still commit."""
    h = Harness(auto_commit=False)
    h.commit(G, {TP: 5, TP1: 1})
    h.complete_appends()

    def stable():
        got = h.fetch(G, (TP, TP1), require_stable=True).partitions
        return {tp: (f.offset, f.error) for tp, f in got.items()}

    assert stable() == {TP: (5, E.NONE), TP1: (1, E.NONE)}
    h.txn_commit(G, {TP: 10}, PID)  # being written
    assert stable() == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT), TP1: (1, E.NONE)}
    h.complete_appends()  # written, no marker yet
    assert stable() == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT), TP1: (1, E.NONE)}
    assert committed(h) == 5  # without require_stable: the offset in effect
    assert h.fetch("other-group", (TP,), require_stable=True).partitions[TP].error == E.NONE
    h.marker(PID, committed=True)
    assert stable() == {TP: (10, E.NONE), TP1: (1, E.NONE)}
    h.txn_commit(G, {TP1: 9}, OTHER)
    h.complete_appends()
    h.marker(OTHER, committed=False)
    assert stable() == {TP: (10, E.NONE), TP1: (1, E.NONE)}


def test_abort_marker_drops_the_pending_offsets_and_markers_are_per_producer():
    h = Harness()
    h.commit(G, {TP: 5})
    h.txn_commit(G, {TP: 10}, PID)
    h.txn_commit(G, {TP1: 4}, OTHER)
    h.marker(PID, committed=False)
    assert committed(h) == 5
    h.marker(PID, committed=True)  # nothing of PID is pending any more
    assert committed(h) == 5 and committed(h, TP1) == -1
    h.marker(OTHER, committed=True)
    assert committed(h, TP1) == 4


def test_the_transactional_batch_carries_producer_id_and_epoch():
    h = Harness(auto_commit=False)
    h.txn_commit(G, {TP: 10}, PID, epoch=3)
    [append] = h.pending
    assert (append.producer_id, append.producer_epoch) == (PID, 3)
    h.commit(G, {TP1: 1})
    assert (h.pending[1].producer_id, h.pending[1].producer_epoch) == (-1, -1)


def test_a_marker_before_the_append_completes_ends_it_once_replayed():
    """A producer that gave up waiting for TxnOffsetCommit and aborted: the marker follows the
    batch in the log, so the batch ends with it."""
    h = Harness(auto_commit=False)
    handle = h.txn_commit(G, {TP: 10}, PID)
    h.c.replay_txn_marker(PID, committed=False)
    h.complete_appends()
    assert dict(h.answer(handle).partitions) == {TP: E.NONE}
    h.marker(OTHER, committed=True)
    assert committed(h) == -1 and h.c.pending_txn_offsets.producers() == []


def test_a_failed_append_leaves_nothing_pending():
    h = Harness(auto_commit=False)
    handle = h.txn_commit(G, {TP: 10}, PID)
    h.complete_appends(E.NOT_LEADER_OR_FOLLOWER)
    assert dict(h.answer(handle).partitions) == {TP: E.NOT_COORDINATOR}
    assert h.c.pending_txn_offsets.producers() == []


def test_replay_at_load_applies_committed_drops_aborted_and_keeps_open_ones_pending():
    h = Harness()
    h.txn_commit(G, {TP: 10}, PID)
    h.marker(PID, committed=True)
    h.txn_commit(G, {TP: 20}, PID)  # the same producer's next transaction: aborted
    h.marker(PID, committed=False)
    h.txn_commit(G, {TP1: 7}, OTHER)  # still open when the coordinator moved
    fresh = h.fresh()
    h.c = fresh
    assert (committed(h), committed(h, TP1)) == (10, -1)
    assert fresh.pending_txn_offsets.producers() == [OTHER]
    h.marker(OTHER, committed=True)
    assert committed(h, TP1) == 7


STABLE_CASES = [
    # member, generation (offset from the current one; None: -1), expected
    ("a", 0, E.NONE),
    ("a", -1, E.ILLEGAL_GENERATION),
    ("ghost", 0, E.UNKNOWN_MEMBER_ID),
    ("", None, E.NONE),  # no group metadata given: Kafka does not check
]


@pytest.mark.parametrize("who,gen_delta,expected", STABLE_CASES)
def test_member_and_generation_are_checked_as_for_offset_commit(who, gen_delta, expected):
    h = Harness()
    (a, _b), gen = h.form_group(G, 2)
    member = {"a": a, "ghost": "ghost", "": ""}[who]
    generation = -1 if gen_delta is None else gen + gen_delta
    answer = h.answer(h.txn_commit(G, {TP: 10}, PID, generation=generation, member_id=member))
    assert dict(answer.partitions) == {TP: expected}


def test_unknown_group_refuses_a_member_and_a_generation_but_takes_a_bare_commit():
    h = Harness()
    assert dict(h.answer(h.txn_commit(G, {TP: 1}, PID, member_id="m")).partitions) == {
        TP: E.UNKNOWN_MEMBER_ID
    }
    assert dict(h.answer(h.txn_commit(G, {TP: 1}, PID, generation=3)).partitions) == {
        TP: E.ILLEGAL_GENERATION
    }
    assert dict(h.answer(h.txn_commit(G, {TP: 1}, PID)).partitions) == {TP: E.NONE}
    h.marker(PID, committed=True)
    assert committed(h) == 1


def test_a_negative_producer_id_is_refused_and_resign_forgets_pending():
    h = Harness()
    assert dict(h.answer(h.txn_commit(G, {TP: 1}, -1)).partitions) == {
        TP: E.INVALID_PRODUCER_ID_MAPPING
    }
    h.txn_commit(G, {TP: 1}, PID)
    h.c.resign()
    assert h.c.pending_txn_offsets.producers() == []


def test_a_plain_commit_written_after_the_transactions_offset_is_kept_on_commit():
    """Kafka's olderThan: the COMMIT applies a partition's offset only over an older one."""
    h = Harness()
    h.txn_commit(G, {TP: 10, TP1: 10}, PID)
    h.commit(G, {TP: 99})  # written after the transaction's record
    h.marker(PID, committed=True)
    assert (committed(h), committed(h, TP1)) == (99, 10)
    h.c = h.fresh()  # replay decides the same
    assert (committed(h), committed(h, TP1)) == (99, 10)
    h.txn_commit(G, {TP: 11}, OTHER)  # now the transaction's record is the newer
    h.marker(OTHER, committed=True)
    assert committed(h) == 11
    h.c = h.fresh()
    assert (committed(h), committed(h, TP1)) == (11, 10)
