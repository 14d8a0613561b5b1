"""Compaction and transactions, Kafka's rules: an aborted transaction's records are removed and
never shadow an older value of their key; its ABORT marker (and .txnindex entry) stays while its
data is being removed, then goes once the segment is older than delete.retention.ms (kept as an
empty batch when it is its producer's last); a COMMIT marker stays while its data does; nothing
from the first unstable offset (an undecided transaction) on is cleaned."""

from __future__ import annotations

from compaction_helpers import BASE_TS, append, batch_headers, compact, open_log, records, roll

from clients.record.codec import encode_batch
from clients.record.control import encode_marker_batch
from kraft.log.cleaner import clean_log, plan_cleaning
from kraft.log.transaction_index import AbortedTxn

ABORTED, COMMITTED = 5, 6
RETENTION_PASSED = 10**12  # a "now" past delete.retention.ms of every segment


def txn(log, pid: int, seq: int, pairs) -> None:
    records_ = [(k, v, (), BASE_TS + log.log_end_offset + j) for j, (k, v) in enumerate(pairs)]
    log.append_as_leader(
        encode_batch(
            records_, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True
        ),
        0,
        now_ms=0,
    )


def end_txn(log, pid: int, committed: bool) -> int:
    offset = log.log_end_offset
    log.append_as_leader(
        encode_marker_batch(pid, 0, committed, 0, BASE_TS + offset),
        0,
        now_ms=0,
        from_coordinator=True,
    )
    return offset


def transactional_log(tmp_path):
    """k1=v1, k2=v2 (plain); k1=ABORTED in an aborted transaction; k2=v2' committed."""
    log = open_log(tmp_path)
    append(log, [(b"k1", b"v1"), (b"k2", b"v2")])
    txn(log, ABORTED, 0, [(b"k1", b"aborted")])
    abort_at = end_txn(log, ABORTED, committed=False)
    log.append_aborted_txn(AbortedTxn(ABORTED, 2, abort_at, abort_at + 1))
    txn(log, COMMITTED, 0, [(b"k2", b"v2'")])
    end_txn(log, COMMITTED, committed=True)
    roll(log)
    append(log, [(b"k3", b"v3")])  # the active segment, never cleaned
    log.high_watermark = log.log_end_offset
    return log, abort_at


def kinds(log):
    return [
        (h.base_offset, h.producer_id, h.is_control, h.records_count) for h in batch_headers(log)
    ]


def test_aborted_data_goes_and_its_marker_outlives_it(tmp_path):
    log, abort_at = transactional_log(tmp_path)
    compact(log)
    got = {(r.key, r.value) for r in records(log) if r.key and not r.key.startswith(b"\0")}
    assert got == {(b"k1", b"v1"), (b"k2", b"v2'"), (b"k3", b"v3")}
    # Both markers stay this pass (their data was met); the abort's entry moves with it.
    assert [k for k in kinds(log) if k[2]] == [(3, ABORTED, True, 1), (5, COMMITTED, True, 1)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == [
        AbortedTxn(ABORTED, 2, abort_at, abort_at + 1)
    ]

    compact(log, now_ms=RETENTION_PASSED)  # data gone, markers old: they go
    markers = [k for k in kinds(log) if k[2]]
    # Each marker is its producer's last batch: kept empty (no marker record), as Kafka does.
    assert markers == [(3, ABORTED, True, 0), (5, COMMITTED, True, 1)]
    assert log.collect_aborted_txns(0, log.log_end_offset) == []
    log.close()


def test_markers_wait_for_delete_retention(tmp_path):
    log, _ = transactional_log(tmp_path)
    compact(log)
    compact(log, now_ms=20_000)  # data gone, but the segment is younger than 1 day
    assert [k for k in kinds(log) if k[2]] == [(3, ABORTED, True, 1), (5, COMMITTED, True, 1)]
    log.close()


def test_a_marker_that_is_not_its_producers_last_goes_whole(tmp_path):
    log, _ = transactional_log(tmp_path)
    txn(log, ABORTED, 1, [(b"k9", b"later")])  # the aborted producer's next transaction
    end_txn(log, ABORTED, committed=True)
    roll(log)
    append(log, [(b"k4", b"v4")])
    log.high_watermark = log.log_end_offset
    compact(log)
    compact(log, now_ms=RETENTION_PASSED)
    assert (3, ABORTED, True, 1) not in kinds(log) and (3, ABORTED, True, 0) not in kinds(log)
    assert {r.value for r in records(log)} >= {b"later", b"v1"}
    log.close()


def test_nothing_past_the_first_unstable_offset_is_cleaned(tmp_path):
    log = open_log(tmp_path)
    append(log, [(b"k", b"old")] * 4)
    roll(log)
    unstable = log.log_end_offset
    txn(log, ABORTED, 0, [(b"k", b"undecided")])
    roll(log)
    append(log, [(b"k", b"new")])
    roll(log)
    append(log, [(b"x", b"y")])
    log.high_watermark = log.log_end_offset
    plan = plan_cleaning(log, 0, 10_000, first_unstable_offset=unstable)
    assert plan.end_offset <= unstable
    clean_log(log, plan, 10_000)
    # "new" (past the undecided transaction) did not shadow the last "old" before it.
    assert [r.value for r in records(log)][:1] == [b"old"]
    log.close()
