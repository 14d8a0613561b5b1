"""The `__consumer_offsets` records round-trip, keep one key's bytes stable (compaction), refuse
bytes they do not understand, and place groups as Kafka does (Java's String.hashCode)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.coordinator.placement import java_string_hash, partition_for
from broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecordError,
    decode_record,
    encode_key,
    encode_record,
    find_coordinator,
)

MEMBER = MemberMetadataValue("m-1", "i-1", "client", "/10.0.0.1", 30_000, 10_000, b"sub", b"asg")
RECORDS = [
    (OffsetCommitKey("g", "orders", 3), OffsetCommitValue(42, 5, "meta", 1_700_000_000_000)),
    (OffsetCommitKey("g", "orders", 3), None),
    (GroupMetadataKey("g"), GroupMetadataValue("consumer", 7, "range", "m-1", 123, (MEMBER,))),
    (GroupMetadataKey("g"), GroupMetadataValue("consumer", 8, None, None, 124)),
    (GroupMetadataKey("g"), None),
]


@pytest.mark.parametrize("key, value", RECORDS)
def test_round_trip(key, value):
    k, v = encode_record(key, value)
    assert decode_record(k, v) == (key, value)
    assert (v is None) == (value is None)  # a tombstone is a null value


def test_one_key_always_has_the_same_bytes_and_different_keys_differ():
    assert encode_key(OffsetCommitKey("g", "t", 0)) == encode_key(OffsetCommitKey("g", "t", 0))
    keys = {
        encode_key(k)
        for k in (
            OffsetCommitKey("g", "t", 0),
            OffsetCommitKey("g", "t", 1),
            OffsetCommitKey("h", "t", 0),
            GroupMetadataKey("g"),
        )
    }
    assert len(keys) == 4


@pytest.mark.parametrize("key", [b"\xc1", b"\x93\x07\xa1g\x00", b"\x91\x02"])
def test_unreadable_or_unknown_keys_are_refused_with_a_reason(key):
    with pytest.raises(OffsetsRecordError, match="__consumer_offsets key"):
        decode_record(key, b"")


def test_unreadable_value_is_refused():
    k, _ = encode_record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(1))
    with pytest.raises(OffsetsRecordError, match="unreadable __consumer_offsets value"):
        decode_record(k, b"\x80")  # an empty map: no offset


@pytest.mark.parametrize(
    "s, expected",
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),  # Integer.MIN_VALUE
        ("console-consumer-12345", None),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # a surrogate pair: two UTF-16 units
    ],
)
def test_java_string_hash(s, expected):
    h = java_string_hash(s)
    if expected is None:  # compare with the definition itself
        expected = 0
        for ch in s:
            expected = (31 * expected + ord(ch)) % 2**32
        expected = expected - 2**32 if expected >= 2**31 else expected
    assert h == expected


def test_partition_for_matches_kafka_utils_abs():
    assert partition_for("polygenelubricants", 50) == 0  # abs(MIN_VALUE) is 0 in Kafka
    assert partition_for("hello", 50) == 99162322 % 50
    assert partition_for("Aa", 7) == partition_for("BB", 7)


@given(st.text(), st.integers(1, 200))
def test_partition_for_is_in_range_and_stable(group, n):
    p = partition_for(group, n)
    assert 0 <= p < n and p == partition_for(group, n)


def test_find_coordinator():
    leaders = {partition_for("g", 10): 3}
    assert find_coordinator("g", 10, leaders.get) == (partition_for("g", 10), 3)
    assert find_coordinator("g", 10, lambda p: -1)[1] is None  # no leader: not available
