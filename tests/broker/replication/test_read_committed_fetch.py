"""The leader's side of read_committed (Kafka's Fetch and ListOffsets with isolation level 1):
records only up to the last stable offset, which an open transaction holds back; the aborted
transactions whose data the answer may hold; markers fenced by a stale epoch; and the state
(open transactions, .txnindex) rebuilt from the log after a restart."""

from __future__ import annotations

from broker.replication.messages import FetchAnswer
from broker.replication.replica_manager import (
    LATEST_TIMESTAMP,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    ReplicaManager,
)
from clients.consumer.completed_fetch import batch_span
from clients.consumer.read_committed import drop_aborted
from clients.errors import ErrorCode
from clients.record.codec import decode_records, encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.log.transaction_index import AbortedTxn
from kraft.metadata.image import PartitionRegistration

COMMITTED_PID, ABORTED_PID, OPEN_PID = 10, 20, 30


def txn_batch(pid: int, seq: int, values: list[bytes]) -> bytes:
    return encode_batch(
        [(None, v, (), 1000) for v in values],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def single_replica(tmp_path) -> ReplicaManager:
    """Broker 1 alone leads t-0: every append is committed at once."""
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    reg = PartitionRegistration(
        replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1
    )
    replicas.apply_registration("t", 0, "topic-id", LogConfig(), reg)
    return replicas


def marker(replicas, pid, committed, epoch=0, coordinator_epoch=0):
    return replicas.append_txn_marker("t", 0, pid, epoch, committed, coordinator_epoch, now_ms=5)


def values(result) -> list[bytes]:
    return [r.value for r in decode_records(result.records, skip_control=True)]


def test_read_committed_stops_at_the_open_transaction_and_lists_the_aborted(tmp_path):
    replicas = single_replica(tmp_path)
    assert (
        replicas.append("t", 0, txn_batch(COMMITTED_PID, 0, [b"c1", b"c2"]), -1, 0).error_code == 0
    )
    assert replicas.append("t", 0, txn_batch(ABORTED_PID, 0, [b"a1"]), -1, 0).base_offset == 2
    assert replicas.append("t", 0, txn_batch(COMMITTED_PID, 2, [b"c3"]), -1, 0).base_offset == 3
    assert replicas.last_stable_offset("t", 0) == 0  # both transactions open
    assert replicas.read("t", 0, 0, 1 << 20, isolation_level=READ_COMMITTED).records == b""
    assert marker(replicas, COMMITTED_PID, True).base_offset == 4
    assert replicas.last_stable_offset("t", 0) == 2  # the aborted-to-be one holds it
    assert marker(replicas, ABORTED_PID, False).base_offset == 5
    assert replicas.append("t", 0, encode_batch([(None, b"plain", (), 1)]), -1, 0).base_offset == 6
    assert replicas.append("t", 0, txn_batch(OPEN_PID, 0, [b"o1"]), -1, 0).base_offset == 7

    committed = replicas.read("t", 0, 0, 1 << 20, isolation_level=READ_COMMITTED)
    assert committed.last_stable_offset == 7 and committed.high_watermark == 8
    assert values(committed) == [b"c1", b"c2", b"a1", b"c3", b"plain"]  # up to the LSO
    assert committed.aborted_transactions == (AbortedTxn(ABORTED_PID, 2, 5, 6),)
    uncommitted = replicas.read("t", 0, 0, 1 << 20, isolation_level=READ_UNCOMMITTED)
    assert values(uncommitted) == [b"c1", b"c2", b"a1", b"c3", b"plain", b"o1"]
    assert uncommitted.aborted_transactions == ()
    # A fetch past the aborted transaction's marker is not told of it.
    later = replicas.read("t", 0, 6, 1 << 20, isolation_level=READ_COMMITTED)
    assert later.aborted_transactions == () and values(later) == [b"plain"]
    assert (
        replicas.list_offset("t", 0, LATEST_TIMESTAMP, isolation_level=READ_COMMITTED).offset == 7
    )
    assert replicas.list_offset("t", 0, LATEST_TIMESTAMP).offset == 8
    # The cleaner's bound, as the log manager asks for it: the open transaction's start.
    assert replicas.log_manager.first_unstable_offset("t", 0) == 7


def test_stale_markers_are_refused_and_nothing_is_written(tmp_path):
    replicas = single_replica(tmp_path)
    replicas.append(
        "t",
        0,
        encode_batch(
            [(None, b"x", (), 1)],
            producer_id=OPEN_PID,
            producer_epoch=3,
            base_sequence=0,
            is_transactional=True,
        ),
        -1,
        0,
    )
    assert marker(replicas, OPEN_PID, False, epoch=3, coordinator_epoch=7).error_code == 0
    end = replicas.get("t", 0).log.log_end_offset
    fenced = marker(replicas, OPEN_PID, True, epoch=2, coordinator_epoch=7)
    assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    deposed = marker(replicas, OPEN_PID, True, epoch=3, coordinator_epoch=6)
    assert deposed.error_code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert replicas.get("t", 0).log.log_end_offset == end
    # A client cannot forge a marker through Produce.
    forged = encode_batch(
        [(b"\0\0\0\1", b"\0\0\0\0\0\0", (), 1)],
        producer_id=OPEN_PID,
        producer_epoch=3,
        is_transactional=True,
        is_control=True,
    )
    assert replicas.append("t", 0, forged, -1, 0).error_code != 0


def test_a_restart_rebuilds_open_transactions_and_the_txnindex(tmp_path):
    replicas = single_replica(tmp_path)
    replicas.append("t", 0, txn_batch(ABORTED_PID, 0, [b"a1"]), -1, 0)
    replicas.checkpoint_producer_states()  # a snapshot with the transaction open
    replicas.append("t", 0, txn_batch(OPEN_PID, 0, [b"o1"]), -1, 0)
    marker(replicas, ABORTED_PID, False)
    log = replicas.get("t", 0).log
    for seg in log.segments:  # as if the entry never reached the disk
        seg.txn_index.delete()
    replicas.log_manager.close()

    again = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    reg = PartitionRegistration(
        replicas=(1,), isr=(1,), leader=1, leader_epoch=2, partition_epoch=2
    )
    again.apply_registration("t", 0, "topic-id", LogConfig(), reg)
    again.get("t", 0).log.high_watermark = 3
    assert again.last_stable_offset("t", 0) == 1  # OPEN_PID's, from offset 1, still open
    read = again.read("t", 0, 0, 1 << 20, isolation_level=READ_COMMITTED)
    assert read.aborted_transactions == (AbortedTxn(ABORTED_PID, 0, 2, 1),)


def test_a_follower_indexes_aborted_transactions_as_it_replicates_them(tmp_path):
    reg = dict(replicas=(1, 2), isr=(1, 2), leader_epoch=1, partition_epoch=1)
    leader = ReplicaManager(LogManager([tmp_path / "1"], LogConfig(), now_ms=0), node_id=1)
    follower = ReplicaManager(LogManager([tmp_path / "2"], LogConfig(), now_ms=0), node_id=2)
    for rm in (leader, follower):
        rm.apply_registration(
            "t", 0, "topic-id", LogConfig(), PartitionRegistration(leader=1, **reg), now_ms=0
        )
    leader.append("t", 0, txn_batch(ABORTED_PID, 0, [b"a1"]), -1, 0)
    assert marker(leader, ABORTED_PID, False).error_code == 0
    [(hosted, fetch)] = follower.followed_from(1)
    answer = leader.read_for_follower(
        "t",
        0,
        2,
        fetch.fetch_offset,
        fetch.last_fetched_epoch,
        fetch.current_leader_epoch,
        1 << 20,
        0,
    )
    follower.apply_fetch_response(
        hosted,
        fetch,
        FetchAnswer(
            high_watermark=answer.high_watermark,
            log_start_offset=answer.log_start_offset,
            records=answer.records,
        ),
        now_ms=0,
    )
    assert answer.last_stable_offset == 0  # set (not -1) for follower fetches too
    log = follower.get("t", 0).log
    assert log.log_end_offset == 2
    assert log.collect_aborted_txns(0, 2) == [AbortedTxn(ABORTED_PID, 0, 1, 2)]


def test_one_batch_per_fetch_still_hides_every_aborted_record(tmp_path):
    """A consumer that reads a batch at a time meets an aborted transaction's data and its
    marker in different answers: each answer lists the transaction while it overlaps it."""
    replicas = single_replica(tmp_path)
    replicas.append("t", 0, txn_batch(ABORTED_PID, 0, [b"a1"]), -1, 0)
    replicas.append("t", 0, txn_batch(COMMITTED_PID, 0, [b"c1"]), -1, 0)
    replicas.append("t", 0, txn_batch(ABORTED_PID, 1, [b"a2"]), -1, 0)
    marker(replicas, ABORTED_PID, False)
    replicas.append("t", 0, txn_batch(ABORTED_PID, 2, [b"next"]), -1, 0)  # a new transaction
    marker(replicas, COMMITTED_PID, True)
    marker(replicas, ABORTED_PID, True)
    got, offset = [], 0
    while offset < replicas.last_stable_offset("t", 0):
        answer = replicas.read("t", 0, offset, 1, isolation_level=READ_COMMITTED)
        kept = drop_aborted(
            answer.records, [(a.producer_id, a.first_offset) for a in answer.aborted_transactions]
        )
        got += [r.value for r in decode_records(kept, skip_control=True)]
        offset = batch_span(answer.records, offset)[0]
    assert got == [b"c1", b"next"]
