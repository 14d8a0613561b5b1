"""The `__transaction_state` records are Kafka's TransactionLog key/value v0 bytes: they
round-trip, match a layout built by hand from Kafka's schema, refuse bytes they do not
understand with a reason, and place ids as Kafka does."""

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.transaction.records import (
    EMPTY,
    ONGOING,
    PREPARE_COMMIT,
    STATUS_IDS,
    TransactionLogValue,
    TransactionRecordError,
    decode_record,
    encode_key,
    encode_record,
    encode_value,
    transaction_partition_for,
)
from clients.types import TopicPartition

TP = TopicPartition


def test_key_is_version_0_then_the_id_as_a_kafka_string():
    assert encode_key("tx-1") == b"\x00\x00" + b"\x00\x04tx-1"


def test_value_matches_kafkas_v0_layout():
    value = TransactionLogValue(
        1234, 7, 60_000, PREPARE_COMMIT, frozenset({TP("b", 1), TP("a", 2), TP("a", 0)}), 1_000, 900
    )
    expected = (
        struct.pack(">hqhib", 0, 1234, 7, 60_000, 2)
        + struct.pack(">i", 2)  # two topics
        + struct.pack(">h", 1)
        + b"a"
        + struct.pack(">iii", 2, 0, 2)
        + struct.pack(">h", 1)
        + b"b"
        + struct.pack(">ii", 1, 1)
        + struct.pack(">qq", 1_000, 900)
    )
    assert encode_value(value) == expected


def test_empty_writes_a_null_partition_array_as_kafka():
    value = TransactionLogValue(5, 0, 60_000, EMPTY, frozenset(), 10, -1)
    assert encode_value(value)[17:21] == struct.pack(">i", -1)
    assert decode_record(*encode_record("t", value)) == ("t", value)


def test_a_tombstone_is_a_null_value():
    key, value = encode_record("t", None)
    assert value is None and decode_record(key, value) == ("t", None)


partitions = st.frozensets(
    st.builds(TP, st.text(min_size=1, max_size=20), st.integers(0, 2**31 - 1)), max_size=6
)


@given(
    st.text(max_size=40),
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**15 - 1),
    st.integers(1, 2**31 - 1),
    st.sampled_from(sorted(STATUS_IDS)),
    partitions,
    st.integers(-1, 2**62),
    st.integers(-1, 2**62),
)
def test_round_trip(txn_id, pid, epoch, timeout, state, parts, updated, started):
    parts = frozenset() if state == EMPTY else parts
    value = TransactionLogValue(pid, epoch, timeout, state, parts, updated, started)
    assert decode_record(*encode_record(txn_id, value)) == (txn_id, value)


@pytest.mark.parametrize(
    "key, value, match",
    [
        (b"\x00\x01\x00\x01t", None, "key version 1"),
        (b"\x00", None, "ends early"),
        (b"\x00\x00\x00\x09ab", None, "bad string length"),
        (encode_key("t"), b"\x00\x01" + bytes(30), "value version 1"),
        (
            encode_key("t"),
            struct.pack(">hqhib", 0, 1, 0, 1, 9) + bytes(20),
            "unknown transaction status 9",
        ),
        (encode_key("t"), struct.pack(">hqhibi", 0, 1, 0, 1, 1, 1 << 30), "impossible"),
        (encode_key("t"), struct.pack(">hqhib", 0, 1, 0, 1, 1), "ends early"),
    ],
)
def test_unreadable_records_are_refused_with_a_reason(key, value, match):
    with pytest.raises(TransactionRecordError, match=match):
        decode_record(key, value)


def test_an_id_too_long_for_a_kafka_string_is_refused():
    with pytest.raises(TransactionRecordError, match="too long"):
        encode_key("x" * 40_000)


def test_ids_are_placed_like_groups_with_javas_string_hash():
    # "tx".hashCode() in Java is 116 * 31 + 120 = 3716; 3716 % 50 == 16.
    assert transaction_partition_for("tx", 50) == 16
    assert {transaction_partition_for(f"id-{i}", 50) for i in range(500)} == set(range(50))
    assert ONGOING in STATUS_IDS
