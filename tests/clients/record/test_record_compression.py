"""Each codec round-trips, names map to Kafka's codec numbers with helpful errors, and bad
compressed data becomes CorruptBatchError."""

import os

import pytest
import zstandard

from clients.record import compression
from clients.record.batch_header import CorruptBatchError

CODECS = [compression.NONE, compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
PAYLOAD = b"".join(b'{"order": %d, "status": "paid"}' % i for i in range(2000)) + os.urandom(500)


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec):
    packed = compression.compress(codec, PAYLOAD)
    assert compression.decompress(codec, packed) == PAYLOAD
    if codec != compression.NONE:
        assert len(packed) < len(PAYLOAD) / 3


@pytest.mark.parametrize("codec", CODECS)
def test_empty_payload(codec):
    assert compression.decompress(codec, compression.compress(codec, b"")) == b""


@pytest.mark.parametrize(
    "name, codec", [("none", 0), ("gzip", 1), ("Snappy", 2), ("LZ4", 3), ("Zstd", 4)]
)
def test_codec_from_name(name, codec):
    assert compression.codec_from_name(name) == codec


def test_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError, match="'brotli'.*none, gzip, snappy, lz4, zstd"):
        compression.codec_from_name("brotli")


def test_zstd_frame_without_content_size():
    # Kafka's Java producer streams zstd, so its frames carry no decompressed size.
    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    frame = cobj.compress(PAYLOAD) + cobj.flush()
    assert compression.decompress(compression.ZSTD, frame) == PAYLOAD


@pytest.mark.parametrize(
    "codec", [compression.GZIP, compression.SNAPPY, compression.LZ4, compression.ZSTD]
)
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_bad_data_is_corrupt(codec, damage):
    packed = compression.compress(codec, PAYLOAD)
    data = b"not compressed at all" if damage == "garbage" else packed[: len(packed) // 2]
    with pytest.raises(CorruptBatchError):
        compression.decompress(codec, data)


@pytest.mark.parametrize("codec", [5, 7])
def test_unsupported_codec_is_corrupt(codec):
    with pytest.raises(CorruptBatchError, match="unsupported compression codec"):
        compression.decompress(codec, b"whatever")
