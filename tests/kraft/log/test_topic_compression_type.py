"""compression.type is honoured: the leader rewrites a batch in the topic's codec (keys, values,
headers, timestamps and producer fields kept) and 'producer' keeps the bytes as sent; a key
kraft does not implement takes only the value that describes what kraft does."""

from __future__ import annotations

import pytest

from clients.record.batch_header import parse_header
from clients.record.codec import decode_records, encode_batch
from kraft.log.log import Log
from kraft.log.log_config import ConfigError, LogConfig

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
RECORDS = [(b"k%d" % i, b"value %d " % i * 20, (("h", b"x"),), 1_000 + i) for i in range(50)]


def stored(log: Log) -> bytes:
    return log.read(0, 1 << 20).records


@pytest.mark.parametrize(
    "topic, sent, expected",
    [
        ("zstd", NONE, ZSTD),
        ("gzip", ZSTD, GZIP),
        ("lz4", GZIP, LZ4),
        ("uncompressed", ZSTD, NONE),
        ("producer", GZIP, GZIP),
        ("zstd", ZSTD, ZSTD),
        ("snappy", GZIP, SNAPPY),
        ("lz4", SNAPPY, LZ4),
    ],
)
def test_the_leader_stores_batches_in_the_topics_codec(tmp_path, topic, sent, expected):
    log = Log.open(tmp_path / "t-0", LogConfig(compression_type=topic), now_ms=0)
    batch = encode_batch(
        RECORDS, compression=sent, producer_id=7, producer_epoch=2, base_sequence=40
    )
    info = log.append_as_leader(batch, 3, now_ms=0)
    data = stored(log)
    header = parse_header(data)
    assert header.compression == expected
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert (header.partition_leader_epoch, header.records_count) == (3, 50)
    assert (info.first_offset, info.last_offset) == (0, 49)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in decode_records(data)] == RECORDS
    if topic == "producer" or sent == expected:  # kept as sent: the records section unchanged
        assert data[61:] == batch[61:]


def test_a_second_append_continues_the_offsets(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(compression_type="zstd"), now_ms=0)
    log.append_as_leader(encode_batch(RECORDS[:3]), 1, now_ms=0)
    info = log.append_as_leader(encode_batch(RECORDS[3:5], compression=GZIP), 1, now_ms=0)
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert [r.offset for r in decode_records(stored(log))] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize(
    "key, value, allowed",
    [
        ("compression.type", "brotli", "'gzip', 'snappy', 'lz4' or 'zstd'"),
        ("segment.jitter.ms", "100", "only 0: kraft applies no jitter"),
        ("file.delete.delay.ms", "60000", "only 0: kraft deletes segment files at once"),
        ("preallocate", "true", "only false"),
    ],
)
def test_settings_kraft_would_ignore_are_refused_with_what_it_does(key, value, allowed):
    with pytest.raises(ConfigError) as info:
        LogConfig.from_props({key: value})
    assert str(info.value).startswith(f"{key}: '{value}' is not valid") and allowed in str(
        info.value
    )
