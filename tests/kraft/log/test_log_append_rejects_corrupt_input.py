import struct

import pytest
from kraft_log_helpers import make_batch

from clients.errors import ErrorCode
from kraft.log.log import CorruptRecords, Log, RecordTooLarge
from kraft.log.log_config import LogConfig


@pytest.fixture
def log(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(max_message_bytes=500), now_ms=0)
    log.append_as_leader(make_batch(2), 0, now_ms=0)
    return log


def _assert_nothing_appended(log):
    assert log.log_end_offset == 2
    assert log.size_in_bytes() == len(make_batch(2))
    assert log.leader_epoch_cache.latest_epoch == 0


def test_crc_flip_in_second_of_three_batches_appends_nothing(log):
    bad = bytearray(make_batch(3))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptRecords, match="batch 1 .*CRC") as err:
        log.append_as_leader(make_batch(1) + bytes(bad) + make_batch(1), 7, now_ms=0)
    assert err.value.code == ErrorCode.CORRUPT_MESSAGE
    _assert_nothing_appended(log)


def test_wrong_length_is_rejected(log):
    bad = bytearray(make_batch(2))
    struct.pack_into(">i", bad, 8, len(bad))  # claims 12 bytes more than there are
    with pytest.raises(CorruptRecords, match="claims"):
        log.append_as_leader(bytes(bad), 0, now_ms=0)
    _assert_nothing_appended(log)


def test_truncated_body_is_rejected(log):
    with pytest.raises(CorruptRecords):
        log.append_as_leader(make_batch(1) + make_batch(3)[:-5], 0, now_ms=0)
    _assert_nothing_appended(log)


def test_trailing_garbage_is_rejected(log):
    with pytest.raises(CorruptRecords, match="truncated"):
        log.append_as_leader(make_batch(1) + b"\x00" * 7, 0, now_ms=0)
    _assert_nothing_appended(log)


def test_unknown_magic_is_rejected(log):
    bad = bytearray(make_batch(1))
    bad[16] = 1
    with pytest.raises(CorruptRecords, match="magic"):
        log.append_as_leader(bytes(bad), 0, now_ms=0)
    _assert_nothing_appended(log)


def test_batch_over_max_message_bytes_is_rejected(log):
    big = make_batch(10, value=b"x" * 100)
    with pytest.raises(RecordTooLarge, match="max.message.bytes=500") as err:
        log.append_as_leader(make_batch(1) + big, 0, now_ms=0)
    assert err.value.code == ErrorCode.MESSAGE_TOO_LARGE
    _assert_nothing_appended(log)


def test_follower_append_must_continue_at_log_end(log):
    with pytest.raises(CorruptRecords, match="does not continue the log at 2"):
        log.append_as_follower(make_batch(1, base_offset=5, epoch=3))
    _assert_nothing_appended(log)
    follower_batches = make_batch(2, base_offset=2, epoch=3) + make_batch(1, base_offset=4, epoch=4)
    info = log.append_as_follower(follower_batches)
    assert (info.first_offset, info.last_offset, log.log_end_offset) == (2, 4, 5)
    assert log.leader_epoch_cache.entries == [(0, 0), (3, 2), (4, 4)]
