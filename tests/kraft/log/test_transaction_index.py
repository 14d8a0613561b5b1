"""Each segment's `.txnindex` lists the aborted transactions whose ABORT marker it holds, in
Kafka's TransactionIndex layout; it is cut with the log's tail (truncation, a torn tail at
recovery), deleted with its segment, and searched across segments by a read_committed fetch."""

from __future__ import annotations

import os
import struct

from kraft_log_helpers import make_batch

from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.transaction_index import AbortedTxn

# Kafka's AbortedTxn, decoded here independently of kraft: version int16 (0), producerId int64,
# firstOffset int64, lastOffset int64, lastStableOffset int64, big-endian, 34 bytes per entry.
KAFKA_ABORTED_TXN = struct.Struct(">hqqqq")


def decode_txnindex(path) -> list[tuple[int, int, int, int, int]]:
    data = path.read_bytes()
    assert len(data) % KAFKA_ABORTED_TXN.size == 0
    return [
        KAFKA_ABORTED_TXN.unpack_from(data, pos)
        for pos in range(0, len(data), KAFKA_ABORTED_TXN.size)
    ]


def open_log(dir, **kw) -> Log:
    return Log.open(dir, LogConfig(segment_bytes=kw.pop("segment_bytes", 1 << 20)), now_ms=0, **kw)


def fill(log: Log, count: int) -> None:
    for _ in range(count):
        log.append_as_follower(make_batch(base_offset=log.log_end_offset, epoch=0))


def txnindex(dir, base: int):
    return dir / f"{base:020d}.txnindex"


def test_entries_are_written_in_kafkas_layout_and_searched(tmp_path):
    log = open_log(tmp_path)
    fill(log, 10)
    log.append_aborted_txn(AbortedTxn(7, 1, 4, 2))
    log.append_aborted_txn(AbortedTxn(8, 2, 6, 7))
    log.append_aborted_txn(AbortedTxn(8, 2, 6, 7))  # a replay meets the marker again
    assert decode_txnindex(txnindex(tmp_path, 0)) == [(0, 7, 1, 4, 2), (0, 8, 2, 6, 7)]
    assert log.collect_aborted_txns(0, 10) == [AbortedTxn(7, 1, 4, 2), AbortedTxn(8, 2, 6, 7)]
    assert log.collect_aborted_txns(5, 10) == [AbortedTxn(8, 2, 6, 7)]  # 7's ended at 4
    assert log.collect_aborted_txns(0, 2) == [AbortedTxn(7, 1, 4, 2)]  # 8's starts at 2
    log.close()
    reopened = open_log(tmp_path, clean_shutdown=True)
    assert reopened.collect_aborted_txns(0, 10) == [AbortedTxn(7, 1, 4, 2), AbortedTxn(8, 2, 6, 7)]
    reopened.close()


def test_a_transaction_spanning_segments_is_found_from_its_first_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=200)  # about two batches per segment
    fill(log, 8)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3
    marker = log.log_end_offset - 1
    log.append_aborted_txn(AbortedTxn(7, 1, marker, marker + 1))
    assert txnindex(tmp_path, bases[-1]).exists() and not txnindex(tmp_path, 0).exists()
    # A fetch from offset 1 reads the first segment; the entry lives with the marker, later.
    assert log.collect_aborted_txns(1, 3) == [AbortedTxn(7, 1, marker, marker + 1)]
    log.close()


def test_truncation_and_a_torn_tail_drop_entries_past_the_log_end(tmp_path):
    log = open_log(tmp_path)
    fill(log, 10)
    log.append_aborted_txn(AbortedTxn(7, 0, 3, 4))
    log.append_aborted_txn(AbortedTxn(8, 4, 8, 9))
    log.truncate_to(8)
    assert decode_txnindex(txnindex(tmp_path, 0)) == [(0, 7, 0, 3, 4)]
    log.append_aborted_txn(AbortedTxn(9, 5, 7, 8))
    log.close()
    # A crash cut the last batches (offsets 5 to 7) in half: recovery drops their entry.
    seg = tmp_path / f"{0:020d}.log"
    with open(seg, "r+b") as f:
        f.truncate(os.path.getsize(seg) - 100)
    recovered = open_log(tmp_path, recovery_point=0)
    assert recovered.log_end_offset < 8
    assert decode_txnindex(txnindex(tmp_path, 0)) == [(0, 7, 0, 3, 4)]
    recovered.close()


def test_a_torn_entry_is_cut_at_load(tmp_path):
    log = open_log(tmp_path)
    fill(log, 5)
    log.append_aborted_txn(AbortedTxn(7, 0, 3, 4))
    log.close()
    with open(txnindex(tmp_path, 0), "ab") as f:
        f.write(b"\x00\x00\x00")  # a crash in the middle of the next entry
    reopened = open_log(tmp_path, clean_shutdown=True)
    assert decode_txnindex(txnindex(tmp_path, 0)) == [(0, 7, 0, 3, 4)]
    reopened.close()


def test_the_txnindex_goes_with_its_segment(tmp_path):
    log = open_log(tmp_path, segment_bytes=200)
    fill(log, 8)
    log.append_aborted_txn(AbortedTxn(7, 0, 1, 2))
    assert txnindex(tmp_path, 0).exists()
    log.high_watermark = log.log_end_offset
    log.maybe_increment_log_start_offset(log.segments[1].base_offset)
    assert log.delete_old_segments(now_ms=0) == 1
    assert not txnindex(tmp_path, 0).exists()
    assert log.collect_aborted_txns(log.log_start_offset, log.log_end_offset) == []
    log.close()


def test_an_orphan_txnindex_is_removed_at_open(tmp_path):
    open_log(tmp_path).close()
    orphan = txnindex(tmp_path, 500)
    orphan.write_bytes(KAFKA_ABORTED_TXN.pack(0, 1, 500, 501, 502))
    open_log(tmp_path, clean_shutdown=True).close()
    assert not orphan.exists()
