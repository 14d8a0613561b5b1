"""A leader append writes the producer's bytes as they are: the broker's stamp (baseOffset,
partitionLeaderEpoch, outside the CRC) goes out as a separate 16-byte piece of the same writev,
so a megabyte produced is not copied into a bytearray first; LogAppendTime topics still copy
(that stamp is inside the CRC)."""

from __future__ import annotations

import os
import tracemalloc

from clients.record.batch_header import parse_header, validate_batch
from clients.record.codec import encode_batch
from kraft.fs import IOV_MAX, writev_all
from kraft.log.log import Log
from kraft.log.log_config import LogConfig

MIB = 1 << 20


def test_a_leader_append_allocates_far_less_than_the_batch(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(max_message_bytes=2 * MIB), now_ms=0)
    log.append_as_leader(encode_batch([(None, b"warm", (), 1)]), leader_epoch=1, now_ms=0)
    batch = encode_batch([(None, os.urandom(MIB), (), 1000)])
    tracemalloc.start()
    try:
        log.append_as_leader(batch, leader_epoch=7, now_ms=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # What remains is validation's: the CRC32C library takes only bytes, so the checked range
    # is copied once (transiently). Before, a bytearray of the request came on top (3 MiB peak).
    assert peak < 1.5 * MIB, f"{peak} bytes allocated to append a {len(batch)}-byte batch"
    stored = log.read(1, 2 * MIB).records
    header = validate_batch(stored)  # the CRC still holds
    assert (header.base_offset, header.partition_leader_epoch) == (1, 7)
    assert stored[16:] == batch[16:]
    assert parse_header(batch).base_offset == 0  # the producer's bytes are untouched
    log.close()


def test_several_batches_and_log_append_time_read_back_stamped(tmp_path):
    for log_append_time in (False, True):
        config = LogConfig(
            message_timestamp_type="LogAppendTime" if log_append_time else "CreateTime"
        )
        log = Log.open(tmp_path / f"t-{int(log_append_time)}", config, now_ms=0)
        records = b"".join(
            encode_batch([(None, b"v%d" % i, (), 1000 + i)] * (i + 1)) for i in range(3)
        )
        info = log.append_as_leader(records, leader_epoch=4, now_ms=5000)
        assert (info.first_offset, info.last_offset) == (0, 5)
        stored, pos, seen = log.read(0, MIB).records, 0, []
        while pos < len(stored):
            header = validate_batch(stored, pos)
            seen.append((header.base_offset, header.partition_leader_epoch, header.max_timestamp))
            pos += header.size
        expected_ts = [5000] * 3 if log_append_time else [1000, 1001, 1002]
        assert seen == [(0, 4, expected_ts[0]), (1, 4, expected_ts[1]), (3, 4, expected_ts[2])]
        log.close()


def test_writev_all_writes_more_buffers_than_one_writev_takes(tmp_path):
    parts = [bytes([i % 251]) * (i % 7 + 1) for i in range(IOV_MAX * 2 + 5)]
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        writev_all(fd, parts)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(parts)


def test_writev_all_goes_on_after_short_writes(tmp_path, monkeypatch):
    real_write = os.write

    def short_writev(fd, buffers):  # as a signal or a full pipe may: 777 bytes at most
        return real_write(fd, b"".join(bytes(b) for b in buffers)[:777])

    monkeypatch.setattr("kraft.fs.os.writev", short_writev)
    parts = [os.urandom(n) for n in (16, 5000, 16, 3, 0, 2000)]
    path = tmp_path / "f"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        writev_all(fd, parts)
    finally:
        os.close(fd)
    assert path.read_bytes() == b"".join(parts)
