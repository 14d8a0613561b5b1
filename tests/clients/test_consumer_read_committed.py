"""The consumer's read_committed filter (Kafka's CompletedFetch rule): an aborted transaction's
batches are dropped from its first offset until its producer's ABORT marker, a later
transaction of the same producer is kept, other producers' and plain batches are kept, and no
control batch ever reaches the user."""

from __future__ import annotations

import pytest

from clients.consumer.read_committed import drop_aborted, isolation_level_of
from clients.record.codec import decode_records, encode_batch
from clients.record.control import encode_marker_batch


def data_batch(offset: int, pid: int, value: bytes, transactional: bool = True) -> bytes:
    return encode_batch(
        [(None, value, (), 1)],
        base_offset=offset,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=offset,
        is_transactional=transactional,
    )


def marker(offset: int, pid: int, committed: bool) -> bytes:
    batch = bytearray(encode_marker_batch(pid, 0, committed, 0, 1))
    batch[0:8] = offset.to_bytes(8, "big")  # base offset: outside the CRC
    return bytes(batch)


LOG = b"".join(
    [
        data_batch(0, 1, b"a-aborted"),
        data_batch(1, 2, b"b-committed"),
        data_batch(2, 1, b"a-aborted-2"),
        marker(3, 1, committed=False),
        data_batch(4, 1, b"a-next-txn"),  # same producer, a new transaction: kept
        marker(5, 2, committed=True),
        data_batch(6, 3, b"plain", transactional=False),
        data_batch(7, 1, b"a-next-txn-2"),
        marker(8, 1, committed=True),
    ]
)


def values(data: bytes) -> list[bytes]:
    return [r.value for r in decode_records(data, skip_control=False)]


def test_aborted_batches_and_markers_are_dropped():
    kept = drop_aborted(LOG, [(1, 0)])
    assert values(kept) == [b"b-committed", b"a-next-txn", b"plain", b"a-next-txn-2"]


def test_an_aborted_transaction_that_starts_later_hides_only_from_there():
    log = LOG + data_batch(9, 2, b"b-aborted") + marker(10, 2, committed=False)
    kept = drop_aborted(log, [(1, 0), (2, 9)])
    assert values(kept) == [b"b-committed", b"a-next-txn", b"plain", b"a-next-txn-2"]


def test_nothing_aborted_leaves_the_bytes_alone():
    assert drop_aborted(LOG, []) is LOG


@pytest.mark.parametrize("name,level", [("read_uncommitted", 0), ("read_committed", 1)])
def test_isolation_level_names(name, level):
    assert isolation_level_of(name) == level


def test_a_misspelt_isolation_level_is_refused_by_name():
    with pytest.raises(ValueError, match="read_committed"):
        isolation_level_of("committed")
