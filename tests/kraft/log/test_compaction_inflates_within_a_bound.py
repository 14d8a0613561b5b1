"""The cleaner inflates each compressed batch to a bound (max.message.bytes, at least the clients'
64 MiB): a zstd bomb that reached a compacted log (a follower stores its leader's bytes without
walking them) fails the cleaning fast in bounded memory, and the log is left as it was."""

import tracemalloc

import pytest
from compaction_helpers import append, compact, compact_config, open_log, roll
from kraft_log_helpers import batch_with_section, read_all, zstd_bomb

from clients.record.compression import DecompressedTooLarge


def test_a_zstd_bomb_in_a_compacted_log_fails_the_cleaning_in_bounded_memory(tmp_path):
    log = open_log(tmp_path / "t-0", compact_config(segment_bytes=1 << 20))
    append(log, [(b"a", b"1"), (b"a", b"2")])
    bomb = bytearray(batch_with_section(zstd_bomb(256 << 20), codec=4))  # 8 KB -> 256 MiB
    bomb[:8] = log.log_end_offset.to_bytes(8, "big")  # baseOffset: outside the CRC
    log.append_as_follower(bytes(bomb))
    append(log, [(b"a", b"3")])
    roll(log)
    log.high_watermark = log.log_end_offset
    before = read_all(log)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge):
            compact(log)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert read_all(log) == before


def test_batches_within_the_bound_are_cleaned_in_every_codec(tmp_path):
    for codec in (1, 3, 4):
        log = open_log(tmp_path / f"c{codec}", compact_config(segment_bytes=1 << 20))
        append(
            log,
            [(b"k%d" % (i % 3), b"v" * 500) for i in range(30)],
            per_batch=10,
            compression=codec,
        )
        roll(log)
        result = compact(log)
        assert (result.records_read, result.records_kept) == (30, 3)
