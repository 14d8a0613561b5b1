"""The produce path (ReplicaManager.append, with a client's bytes as they arrive) refuses batches
whose CRC holds but whose records do not: a count that lies, a cut section, a garbage or bomb
compressed section. Nothing is appended, and consumers keep reading the partition."""

from __future__ import annotations

import struct
import tracemalloc

import google_crc32c
import zstandard

from broker.replication.replica_manager import ReplicaManager
from clients.errors import ErrorCode
from clients.record.codec import decode_records, encode_batch
from kraft.log.log_config import LogConfig
from kraft.log.log_manager import LogManager
from kraft.metadata.image import PartitionRegistration

GOOD = encode_batch([(b"k", b"v", (), 1_000)] * 2)


def crc_fixed(batch) -> bytes:
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, google_crc32c.value(bytes(out[21:])))
    return bytes(out)


def leader(tmp_path, config: LogConfig) -> ReplicaManager:
    """The only replica, so the high watermark follows each append."""
    replicas = ReplicaManager(LogManager([tmp_path], LogConfig(), now_ms=0), node_id=1)
    reg = PartitionRegistration(
        replicas=(1,), isr=(1,), leader=1, leader_epoch=1, partition_epoch=1
    )
    replicas.apply_registration("t", 0, "topic-id", config, reg)
    assert replicas.append("t", 0, GOOD, 1, 0).base_offset == 0
    return replicas


def assert_refused(replicas, batch, code) -> str:
    result = replicas.append("t", 0, batch, 1, 0)
    assert result.error_code == code, result.error_message
    assert replicas.get("t", 0).log.log_end_offset == 2
    return result.error_message


def consumed(replicas) -> int:
    fetched = replicas.read("t", 0, 0, 1 << 20)
    assert fetched.error_code == 0
    return len(decode_records(fetched.records))


def test_a_count_that_lies_is_refused_and_the_log_end_stays(tmp_path):
    replicas = leader(tmp_path, LogConfig())
    lie = bytearray(encode_batch([(b"k", b"v", (), 1_000)]))
    struct.pack_into(">i", lie, 23, 2**31 - 2)  # lastOffsetDelta
    struct.pack_into(">i", lie, 57, 2**31 - 1)  # recordsCount
    message = assert_refused(replicas, crc_fixed(lie), ErrorCode.INVALID_RECORD)
    assert "recordsCount 2147483647" in message and "nothing was appended" in message
    assert replicas.append("t", 0, GOOD, 1, 0).base_offset == 2


def test_a_cut_batch_is_refused_and_consumers_still_read(tmp_path):
    replicas = leader(tmp_path, LogConfig())
    cut = bytearray(encode_batch([(b"k", b"v" * 20, (), 1_000)] * 3)[:-7])
    struct.pack_into(">i", cut, 8, len(cut) - 12)
    assert_refused(replicas, crc_fixed(cut), ErrorCode.INVALID_RECORD)
    assert consumed(replicas) == 2


def test_garbage_compressed_sections_are_refused(tmp_path):
    replicas = leader(tmp_path, LogConfig())
    for codec in (1, 2, 3, 4, 5, 7):
        bad = bytearray(encode_batch([(b"k", b"v", (), 1_000)]))
        bad[61:] = b"\x13" * 40
        struct.pack_into(">i", bad, 8, len(bad) - 12)
        struct.pack_into(">h", bad, 21, codec)
        assert_refused(replicas, crc_fixed(bad), ErrorCode.INVALID_RECORD)
    assert consumed(replicas) == 2


def test_a_zstd_bomb_on_a_compacted_topic_is_refused_in_bounded_memory(tmp_path):
    replicas = leader(tmp_path, LogConfig(cleanup_policy="compact"))
    cobj = zstandard.ZstdCompressor().compressobj()
    section = b"".join(cobj.compress(bytes(1 << 20)) for _ in range(256)) + cobj.flush()
    bomb = bytearray(encode_batch([(b"k", b"v", (), 1_000)]))
    bomb[61:] = section  # 8 KB inflating to 256 MiB
    struct.pack_into(">i", bomb, 8, len(bomb) - 12)
    struct.pack_into(">h", bomb, 21, 4)
    tracemalloc.start()
    try:
        message = assert_refused(replicas, crc_fixed(bomb), ErrorCode.MESSAGE_TOO_LARGE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20
    assert "inflate past max.message.bytes=1048588" in message
