"""The leader's validator against kafka-python, an independent writer of record batch v2: its
batches pass in every codec it writes (keys, values, headers present or not), and the same
batches with a record dropped, a count that lies or a cut section (CRC made right) do not."""

import random
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka_python_snappy import give_kafka_python_snappy
from kraft_log_helpers import with_crc

from clients.errors import ErrorCode, KraftError
from clients.record.compression import compress, decompress
from kraft.log.log import Log
from kraft.log.log_config import LogConfig
from kraft.log.log_validator import validate_records

CODECS = [0, 1, 2, 3, 4]  # none, gzip, snappy (xerial, as Java writes it), lz4, zstd


@pytest.fixture(autouse=True)
def kafka_python_snappy(monkeypatch):
    give_kafka_python_snappy(monkeypatch)


NOW = 1_700_000_000_000


def kafka_python_batch(seed: int, codec: int, keyed: bool) -> bytes:
    rng = random.Random(seed)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
        batch_size=10**8,
    )
    for i in range(rng.randrange(1, 200)):
        key = b"key-%d" % rng.randrange(50) if keyed or rng.random() < 0.5 else None
        value = rng.choice([None, b"", (b"value-%d " % (i % 9)) * rng.randrange(1, 30)])
        headers = [
            ("h-é%d" % j, rng.choice([None, b"x" * rng.randrange(20)]))
            for j in range(rng.randrange(3))
        ]
        assert builder.append(i, NOW + rng.randrange(-5_000, 5_000), key, value, headers)
    return bytes(builder.build())


def section_of(batch: bytes) -> tuple[int, bytes]:
    codec = batch[22] & 7
    body = batch[61:]
    return codec, decompress(codec, body) if codec else body


def with_section(batch: bytes, section: bytes, codec: int) -> bytes:
    body = compress(codec, section) if codec else section
    head = bytearray(batch[:61])
    struct.pack_into(">i", head, 8, 49 + len(body))
    return with_crc(bytes(head) + body)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("compacted", [False, True])
def test_kafka_python_batches_are_appended(tmp_path, codec, seed, compacted):
    config = LogConfig(cleanup_policy="compact" if compacted else "delete")
    log = Log.open(tmp_path / "t-0", config, now_ms=NOW)
    batch = kafka_python_batch(seed, codec, keyed=compacted)
    assert batch[22] & 7 == codec
    info = log.append_as_leader(batch, 0, now_ms=NOW)
    assert info.last_offset + 1 == struct.unpack_from(">i", batch, 57)[0]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_batches_edited_are_refused(codec):
    batch = kafka_python_batch(7, codec, keyed=False)
    assert batch[22] & 7 == codec
    _, section = section_of(batch)
    count = struct.unpack_from(">i", batch, 57)[0]
    first_length = section[0] >> 1 if section[0] < 0x80 else None
    lying = bytearray(batch)
    struct.pack_into(">i", lying, 23, count)  # lastOffsetDelta one more ...
    struct.pack_into(">i", lying, 57, count + 1)  # ... and recordsCount to match
    edited = {
        "count that lies": with_crc(lying),
        "section cut short": with_section(batch, section[:-3], codec),
        "a byte more": with_section(batch, section + b"\x00", codec),
    }
    if first_length is not None:
        edited["first record dropped"] = with_section(batch, section[1 + first_length :], codec)
    for what, bad in edited.items():
        with pytest.raises(KraftError) as err:
            validate_records(bytearray(bad), LogConfig(), "t-0", leader=True)
        assert err.value.code == ErrorCode.INVALID_RECORD, what
