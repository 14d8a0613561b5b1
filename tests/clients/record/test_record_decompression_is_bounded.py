"""Decompression never holds more than its bound: bombs in every codec fail fast in a few MiB,
with or without a declared content size, for the consumer's decode as for the broker; sections
within the bound, in one frame or several, still inflate exactly."""

import gzip
import os
import resource
import subprocess
import sys
import textwrap
import tracemalloc

import cramjam
import lz4.frame
import pytest
import zstandard

from clients.record.batch_header import CorruptBatchError
from clients.record.compression import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    DecompressedTooLarge,
    compress,
    decompress,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MiB = 1 << 20


def zstd_stream(data_size: int) -> bytes:
    """Zero bytes written as a stream: no content size in the frame header (Java's way)."""
    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    return b"".join(cobj.compress(bytes(MiB)) for _ in range(data_size // MiB)) + cobj.flush()


def bomb(codec: int, size: int) -> bytes:
    if codec == ZSTD:
        return zstd_stream(size)
    if codec == LZ4:
        return lz4.frame.compress(bytes(size), store_size=False)
    if codec == SNAPPY:
        return compress(SNAPPY, bytes(size))  # xerial: 32 KiB blocks, as Java writes them
    return gzip.compress(bytes(size), compresslevel=1)


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_a_bomb_fails_fast_within_the_bound(codec):
    data = bomb(codec, 128 * MiB)
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge, match="inflates past the bound"):
            decompress(codec, data, MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB


def test_a_raw_snappy_block_declaring_more_than_the_bound_is_refused_before_inflating():
    data = bytes(cramjam.snappy.compress_raw(bytes(64 * MiB)))  # librdkafka's: one raw block
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge):
            decompress(SNAPPY, data, MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB


def test_a_declared_zstd_content_size_over_the_bound_is_refused_before_inflating():
    data = zstandard.ZstdCompressor().compress(bytes(64 * MiB))  # the header says 64 MiB
    tracemalloc.start()
    try:
        with pytest.raises(DecompressedTooLarge):
            decompress(ZSTD, data, MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_exactly_the_bound_inflates_and_one_byte_more_does_not(codec):
    payload = os.urandom(1000) * 64
    if codec == SNAPPY:
        data = compress(SNAPPY, payload)
    elif codec == ZSTD:
        cobj = zstandard.ZstdCompressor().compressobj()  # no content size: the slow path
        data = cobj.compress(payload) + cobj.flush()
    else:
        data = gzip.compress(payload, mtime=0) if codec == GZIP else lz4.frame.compress(payload)
    assert decompress(codec, data, len(payload)) == payload
    with pytest.raises(DecompressedTooLarge):
        decompress(codec, data, len(payload) - 1)


@pytest.mark.parametrize(
    "codec, pack",
    [
        (GZIP, lambda b: gzip.compress(b, mtime=0)),
        (LZ4, lz4.frame.compress),
        (ZSTD, lambda b: zstandard.ZstdCompressor().compress(b)),
        (SNAPPY, lambda b: compress(SNAPPY, b)),  # xerial streams one after another
    ],
)
def test_frames_are_read_to_their_end_and_all_of_them(codec, pack):
    one, two = b"first " * 100, b"second " * 100
    assert decompress(codec, pack(one) + pack(two), MiB) == one + two
    with pytest.raises(DecompressedTooLarge):
        decompress(codec, pack(one) + pack(two), len(one) + len(two) - 1)
    with pytest.raises(CorruptBatchError, match="truncated|cannot decompress"):
        decompress(codec, pack(one)[:-3], MiB)
    with pytest.raises(CorruptBatchError, match="cannot decompress"):
        decompress(codec, pack(one) + b"trailing garbage", MiB)


def test_the_consumers_decode_survives_a_zstd_bomb_under_a_memory_limit(tmp_path):
    """A 2.6 GiB bomb in 80 KB through decode_records, the consumer's path, in a process whose
    address space is capped 512 MiB above what it starts with: without a bound it dies of
    MemoryError (or worse); with one it reports a corrupt batch at once."""
    section = zstd_stream(2600 * MiB)
    path = tmp_path / "bomb.zst"
    path.write_bytes(section)
    script = textwrap.dedent(f"""
        import resource, struct
        import google_crc32c
        from clients.record.batch_header import HEADER, CorruptBatchError
        from clients.record.codec import decode_records
        section = open({str(path)!r}, "rb").read()
        tail = HEADER.pack(0, 49 + len(section), -1, 2, 0, 4, 0, 0, 0, -1, -1, -1, 1) + section
        batch = bytearray(tail)
        struct.pack_into(">I", batch, 17, google_crc32c.value(bytes(batch[21:])))
        with open("/proc/self/statm") as f:
            vm = int(f.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (vm + (512 << 20), resource.RLIM_INFINITY))
        try:
            decode_records(bytes(batch))
        except CorruptBatchError as exc:
            print("refused:", exc)
    """)
    run = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ROOT},
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "refused: the records section inflates past the bound" in run.stdout
    assert resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY  # ours untouched


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_a_small_section_costs_small_memory_under_a_large_bound(codec):
    """The bound caps memory; it is not what a small batch allocates (lz4 would allocate the
    whole of max_length at once if asked for it)."""
    data = {
        GZIP: lambda b: gzip.compress(b, mtime=0),
        LZ4: lz4.frame.compress,
        ZSTD: lambda b: zstandard.ZstdCompressor().compress(b),
        SNAPPY: lambda b: compress(SNAPPY, b),
    }[codec](b"x" * 16384)
    tracemalloc.start()
    try:
        assert len(decompress(codec, data, 64 * MiB)) == 16384
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB
