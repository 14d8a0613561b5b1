"""End-transaction markers: our encoding read back by us and by kafka-python (a Kafka
implementation no one here wrote)."""

import pytest
from kafka.record.default_records import DefaultRecordBatch

from clients.record.batch_header import CorruptBatchError
from clients.record.codec import decode_batch
from clients.record.control import decode_marker, encode_marker_batch


@pytest.mark.parametrize("committed", [True, False])
def test_a_marker_batch_round_trips(committed):
    raw = encode_marker_batch(
        producer_id=7,
        producer_epoch=3,
        committed=committed,
        coordinator_epoch=11,
        timestamp_ms=1_700_000_000_000,
    )
    header, records = decode_batch(raw)
    assert header.is_control and header.is_transactional
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, -1)
    [record] = records
    assert decode_marker(record.key, record.value) == (committed, 11)


@pytest.mark.parametrize("committed", [True, False])
def test_kafka_python_reads_our_marker(committed):
    raw = encode_marker_batch(
        producer_id=42,
        producer_epoch=1,
        committed=committed,
        coordinator_epoch=5,
        timestamp_ms=1_700_000_000_000,
    )
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch) == (42, 1)
    [record] = list(batch)
    # Kafka's ControlRecordType: key (version int16, type int16), 1 = COMMIT.
    assert record.key == (b"\x00\x00\x00\x01" if committed else b"\x00\x00\x00\x00")
    assert record.value == b"\x00\x00\x00\x00\x00\x05"


@pytest.mark.parametrize(
    "key, value, problem",
    [
        (None, b"\x00" * 6, "key of 0 bytes"),
        (b"\x00\x00\x00\x07", b"\x00" * 6, "control record type 7"),
        (b"\x00\x00\x00\x01", b"\x00", "value of 1 bytes"),
    ],
)
def test_a_malformed_marker_is_named(key, value, problem):
    with pytest.raises(CorruptBatchError, match=problem):
        decode_marker(key, value)
