"""Our batches against kafka-python's independent v2 implementation, both ways: its builder's
batches decode with ours, ours pass its CRC check and decode with its reader."""

import random

import kafka.codec
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka_python_snappy import give_kafka_python_snappy

from clients.record.codec import Record, decode_batch, decode_records, encode_batch
from clients.record.compression import SNAPPY, compress, decompress

CODECS = [0, 1, 2, 3, 4]


@pytest.fixture(autouse=True)
def kafka_python_snappy(monkeypatch):
    give_kafka_python_snappy(monkeypatch)


BASE_TS = 1_700_000_000_000


def sample_records(seed: int, shape: str):
    rng = random.Random(seed)
    out = []
    for i in range(rng.randrange(1, 120)):
        # Repetitive values so kafka-python's builder keeps the compression (it drops it if
        # compression does not shrink the batch).
        value = (b"payload-%d-" % (i % 7)) * rng.randrange(0, 40)
        if shape == "bare":
            key, headers = None, []
        elif shape == "keys":
            key, headers = b"key-%d" % rng.randrange(10**6), []
        else:
            key = rng.choice([None, b"", b"k%d" % i])
            value = rng.choice([None, b"", value])
            headers = [
                ("trace-ü%d" % j, rng.choice([None, b"", b"h" * rng.randrange(300)]))
                for j in range(rng.randrange(0, 4))
            ]
        out.append((key, value, headers, BASE_TS + rng.randrange(-5000, 5000) * (i > 0)))
    return out


def build_with_kafka_python(records, codec, producer=(-1, -1, -1)):
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=10**8,
    )
    for i, (key, value, headers, ts) in enumerate(records):
        assert builder.append(i, ts, key, value, headers) is not None
    return bytes(builder.build())


def as_tuples(records):
    return [
        (r.offset, r.timestamp, r.key, r.value, tuple(tuple(h) for h in r.headers)) for r in records
    ]


def expected(records):
    return [
        (i, ts, k, v, tuple(tuple(h) for h in headers))
        for i, (k, v, headers, ts) in enumerate(records)
    ]


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("shape", ["bare", "keys", "mixed"])
@pytest.mark.parametrize("seed", range(4))
def test_theirs_decoded_by_ours(codec, shape, seed):
    records = sample_records(seed, shape)
    batch = build_with_kafka_python(records, codec, producer=(77, 2, 1000))
    header, decoded = decode_batch(batch)
    assert header.compression == codec
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 2, 1000)
    assert header.max_timestamp == max(ts for *_, ts in records)
    assert as_tuples(decoded) == expected(records)
    assert decode_records(batch) == decoded


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("shape", ["bare", "keys", "mixed"])
@pytest.mark.parametrize("seed", range(4))
def test_ours_decoded_by_theirs(codec, shape, seed):
    records = sample_records(seed, shape)
    batch = encode_batch(
        records, compression=codec, base_offset=0, producer_id=5, producer_epoch=1, base_sequence=0
    )
    theirs = DefaultRecordBatch(batch)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (5, 1, 0)
    assert theirs.last_offset_delta == len(records) - 1
    assert theirs.max_timestamp == max(ts for *_, ts in records)
    assert as_tuples(theirs) == expected(records)


@pytest.mark.parametrize("codec", CODECS)
def test_several_batches_through_memory_records(codec):
    parts = [
        encode_batch(sample_records(seed, "mixed"), compression=codec, base_offset=1000 * seed)
        for seed in range(3)
    ]
    reader = MemoryRecords(b"".join(parts) + parts[0][:30])  # plus a cut-off batch at the end
    seen = []
    while reader.has_next():
        batch = reader.next_batch()
        assert batch.validate_crc()
        seen.extend(as_tuples(batch))
    ours = decode_records(b"".join(parts) + parts[0][:30])
    assert seen == as_tuples(ours)
    assert [r.offset // 1000 for r in ours] == sorted(r.offset // 1000 for r in ours)
    assert isinstance(ours[0], Record)


def test_identical_bytes_for_uncompressed_batches():
    # The v2 layout leaves no freedom when uncompressed: both encoders must agree byte for byte
    # (kafka-python leaves partitionLeaderEpoch at 0 where a producer sends -1).
    records = sample_records(1, "mixed")
    assert encode_batch(records, partition_leader_epoch=0) == build_with_kafka_python(records, 0)


def test_snappy_framed_as_javas_producer_and_raw_as_librdkafka():
    payload = b"".join(b'{"order": %d, "status": "paid"}' % i for i in range(5000))  # 3 blocks
    ours = compress(SNAPPY, payload)
    # snappy-java's stream header (magic, version 1, compatible 1), then 32 KiB blocks: the same
    # bytes as kafka-python's xerial writer over the same raw compressor.
    assert ours[:16] == b"\x82SNAPPY\x00" + (1).to_bytes(4, "big") + (1).to_bytes(4, "big")
    assert ours == kafka.codec.snappy_encode(payload)
    assert kafka.codec.snappy_decode(ours) == payload
    for xerial in (True, False):
        assert (
            decompress(SNAPPY, kafka.codec.snappy_encode(payload, xerial_compatible=xerial))
            == payload
        )
